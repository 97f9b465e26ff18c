#!/usr/bin/env python3
# runtests: cores 1
"""kvm_pagetype.ko against VMs a level-1 program makes itself, KVM
selftests style (tests/vm/kvm/pagetype-ops.c): the ABI, pin and unpin with
validation, legal trapped writes, bad writes and bad batches that kill
their VM and only it, a type count at its maximum, memslots taken away,
the VM closed before the attachment, and unloading refused while a VM is
attached, then allowed."""

from vmtest import boot, main
from pagetype import OPS_SCRIPT, check_ops, host


def test():
    check_ops(boot(host("pagetype-ops", OPS_SCRIPT, programs=["pagetype-ops"],
                        collect=["/tmp/global"]), timeout=600))


main(test)

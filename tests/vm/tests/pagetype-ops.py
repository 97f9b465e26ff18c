#!/usr/bin/env python3
"""kvm_pagetype.ko against VMs a level-1 program makes itself, KVM
selftests style (tests/vm/kvm/pagetype-ops.c): the ABI, pin and unpin with
validation, legal trapped writes, bad writes and bad batches that kill
their VM and only it, a type count at its maximum, memslots taken away,
the VM closed before the attachment, and unloading refused while a VM is
attached, then allowed."""

import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from vmtest import boot, check, main
from pagetype import host


def test():
    r = boot(host("pagetype-ops", """
pagetype-ops
cat /sys/kernel/debug/kvm_pagetype/global > /tmp/global
rmmod kvm_pagetype
test ! -e /dev/kvm-pagetype
insmod /lib/modules/extra/kvm_pagetype.ko
pagetype-ops abi
""", programs=["pagetype-ops"], collect=["/tmp/global"]), timeout=600)
    check(r.outcome == "pass", r.describe())
    out = r.text()
    for name in ("abi", "pin", "legal-writes", "kill-write", "batches",
                 "overflow", "memslots", "lifetimes", "modes", "doorbell",
                 "global"):
        check("ok " + name in out, "test %s did not pass" % name)
    dmesg = r.dmesg.decode(errors="replace")
    for why in ("a trapped write broke a rule", "malformed batch",
                "memslot holding a pinned table removed"):
        check("killed: " + why in dmesg, "no kill logged for: " + why)
    stats = dict(line.split() for line in
                 r.files["global"].decode().splitlines())
    check(int(stats["vms"]) == 0, "VMs still attached: " + stats["vms"])
    check(int(stats["pinned_l4"]) == 0, "tables of gone VMs counted")
    check(int(stats["kills"]) >= 16, "kills: " + stats["kills"])
    print("global after the run: " + ", ".join(
        "%s %s" % (k, stats[k]) for k in ("batches", "validations",
                                          "writes", "violations", "kills")))


main(test)

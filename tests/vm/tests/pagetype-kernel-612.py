#!/usr/bin/env python3
"""kvm_pagetype.ko on Debian's other kernel: 6.12, from bookworm-backports,
whose page-track API changed in 6.7 (tracking by gfn, a notifier without
the vCPU, track_remove_region).  make dkms-source-pagetype, dkms add and
dkms build against the 6.12 headers; a level 1 booted on 6.12 loads that
module.  The platform fact is checked again on this kernel, nested in
QEMU's emulated SVM: where 6.1 loops (pagetype-npt), a load through a
write-tracked page table completes on 6.12 with kvm_amd npt=1.  That is
not enough to run the module there: pagetype-ops at npt=1 passes its pin
tests and then never finishes its first guest store to a pinned table
(docs/pagetype.md), so the whole of pagetype-ops runs with npt=0, as
pagetype-ops.py does on 6.1."""

import os
import shutil
import tempfile
from vmtest import Kernel, boot, check, main
from dkms import dkms_build
from pagetype import OPS_SCRIPT, check_ops, host

NPT_SCRIPT = """
test "$(cat /sys/module/kvm_amd/parameters/npt)" = Y
echo "== npt=1"
pagetype-npt runs
reload_kvm_amd npt=0
test "$(cat /sys/module/kvm_amd/parameters/npt)" = N
echo "== npt=0"
"""


def test():
    kernel = Kernel(os.environ["SIVSHM_KERNEL_BACKPORTS"])
    check(kernel.kver.startswith("6.12."), "not a 6.12 kernel: " + kernel.kver)
    tmp = tempfile.mkdtemp(prefix="dkms-")
    built = dkms_build("kvm-pagetype", "dkms-source-pagetype",
                       "kvm_pagetype", tmp, kernel=kernel)
    r = boot(host("pagetype-612", "uname -r\n" + NPT_SCRIPT + OPS_SCRIPT,
                  programs=["pagetype-ops", "pagetype-npt"],
                  collect=["/tmp/global"], module_path=built, kernel=kernel,
                  npt=1), timeout=600)
    shutil.rmtree(tmp)
    check_ops(r)
    check(kernel.kver in r.text(), "level 1 did not run " + kernel.kver)
    check("tracked: the load completed" in r.text().split("== npt=0")[0],
          "npt=1 on %s did not run the tracked load" % kernel.kver)
    print("on " + kernel.kver + ": npt=1 runs a load through a tracked "
          "table (6.1 loops); pagetype-ops passes with npt=0")


main(test)

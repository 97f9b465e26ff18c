#!/usr/bin/env python3
"""kvm_pagetype.ko on Debian's other kernel: 6.12, from bookworm-backports,
whose page-track API changed in 6.7 (tracking by gfn, a notifier without
the vCPU, track_remove_region).  make dkms-source-pagetype, dkms add and
dkms build against the 6.12 headers; a level 1 booted on 6.12 loads that
module and runs the whole of pagetype-ops, as pagetype-ops.py does on
6.1."""

import os
import shutil
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from vmtest import Kernel, boot, check, main
from dkms import dkms_build
from pagetype import OPS_SCRIPT, check_ops, host


def test():
    kernel = Kernel(os.environ["SIVSHM_KERNEL_BACKPORTS"])
    check(kernel.kver.startswith("6.12."), "not a 6.12 kernel: " + kernel.kver)
    tmp = tempfile.mkdtemp(prefix="dkms-")
    built = dkms_build("kvm-pagetype", "dkms-source-pagetype",
                       "kvm_pagetype", tmp, kernel=kernel)
    r = boot(host("pagetype-612", "uname -r\n" + OPS_SCRIPT,
                  programs=["pagetype-ops"], collect=["/tmp/global"],
                  module_path=built, kernel=kernel), timeout=600)
    shutil.rmtree(tmp)
    check_ops(r)
    check(kernel.kver in r.text(), "level 1 did not run " + kernel.kver)
    print("on " + kernel.kver)


main(test)

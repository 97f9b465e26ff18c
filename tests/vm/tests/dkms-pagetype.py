#!/usr/bin/env python3
# runtests: cores 1.5
"""The host module as operators install it: make dkms-source-pagetype,
dkms add and dkms build against the fetched kernel's headers; the module
DKMS built loads in a level-1 host and serves a VM (pagetype-ops abi,
pin)."""

import shutil
import tempfile
from vmtest import boot, check, main
from pagetype import host
from dkms import dkms_build


def test():
    tmp = tempfile.mkdtemp(prefix="dkms-")
    built = dkms_build("kvm-pagetype", "dkms-source-pagetype",
                       "kvm_pagetype", tmp)
    g = host("dkms-pagetype", "pagetype-ops abi pin\n",
             programs=["pagetype-ops"])
    g.modules = [built]
    r = boot(g, timeout=180)
    shutil.rmtree(tmp)
    check(r.outcome == "pass", r.describe() + "\n" + r.text())
    check("ok abi" in r.text() and "ok pin" in r.text(), r.text())
    print("dkms-built kvm_pagetype.ko served a VM: " +
          " ".join(r.text().split()))


main(test)

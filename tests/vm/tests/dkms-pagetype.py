#!/usr/bin/env python3
"""The host module as operators install it: make dkms-source-pagetype,
dkms add and dkms build against the fetched kernel's headers; the module
DKMS built loads in a level-1 host and serves a VM (pagetype-ops abi,
pin)."""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from vmtest import Kernel, boot, builddir, check, main, skip
from pagetype import host


def sh(*argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    check(p.returncode == 0, "%s failed:\n%s%s" % (" ".join(argv), p.stdout,
                                                   p.stderr))
    return p.stdout


def test():
    if not shutil.which("dkms") or os.geteuid() != 0:
        if os.environ.get("CI"):
            check(False, "dkms and root are needed (scripts/setup.sh)")
        skip("needs dkms (scripts/setup.sh) and root")
    kernel = Kernel()
    with open(os.path.join(kernel.path, "KDIR")) as f:
        kdir = f.read().strip()
    version = "0.0test%d" % os.getpid()
    src = "/usr/src/kvm-pagetype-" + version
    tmp = tempfile.mkdtemp(prefix="dkms-")
    try:
        sh("make", "-C", builddir(), "dkms-source-pagetype",
           "DESTDIR=" + tmp, "DKMS_VERSION=" + version)
        shutil.copytree(tmp + src, src)
        sh("dkms", "add", "-m", "kvm-pagetype", "-v", version)
        sh("dkms", "build", "-m", "kvm-pagetype", "-v", version,
           "-k", kernel.kver, "--kernelsourcedir", kdir)
        ko = glob.glob("/var/lib/dkms/kvm-pagetype/%s/%s/*/module/"
                       "kvm_pagetype.ko*" % (version, kernel.kver))
        check(ko, "dkms built no kvm_pagetype.ko")
        os.makedirs(os.path.join(tmp, "dkms"))
        built = os.path.join(tmp, "dkms", "kvm_pagetype.ko")
        shutil.copy(ko[0], built)
    finally:
        subprocess.run(["dkms", "remove", "-m", "kvm-pagetype", "-v",
                        version, "--all"], capture_output=True)
        shutil.rmtree(src, ignore_errors=True)
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

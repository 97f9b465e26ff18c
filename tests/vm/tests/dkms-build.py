#!/usr/bin/env python3
"""The guest driver as users install it: make dkms-source, dkms add and
dkms build against the fetched kernel's headers; the module DKMS built
loads in a guest and binds the sivshm device."""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from vmtest import Guest, Kernel, boot, builddir, check, main, skip


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
    src = "/usr/src/sivshm-" + version
    tmp = tempfile.mkdtemp(prefix="dkms-")
    try:
        sh("make", "-C", builddir(), "dkms-source", "DESTDIR=" + tmp,
           "DKMS_VERSION=" + version)
        shutil.copytree(tmp + src, src)
        sh("dkms", "add", "-m", "sivshm", "-v", version)
        sh("dkms", "build", "-m", "sivshm", "-v", version, "-k", kernel.kver,
           "--kernelsourcedir", kdir)
        ko = glob.glob("/var/lib/dkms/sivshm/%s/%s/*/module/sivshm.ko*"
                       % (version, kernel.kver))
        check(ko, "dkms built no sivshm.ko")
        built = os.path.join(tmp, "sivshm.ko")
        shutil.copy(ko[0], built)
    finally:
        subprocess.run(["dkms", "remove", "-m", "sivshm", "-v", version,
                        "--all"], capture_output=True)
        shutil.rmtree(src, ignore_errors=True)
    sock = os.path.join(tmp, "s.sock")
    r = boot(Guest("dkms-build", """
insmod /lib/modules/extra/sivshm.ko
test -c /dev/sivshm0
dmesg | grep 'sivshm0: id 0'
""", modules=[built], qemu_args=[
        "-device", "sivshm,vm-id=0,shm=dkms%d,socket=%s,size=8M,reducers=1"
        % (os.getpid(), sock)]), timeout=120)
    shutil.rmtree(tmp)
    check(r.outcome == "pass", r.describe() + "\n" + r.text())
    print("dkms-built sivshm.ko bound the device: " + r.text().strip())


main(test)

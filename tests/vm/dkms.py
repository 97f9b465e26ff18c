"""Build one of our modules the way users install it: its make target lays
out the DKMS source package, then dkms add, dkms build against the fetched
kernel's headers, and dkms remove.  Used by the dkms-* VM tests."""

import glob
import os
import shutil
import subprocess

from vmtest import Kernel, builddir, check, skip


def _sh(*argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    check(p.returncode == 0, "%s failed:\n%s%s" % (" ".join(argv), p.stdout,
                                                   p.stderr))
    return p.stdout


def dkms_build(package, make_target, module, outdir, kernel=None):
    """Build package's module with dkms for @kernel (the fetched default
    one if None); copy it into outdir and return its path there.  With a
    list of modules, return the list of their paths.  Skips (fails under
    CI) without dkms or root."""
    if not shutil.which("dkms") or os.geteuid() != 0:
        if os.environ.get("CI"):
            check(False, "dkms and root are needed (scripts/setup.sh)")
        skip("needs dkms (scripts/setup.sh) and root")
    kernel = kernel or Kernel()
    with open(os.path.join(kernel.path, "KDIR")) as f:
        kdir = f.read().strip()
    version = "0.0test%d" % os.getpid()
    src = "/usr/src/%s-%s" % (package, version)
    stage = os.path.join(outdir, "stage")
    try:
        _sh("make", "-C", builddir(), make_target, "DESTDIR=" + stage,
            "DKMS_VERSION=" + version)
        shutil.copytree(stage + src, src)
        _sh("dkms", "add", "-m", package, "-v", version)
        _sh("dkms", "build", "-m", package, "-v", version,
            "-k", kernel.kver, "--kernelsourcedir", kdir)
        built = []
        for m in [module] if isinstance(module, str) else module:
            ko = glob.glob("/var/lib/dkms/%s/%s/%s/*/module/%s.ko*"
                           % (package, version, kernel.kver, m))
            check(ko, "dkms built no %s.ko" % m)
            built.append(os.path.join(outdir, m + ".ko"))
            shutil.copy(ko[0], built[-1])
        return built[0] if isinstance(module, str) else built
    finally:
        subprocess.run(["dkms", "remove", "-m", package, "-v", version,
                        "--all"], capture_output=True)
        shutil.rmtree(src, ignore_errors=True)
        shutil.rmtree(stage, ignore_errors=True)

#!/usr/bin/env python3
"""libvirt-domains under Debian 13's libvirt 11.3: the same test,
libvirt-domains.py, run chrooted in an overlay of the Debian 13 root
(tests/release/root-run.sh: the root root-check.sh uses, made with
debootstrap and scripts/setup.sh if it is not cached).  libvirtd,
virtlogd, virsh and virt-xml-validate are the root's, 11.3; our QEMU, the
hook, sivshm-virt-xml, the guests' kernel and programs are this build's,
built on the host: the build tree, the source tree and the cache the build
tree's links lead into are bound at their own paths.  The inner test
requires the daemon it started to be 11.3.

The root's namespaces end with the run, and with them libvirtd, its
QEMUs, the hook installed in the root's /etc and whatever the run wrote in
the overlay.  What the inner test changes outside the root is /dev/kvm's
owner and mode (the device is the host's): it restores them itself, and
this test restores them again in case the namespaces ended first (a
timeout kills everything in them at once)."""

import os
import shutil
import signal
import stat
import subprocess
import sys
from vmtest import check, env_path, main, skip

SUITE = "trixie"
LIBVIRT = "11.3"        # Debian 13's
HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
ROOT_RUN = os.path.join(SRCDIR, "tests", "release", "root-run.sh")
INNER = os.path.join(HERE, "libvirt-domains.py")
# What the inner test reads from its environment (vmtest.env, runtests.py).
PASS_ENV = ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")


def cache_dir():
    """scripts/cache-dir.sh's answer for root."""
    return os.environ.get("SIVSHM_CACHE") or "/var/cache/sivshm-kvm"


def inside(path, dirs):
    return any(os.path.commonpath([path, d]) == d for d in dirs)


def binds():
    """The directories the inner test reads: the build tree, the source
    tree, the cache; none inside another."""
    dirs = []
    for d in sorted({os.path.realpath(env_path("SIVSHM_BUILDDIR",
                                               "the build tree")),
                     os.path.realpath(SRCDIR),
                     os.path.realpath(cache_dir())}, key=len):
        if not inside(d, dirs):
            dirs.append(d)
    for var, what in (("SIVSHM_QEMU", "our qemu-system-x86_64"),
                      ("SIVSHM_KERNEL", "the fetched kernel")):
        p = os.path.realpath(env_path(var, what))
        check(inside(p, dirs), "%s (%s) is %s, outside %s: the root would "
              "not see it" % (var, what, p, " ".join(dirs)))
    for d in dirs:
        check("\n" not in d, "%r holds a newline" % d)
    return dirs


def kvm_state():
    try:
        st = os.stat("/dev/kvm")
    except FileNotFoundError:
        return None
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


def restore_kvm(was):
    if was and kvm_state() != was:
        uid, gid, mode = was
        os.chown("/dev/kvm", uid, gid)
        os.chmod("/dev/kvm", mode)
        print("/dev/kvm's owner and mode restored (%d:%d mode %04o)"
              % was, flush=True)


class Terminated(Exception):
    pass


def terminated(signo, frame):
    raise Terminated()


def test():
    if os.geteuid() != 0:
        skip("needs root: it chroots into a Debian 13 root, starts libvirtd "
             "there and sets /dev/kvm's group and mode")
    missing = [p for p in ("debootstrap", "unshare", "setpriv")
               if not shutil.which(p)]
    if missing:
        skip("%s not installed (apt-get install debootstrap util-linux)"
             % ", ".join(missing))
    dirs = binds()
    env = ["%s=%s" % (k, v) for k, v in sorted(os.environ.items())
           if k.startswith("SIVSHM_") or k in PASS_ENV]
    env.append("SIVSHM_LIBVIRT_VERSION=" + LIBVIRT)
    argv = [ROOT_RUN, SUITE, "\n".join(dirs),
            "/usr/bin/env"] + env + ["python3", INNER]
    print("in the %s root, bound: %s" % (SUITE, ", ".join(dirs)), flush=True)

    was = kvm_state()
    # The runner's SIGTERM at a timeout reaches root-run.sh too (one
    # process group), which ends the root's namespaces; this test waits
    # for it and then puts /dev/kvm back.
    signal.signal(signal.SIGTERM, terminated)
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    try:
        rc = p.wait()
    except Terminated:
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        rc = 1
    finally:
        restore_kvm(was)
    sys.stdout.flush()
    if rc == 77:
        sys.exit(77)
    check(rc == 0, "libvirt-domains in the %s root: exit status %d"
          % (SUITE, rc))


main(test)

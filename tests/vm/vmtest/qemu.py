"""Our QEMU on the host: the accelerator, the firmware and libraries it
needs, and Running, one booted guest's QEMU process.  No guest outlives
the test that started it."""

import atexit
import os
import re
import shlex
import signal
import subprocess
import sys
import time

from .env import env_path, log
from .result import FAIL, HarnessError, Result

# Where Debian puts the firmware our QEMU is built to look in
# (qemu-sivshm/build.sh: --firmwarepath).
FIRMWARE_DIRS = ("/usr/share/qemu", "/usr/share/seabios")
FIRMWARE_FILES = ("bios-256k.bin", "kvmvapic.bin", "linuxboot_dma.bin",
                  "linuxboot.bin")
TCG_ACCEL = ("-accel", "tcg,thread=multi", "-cpu", "max")
KVM_ACCEL = ("-accel", "kvm", "-cpu", "host")


def host_accel():
    return KVM_ACCEL if os.environ.get("SIVSHM_ACCEL") == "kvm" else TCG_ACCEL


def shared_libraries(binary):
    """Absolute paths of the shared objects a binary loads (ldd)."""
    out = subprocess.run(["ldd", binary], check=True, capture_output=True,
                         text=True).stdout
    libs = []
    for line in out.splitlines():
        m = re.search(r"(/\S+) \(0x", line)
        if m:
            libs.append(m.group(1))
    return libs


def firmware_files():
    found = {}
    for name in FIRMWARE_FILES:
        for d in FIRMWARE_DIRS:
            p = os.path.join(d, name)
            if os.path.exists(p):
                found[name] = os.path.realpath(p)
                break
        else:
            raise HarnessError("firmware %s not found in %s (apt-get install "
                               "seabios qemu-system-data)"
                               % (name, " ".join(FIRMWARE_DIRS)))
    return found


_running = []


@atexit.register
def kill_guests():
    """A test that fails early leaves no guest running behind it."""
    for run in _running:
        run.kill()


def _terminated(signo, frame):
    sys.exit(FAIL)      # through atexit: no guest outlives a killed test


signal.signal(signal.SIGTERM, _terminated)


class Running:
    """A booted guest on the host; with qmp=True, its QMP monitor is at
    self.qmp_path (connect with Qmp(run.qmp_path)).  With user (a
    user_dir()), its QEMU runs as that user, and logdir must be in that
    directory: every file QEMU opens is there or reached by user.reach()."""

    def __init__(self, guest, logdir, accel=None, qemu=None, qmp=False,
                 user=None):
        self.guest = guest
        self.logdir = logdir
        if user and os.path.commonpath(
                [os.path.realpath(logdir), user.path]) != user.path:
            raise HarnessError("%s runs as uid %d: its files go in %s "
                               "(user_dir()), not %s"
                               % (guest.name, user.uid, user.path, logdir))
        os.makedirs(logdir, exist_ok=True)
        self.initrd = os.path.join(logdir, guest.name + ".cpio")
        self.channel = os.path.join(logdir, guest.name + ".channel")
        self.console = os.path.join(logdir, guest.name + ".console")
        guest.build_initramfs(self.initrd)
        for p in (self.channel, self.console):
            if os.path.exists(p):
                os.unlink(p)
        accel = accel or host_accel()
        if not qemu and guest.level1 and os.environ.get("SIVSHM_LEVEL0_QEMU"):
            qemu = env_path("SIVSHM_LEVEL0_QEMU", "the level-0 QEMU")
        qemu = qemu or env_path("SIVSHM_QEMU", "our qemu-system-x86_64")
        vmlinuz = guest.kernel.vmlinuz
        if user:
            user.give(self.initrd)
            qemu = user.reach(qemu, os.X_OK)
            vmlinuz = user.reach(vmlinuz)
        self.argv = guest.qemu_argv(qemu, vmlinuz, self.initrd, self.channel,
                                    self.console, accel)
        self.qmp_path = None
        if qmp:
            self.qmp_path = os.path.join(logdir, guest.name + ".qmp")
            self.argv += ["-qmp", "unix:%s,server=on,wait=off"
                          % self.qmp_path]
        if user:
            self.argv = user.setpriv() + self.argv
        with open(os.path.join(logdir, guest.name + ".cmdline"), "w") as f:
            f.write(shlex.join(self.argv) + "\n")
        self.stderr = open(os.path.join(logdir, guest.name + ".stderr"), "wb")
        self.start = time.monotonic()
        self.proc = subprocess.Popen(
            self.argv, stdin=None if guest.hold else subprocess.DEVNULL,
            stdout=None if guest.hold else subprocess.DEVNULL,
            stderr=self.stderr, start_new_session=True)
        self.result = None
        _running.append(self)

    def wait(self, timeout):
        if self.result:
            return self.result
        timed_out = False
        if self.guest.hold:
            timeout = None
        try:
            status = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            self.kill()
            status = self.proc.wait()
        self.elapsed = time.monotonic() - self.start
        self.stderr.close()
        self.result = Result(self.guest.name, _read(self.channel),
                             _read(self.console), timed_out, status,
                             _read(self.stderr.name))
        log("%s (%.1f s)" % (self.result.describe(), self.elapsed))
        return self.result

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


"""Helpers for SIVSHM VM tests: a mapper VM and reducer VMs wired through
the sivshm device, with sivshm.ko and the static charcount programs."""

import atexit
import os
import subprocess
import time

from vmtest import Guest, Running, builddir, check, logdir

MODULE = "/lib/modules/extra/sivshm.ko"


def module():
    return builddir("guest-modules", "sivshm", "sivshm.ko")


def programs():
    return [builddir("tests", "vm", "guest", "charcount-mapper"),
            builddir("tests", "vm", "guest", "charcount-reducer")]


class Service:
    """One mapper VM and reducer VMs; start() boots the mapper first.  The
    socket and the guests' files go in @d, the test's log directory by
    default (a user_dir() when a QEMU runs as another user)."""

    def __init__(self, name, nreducers, size="64M", vectors=1, extra="",
                 d=None):
        self.d = d or logdir()
        self.name = name
        self.shm = "%s-%d" % (name, os.getpid())
        self.sock = os.path.join(self.d, name + ".sock")
        # A mapper leaves its socket file: one from an earlier run would
        # pass for this run's mapper listening.
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        self.nreducers = nreducers
        self.size = size
        self.vectors = vectors
        self.extra = extra

    def device(self, vm_id):
        dev = "sivshm,vm-id=%d,shm=%s,socket=%s,vectors=%d" % (
            vm_id, self.shm, self.sock, self.vectors)
        if vm_id == 0:
            dev += ",size=%s,reducers=%d" % (self.size, self.nreducers)
        return ["-device", dev + self.extra]

    def guest(self, vm_id, script, module_path=None, **kw):
        """A guest with the device for @vm_id and sivshm.ko (ours, or the
        one at @module_path) loaded before @script."""
        name = "%s-%s" % (self.name, "mapper" if vm_id == 0
                          else "reducer%d" % vm_id)
        setup = "insmod %s\ntest -c /dev/sivshm0\n" % MODULE
        return Guest(name, setup + script,
                     modules=[module_path or module()],
                     programs=programs() + kw.pop("programs", []),
                     qemu_args=self.device(vm_id) + kw.pop("qemu_args", []),
                     **kw)

    def start(self, mapper, reducers, qmp=False):
        """Boot the mapper, then the reducers; returns the Running list.
        With qmp, the mapper's QEMU has a QMP monitor."""
        runs = [Running(mapper, self.d, qmp=qmp)]
        runs += [Running(r, self.d) for r in reducers]
        return runs


def wait_console(run, text, timeout=300):
    """Wait until @text shows on @run's serial console."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(run.console, errors="replace") as f:
                if text in f.read():
                    return
        except FileNotFoundError:
            pass                        # QEMU has not opened it yet
        if run.proc.poll() is not None:
            break
        time.sleep(0.1)
    check(False, "%s never printed %r" % (run.guest.name, text))


def host_reducer(svc, j, mode="irq"):
    """charcount-reducer @j as a host process on @svc's socket; returns it
    and the first line it printed (it says when it joined)."""
    p = subprocess.Popen(
        [builddir("examples", "charcount-reducer"), "--socket", svc.sock,
         "--id", str(j), "--mode", mode, "--timeout", "200000"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    atexit.register(p.kill)
    return p, p.stdout.readline().decode()


def mapper_up(svc, run, text="guest-up"):
    """Wait until @run's QEMU listens on @svc's socket and its guest printed
    @text: a QEMU's descriptors are counted only then, since the guest's
    virtio drivers make it open more as they load."""
    for _ in range(600):
        if os.path.exists(svc.sock):
            break
        time.sleep(0.1)
    check(os.path.exists(svc.sock), "the mapper QEMU is not listening")
    wait_console(run, text)


def qemu_fds(pid):
    """How many descriptors a QEMU process has open."""
    return len(os.listdir("/proc/%d/fd" % pid))


def pingpong_scripts(rounds, modes=("eventfd", "signal")):
    """The mapper's and reducer 1's scripts for sivshm-pingpong in each of
    @modes, one after the other."""
    return ("".join("sivshm-pingpong mapper %d 1 %s\n" % (rounds, m)
                    for m in modes),
            "".join("sivshm-pingpong reducer %d %s\n" % (rounds, m)
                    for m in modes))


def charcount_test(mode):
    """charcount across a mapper VM and 3 reducer VMs in @mode."""
    svc = Service("cc-" + mode, 3)
    mapper = svc.guest(0, "charcount-mapper --device /dev/sivshm0 "
                       "--random 16M --mode %s --threads 1 "
                       "--timeout 200000\n" % mode)
    # In interrupt mode the doorbells must really have arrived (a reducer
    # that only ever timed out and re-checked its mailbox would pass too).
    irqs = ("n=$(awk '/sivshm0/ { n += $2 + $3 } END { print n + 0 }' "
            "/proc/interrupts)\necho \"sivshm interrupts: $n\"\n"
            "test \"$n\" -gt 0\n") if mode == "irq" else ""
    reducers = [svc.guest(j, "charcount-reducer --device /dev/sivshm0 "
                          "--mode %s --timeout 200000\n%s" % (mode, irqs))
                for j in (1, 2, 3)]
    results = [r.wait(400) for r in svc.start(mapper, reducers)]
    for r in results:
        check(r.outcome == "pass", r.describe())
    out = results[0].text()
    check(": match)" in out, "no matching total:\n" + out)
    print(next(l for l in out.splitlines() if "occurs" in l))
    print(next(l for l in out.splitlines() if "Xfer" in l) +
          " (under %s)" % os.environ.get("SIVSHM_ACCEL", "tcg").upper())

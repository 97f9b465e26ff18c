#!/usr/bin/env python3
"""Run the test suite: tests/unit on the host, then the VM tier.

Each test is a program with one purpose that exits 0 (pass), 1 (fail) or
77 (skip, with its reason printed).  Each runs under a timeout, its output
kept in <builddir>/tests/logs/<name>.log and its VM logs (consoles, result
channels, QEMU command lines) in <builddir>/tests/logs/<name>/.

The last line printed is "N passed, N failed, N skipped".

Usage: runtests.py [--builddir DIR] [--tier unit|vm|slow]... [--preflight]
                   [--other-qemu RELEASE=BINARY] [--except TEST]... [TEST...]
A TEST is a path or a name (module-load, tests/vm/tests/module-load.py).
--other-qemu runs the device tests (DEVICE_TESTS) among those selected a
second time, on that QEMU, planned with the others; they are named
NAME@qemu-RELEASE, in the summary and in tests/logs/.  --except leaves
a test out.
--preflight checks that the tests named exist and can run here (the VM
tier needs root), without running any: make check asks it before it
builds QEMU and fetches the kernel.
Tests run with tests/vm on PYTHONPATH: they import the harness (vmtest) and
its helpers (sivshm, pibooster, ...) from there.
"""

import argparse
import glob
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# Where the harness and the tests' shared modules are, for this runner and
# for every test it runs (PYTHONPATH in main()).
VM_PATH = os.path.join(HERE, "vm")
sys.path.insert(0, VM_PATH)
import vmtest  # noqa: E402

TIERS = {
    # tier: (glob under tests/ in the source tree or the build tree, timeout)
    "unit": (["unit/*"], 120),
    # A VM test's own bounds (an attempt times its attempts) must fit in
    # its tier's: the nested pibooster tests' 3 x 240 s (tests/vm/pibooster.py).
    "vm": (["vm/tests/*.py"], 900),
    # VM tests that repeat, on another kernel, paths the vm tier covers
    # already: make check-slow, outside make check's time (docs/testing.md).
    "slow": (["vm/slow/*.py"], 900),
}
# What runs when no tier is named.
DEFAULT_TIERS = ["unit", "vm"]


# The tests of our QEMU's own devices, the ones --other-qemu runs again on
# the other QEMU release: the sivshm device's slices, doorbells, registers
# and realize/unplug paths, its irqfd routes under KVM, a reducer device
# joined over RDMA, and the pagetype device's realize checks and batches in
# a level-1 QEMU.
DEVICE_TESTS = (
    "sivshm-isolation", "sivshm-interrupts", "sivshm-bar-fuzz",
    "sivshm-device-add", "sivshm-irqfd", "pagetype-l2", "rdma-device",
)


# A test's file may say, in one of its first 40 lines, how many cores it
# keeps busy: "# runtests: cores N", N in half cores up to CORES, from what
# the test takes alone (the verdict's cpu over its time; docs/testing.md,
# "Which tests run at once").  Tests run beside each other while what
# they keep busy fits in CORES; a test without the line takes them all.
CORES_MARK = re.compile(r"# runtests: cores (\S+)\n?\Z")
# The cores the tests share (the machines this runs on have two).
CORES = 2


# What the VM tier does that only root may: the reason runtests.py refuses
# to start it as another user, rather than let these tests fail one by one.
ROOT_NEEDS = """\
  - sivshm-cred runs reducer QEMUs as another user (setpriv to nobody);
  - libvirt-domains starts its own libvirtd, installs its hook in
    /etc/libvirt/hooks and sets /dev/kvm's group and mode;
    libvirt-domains-11 does the same chrooted in a Debian 13 root;
  - dkms-build, dkms-pagetype, sivshm-kernel-612 and pagetype-kernel-612
    install DKMS packages in /usr/src and build them in /var/lib/dkms.
Run it as root (sudo make check), or run the host tier alone: make
check-unit.  /dev/kvm is not required: without it the guests run under
TCG."""


def can_run(tests):
    """None if the selected tests can run as this user, else why not."""
    if os.geteuid() != 0 and any(t[0] != "unit" for t in tests):
        return ("the VM tier needs root, and this is uid %d:\n%s"
                % (os.geteuid(), ROOT_NEEDS))
    return None


def discover(builddir, tiers):
    tests = []
    for tier in tiers:
        pats, timeout = TIERS[tier]
        found = {}
        # The build tree's first: in a build apart from the source tree,
        # a program of the same name in the source tree is another
        # build's (CI's sanitizer tree beside an in-tree build).
        for root in (os.path.join(builddir, "tests"), HERE):
            for pat in pats:
                for p in glob.glob(os.path.join(root, pat)):
                    if (os.access(p, os.X_OK) and os.path.isfile(p)
                            and not p.endswith((".c", ".o", ".h"))):
                        found.setdefault(os.path.basename(p), p)
        tests += [(tier, found[k], timeout) for k in sorted(found)]
    return tests


def cores_of(path):
    """The cores test @path keeps busy: what its CORES_MARK says, else
    all.  A "# runtests:" line that is not a number of half cores from
    one half to CORES is a ValueError, before any test runs."""
    try:
        with open(path, errors="replace") as f:
            head = f.readlines()[:40]
    except OSError:
        return CORES
    for line in head:
        if not line.startswith("# runtests:"):
            continue
        m = CORES_MARK.match(line)
        try:
            n = float(m.group(1)) if m else 0
        except ValueError:
            n = 0
        if not (0.5 <= n <= CORES and (n * 2).is_integer()):
            raise ValueError("%s: %r: want cores from 0.5 to %d in halves"
                             % (path, line.strip(), CORES))
        return n
    return CORES


class Cores:
    """The cores tests take and give back."""

    def __init__(self, n):
        self.free = n
        self.cond = threading.Condition()

    def take_first(self, plan):
        """Remove from @plan, a list of tests ending in the cores each
        needs, the first that fits in the cores free, waiting until one
        does; take its cores and return it."""
        with self.cond:
            while True:
                for i, test in enumerate(plan):
                    if test[-1] <= self.free:
                        self.free -= test[-1]
                        return plan.pop(i)
                self.cond.wait()

    def give(self, n):
        with self.cond:
            self.free += n
            self.cond.notify_all()


def run_all(passes, logroot):
    """Run every test of @passes, a list of (tests, env, suffix): each pass
    its tests (tier, path, timeout) with its environment, their names
    ending in its suffix.  The passes are planned as one, so that tests of
    different passes run beside each other; returns the verdicts in the
    order the tests ended.  A bad CORES_MARK is a ValueError before any
    test starts."""
    cores = Cores(CORES)
    verdicts = []

    def run(tier, path, timeout, env, suffix, need):
        try:
            verdicts.append(run_one(tier, path, timeout, logroot, env,
                                    suffix))
        finally:
            cores.give(need)

    hold = bool(os.environ.get("SIVSHM_VM_HOLD"))
    plan = [(tier, path, timeout, env, suffix,
             CORES if hold else need)
            for tests, env, suffix in passes
            for tier, path, timeout in tests
            for need in [cores_of(path)]]
    # The tiers one after the other; in each, the tests that need the most
    # cores first, the others filling the cores they leave: whenever cores
    # are given back, the first test that fits in those free starts.
    for tier in dict.fromkeys(t[0] for t in plan):
        left = sorted((t for t in plan if t[0] == tier), key=lambda t: -t[-1])
        threads = []
        while left:
            test = cores.take_first(left)
            threads.append(threading.Thread(target=run, args=test))
            threads[-1].start()
        for t in threads:
            t.join()
    return verdicts


def probe_accel(builddir):
    """KVM if it boots a Linux guest here, else TCG: boot one and see."""
    if os.environ.get("SIVSHM_ACCEL"):
        return os.environ["SIVSHM_ACCEL"]
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg"
    d = os.path.join(builddir, "tests", "logs", "kvm-probe")
    try:
        r = vmtest.Running(vmtest.Guest("kvm-probe", "true\n"), d,
                           accel=vmtest.KVM_ACCEL).wait(30)
    except vmtest.HarnessError as e:
        print("kvm probe: %s" % e)
        return "tcg"
    return "kvm" if r.outcome == "pass" else "tcg"


def qemu_version(binary):
    """The Debian source version qemu-sivshm/build.sh wrote beside it."""
    try:
        with open(os.path.join(os.path.dirname(binary), "..",
                               "VERSION")) as f:
            return f.read().strip()
    except OSError:
        return binary


def name_of(path):
    return os.path.splitext(os.path.basename(path))[0]


def wait_cpu(proc, timeout):
    """Wait up to @timeout s (None: for ever) for @proc to end: its exit
    status and the CPU time (user and system, s) it took with the
    descendants it waited for (a test's guests, its QEMUs), or (None, 0)
    if it has not ended.  Tests that run beside each other are chosen by
    what they take (CORES_MARK): the verdict line says it."""
    fd = os.pidfd_open(proc.pid)
    try:
        if not select.select([fd], [], [], timeout)[0]:
            return None, 0.0
    finally:
        os.close(fd)
    _, st, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(st)
    return proc.returncode, ru.ru_utime + ru.ru_stime


def run_one(tier, path, timeout, logroot, env, suffix=""):
    name = name_of(path) + suffix
    logdir = os.path.join(logroot, name)
    logfile = os.path.join(logroot, name + ".log")
    hold = bool(os.environ.get("SIVSHM_VM_HOLD"))
    if hold:
        timeout = None      # a held guest is the developer's, on the terminal
    # The test's own bounds (guest timeouts times their attempts) must fit
    # in this one: vmtest.boot() checks them against it.
    env = dict(env, SIVSHM_LOGDIR=logdir,
               SIVSHM_TEST_TIMEOUT=str(timeout or 0))
    start = time.monotonic()
    with open(logfile, "wb") as log:
        proc = subprocess.Popen([path], stdout=None if hold else log,
                                stderr=None if hold else subprocess.STDOUT,
                                env=env, start_new_session=not hold)
        status, cpu = wait_cpu(proc, timeout)
        if status is None:
            # SIGTERM first: a VM test then kills the guests it started,
            # which run in sessions of their own.
            os.killpg(proc.pid, signal.SIGTERM)
            ended, cpu = wait_cpu(proc, 10)
            if ended is None:
                os.killpg(proc.pid, signal.SIGKILL)
                cpu = wait_cpu(proc, None)[1]
    elapsed = time.monotonic() - start
    with open(logfile, "rb") as f:
        out = f.read().decode(errors="replace")
    if status == 0:
        verdict, why = "PASS", ""
    elif status == vmtest.SKIP:
        verdict = "SKIP"
        why = next((ln for ln in reversed(out.splitlines())
                    if ln.startswith("SKIP")), "SKIP: no reason printed")
        why = why[len("SKIP: "):] if why.startswith("SKIP: ") else why
    else:
        verdict = "FAIL"
        why = ("timed out after %d s" % timeout if status is None
               else "exit status %d" % status)
    report = "%s %s/%s (%.1f s, cpu %.1f s)%s\n" % (
        verdict, tier, name, elapsed, cpu, (": " + why) if why else "")
    if verdict == "FAIL":
        report += "".join("    | %s\n" % ln for ln in out.splitlines()[-15:])
        report += "    log: %s\n" % logfile
    # One write: a test running beside it reports in lines of its own.
    print(report, end="", flush=True)
    return verdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--builddir", default=os.getcwd())
    ap.add_argument("--tier", action="append", choices=sorted(TIERS))
    ap.add_argument("--preflight", action="store_true")
    ap.add_argument("--other-qemu", metavar="RELEASE=BINARY")
    ap.add_argument("--except", dest="excepted", action="append",
                    default=[], metavar="TEST",
                    help="leave TEST out (repeatable)")
    ap.add_argument("tests", nargs="*")
    args = ap.parse_args()
    builddir = os.path.abspath(args.builddir)
    # A test named is found in any tier.
    tiers = args.tier or (list(TIERS) if args.tests else DEFAULT_TIERS)

    tests = discover(builddir, tiers)
    unknown = set(args.excepted) - {name_of(t[1]) for t in tests}
    if unknown:
        ap.error("--except: no such test: " + ", ".join(sorted(unknown)))
    tests = [t for t in tests if name_of(t[1]) not in args.excepted]
    if args.tests:
        want = {name_of(t) for t in args.tests}
        tests = [t for t in tests if name_of(t[1]) in want]
        missing = want - {name_of(t[1]) for t in tests}
        if missing:
            print("no such test: %s" % ", ".join(sorted(missing)))
            print("0 passed, %d failed" % len(missing))
            return 1
    again = []
    if args.other_qemu:
        release, sep, other_qemu = args.other_qemu.partition("=")
        if not sep or not release or not other_qemu:
            ap.error("--other-qemu wants RELEASE=BINARY")
        again = [t for t in tests
                 if t[0] != "unit" and name_of(t[1]) in DEVICE_TESTS]
    why = can_run(tests)
    if why:
        print("runtests.py: %s" % why, file=sys.stderr)
        return 1
    if args.preflight:
        return 0

    env = dict(os.environ, SIVSHM_BUILDDIR=builddir,
               PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(
                   [VM_PATH] + [p for p in os.environ.get(
                       "PYTHONPATH", "").split(os.pathsep) if p]))
    env.setdefault("SIVSHM_QEMU", os.path.join(
        builddir, "qemu-sivshm", "out", "bin", "qemu-system-x86_64"))
    env.setdefault("SIVSHM_KERNEL", os.path.join(builddir, "tests", "vm",
                                                 "kernel"))
    env.setdefault("SIVSHM_KERNEL_BACKPORTS", os.path.join(
        builddir, "tests", "vm", "kernel-backports"))
    os.environ.update(env)
    if any(t[0] != "unit" for t in tests):
        env["SIVSHM_ACCEL"] = probe_accel(builddir)
        print("VM tests run under %s, on QEMU %s"
              % (env["SIVSHM_ACCEL"].upper(), qemu_version(env["SIVSHM_QEMU"])),
              flush=True)

    logroot = os.path.join(builddir, "tests", "logs")
    os.makedirs(logroot, exist_ok=True)
    passes = [(tests, env, "")]
    if again:
        print("The device tests run again on QEMU %s (named @qemu-%s)"
              % (qemu_version(other_qemu), release), flush=True)
        # The other release where the devices are: in a nested test, in
        # level 1; level 0 stays the machine's stand-in, as in the first
        # pass (docs/testing.md, "Our QEMU on 10.0").
        passes.append((again, dict(env, SIVSHM_QEMU=other_qemu,
                                   SIVSHM_LEVEL0_QEMU=env["SIVSHM_QEMU"]),
                       "@qemu-" + release))
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    start = time.monotonic()
    try:
        verdicts = run_all(passes, logroot)
    except ValueError as e:
        print("runtests.py: %s" % e, file=sys.stderr)
        return 1
    for verdict in verdicts:
        counts[verdict] += 1
    print("%d tests in %.0f s" % (sum(counts.values()),
                                  time.monotonic() - start), flush=True)
    print("%d passed, %d failed, %d skipped"
          % (counts["PASS"], counts["FAIL"], counts["SKIP"]), flush=True)
    return 1 if counts["FAIL"] or not tests else 0


if __name__ == "__main__":
    sys.exit(main())

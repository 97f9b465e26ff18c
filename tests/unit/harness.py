#!/usr/bin/env python3
"""Unit tests of the VM harness's host side: the result-channel framing,
the splat scanner, in-tree module dependency resolution, what a guest's
root holds, the bounds boot() accepts, and that what a process running
as another user opens does not depend on where the checkout is.  Run by
tests/runtests.py, which puts the harness on PYTHONPATH."""

import contextlib
import glob
import importlib.util
import io
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

from vmtest import (L2_BOOT_STALL, FrameError, Guest, HarnessError, Result,
                    Running, boot, encode_frame, emulator_fault, find_splats, guest_sh,
                    nested_result, parse_frames, remove_user_dirs,
                    resolve_modules, stale_int3, user_can, user_dir)
from vmtest import user as vmuser

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
NOBODY = 65534


def channel(*frames):
    return b"".join(encode_frame(k, p) for k, p in frames)


class Frames(unittest.TestCase):
    def test_round_trip(self):
        data = channel(("out", b"hello\n\x00binary"), ("dmesg", b""),
                       ("file:l2.channel", b"SVT1 x"), ("exit", b"0"))
        self.assertEqual(parse_frames(data),
                         [("out", b"hello\n\x00binary"), ("dmesg", b""),
                          ("file:l2.channel", b"SVT1 x"), ("exit", b"0")])

    def test_empty_channel_is_no_frames(self):
        self.assertEqual(parse_frames(b""), [])

    def test_truncated_payload(self):
        data = channel(("out", b"0123456789"))
        for cut in range(1, len(data)):
            with self.assertRaises(FrameError, msg="cut at %d" % cut):
                parse_frames(data[:cut])

    def test_bad_headers(self):
        for bad in (b"SVT2 out 1\nx\n", b"SVT1 out\nx\n", b"SVT1 out -1\nx\n",
                    b"SVT1 out 1 2\nx\n", b"SVT1 OUT 1\nx\n",
                    b"SVT1 file:../x 1\nx\n", b"SVT1 out 0x1\nx\n",
                    b"SVT1 out 1\nxy", b"garbage", b"SVT1 out 99999999999\n",
                    b"SVT1 out 1" + b" " * 200 + b"\nx\n"):
            with self.assertRaises(FrameError, msg=bad):
                parse_frames(bad)

    def test_oversized_frame(self):
        with self.assertRaises(FrameError):
            parse_frames(b"SVT1 out 999999999\n")


class Outcomes(unittest.TestCase):
    def result(self, data, console=b"", timed_out=False):
        return Result("t", data, console, timed_out, 0)

    def test_pass(self):
        r = self.result(channel(("out", b"ok"), ("exit", b"0")))
        self.assertEqual(r.outcome, "pass")
        self.assertEqual(r.text(), "ok")

    def test_fail_and_skip(self):
        self.assertEqual(self.result(channel(("exit", b"1"))).outcome, "fail")
        self.assertEqual(self.result(channel(("exit", b"77"))).outcome,
                         "skip")

    def test_no_exit_frame_is_lost(self):
        r = self.result(channel(("out", b"ok")))
        self.assertEqual(r.outcome, "lost")
        r = self.result(b"", timed_out=True)
        self.assertEqual(r.outcome, "lost")
        self.assertIn("timeout", r.lost)

    def test_corrupt_channel_is_lost(self):
        r = self.result(channel(("exit", b"0"))[:-1])
        self.assertEqual(r.outcome, "lost")

    def test_frame_after_exit_is_lost(self):
        r = self.result(channel(("exit", b"0"), ("out", b"late")))
        self.assertEqual(r.outcome, "lost")

    def test_bad_exit_status_is_lost(self):
        for bad in (b"", b"-1", b"256", b"zero"):
            r = self.result(channel(("exit", bad)))
            self.assertEqual(r.outcome, "lost", bad)

    def test_splat_fails_a_passing_script(self):
        r = self.result(channel(("dmesg", b"[ 1.0] WARNING: CPU: 0 PID: 1"),
                                ("exit", b"0")))
        self.assertEqual(r.outcome, "fail")
        r = self.result(channel(("exit", b"0")),
                        console=b"[    2.5] BUG: kernel NULL pointer")
        self.assertEqual(r.outcome, "fail")


class Describe(unittest.TestCase):
    """A failed guest's description names the guest's own assertion."""

    def test_assertion_file_and_line(self):
        out = (b"working\nASSERT sivshm-poke.c:120: t < timeout_ms: never"
               b"\nASSERT later.c:1: x\n")
        r = Result("t", channel(("out", out), ("exit", b"1")), b"", False, 0)
        self.assertEqual(r.outcome, "fail")
        self.assertIn("exit status 1: ASSERT sivshm-poke.c:120: t < "
                      "timeout_ms: never", r.describe())
        self.assertNotIn("later.c", r.describe())

    def test_no_assertion(self):
        r = Result("t", channel(("out", b"x"), ("exit", b"2")), b"", False, 0)
        self.assertTrue(r.describe().endswith("(exit status 2)"))


class Killed(unittest.TestCase):
    """A guest KVM refused to run (KVM_RUN failed) is killed, not lost."""
    STDERR = b"error: kvm run failed Input/output error\nRAX=0 RBX=0\n"

    def test_killed_guest(self):
        r = Result("t", channel(("out", b"half")), b"", True, -9,
                   self.STDERR)
        self.assertEqual(r.outcome, "killed")
        self.assertIn("kvm run failed", r.describe())

    def test_a_finished_guest_is_judged_by_its_status(self):
        r = Result("t", channel(("exit", b"0")), b"", False, 0, self.STDERR)
        self.assertEqual(r.outcome, "pass")

    def test_other_stderr_is_no_kill(self):
        r = Result("t", b"", b"", True, -9, b"qemu: some warning\n")
        self.assertEqual(r.outcome, "lost")

    def test_nested_result_carries_status_and_stderr(self):
        l1 = Result("l1", channel(
            ("file:g.channel", channel(("exit", b"0"))),
            ("file:g.stderr", b"trace line\n"),
            ("file:g.status", b"0\n"), ("exit", b"0")), b"", False, 0)
        r2 = nested_result(l1, "g")
        self.assertEqual(r2.outcome, "pass")
        self.assertEqual(r2.qemu_status, 0)
        self.assertEqual(r2.stderr, "trace line\n")
        l1.files["g.stderr"] = self.STDERR
        l1.files["g.channel"] = b""
        self.assertEqual(nested_result(l1, "g").outcome, "killed")

    def test_emulator_fault(self):
        r = Result("t", channel(("exit", b"0")),
                   b"[ 9.1] BUG: scheduling while atomic: qemu/12/0x00110001",
                   False, 0)
        self.assertIn("scheduling while atomic", emulator_fault(r))
        r = Result("t", channel(("exit", b"0")),
                   b"[ 9.1] BUG: kernel NULL pointer dereference", False, 0)
        self.assertIsNone(emulator_fault(r))
        # A level 1 that passed, its level 2 killed before its script ran.
        stall = "vmtest: level 2 g: " + L2_BOOT_STALL + "\n"
        r = Result("t", channel(("out", stall.encode()), ("exit", b"0")),
                   b"", False, 0)
        self.assertEqual(r.outcome, "pass")
        self.assertIn(L2_BOOT_STALL, emulator_fault(r))
        r = Result("t", channel(("out", b"vmtest: level 2 g ended: 0\n"),
                                ("exit", b"0")), b"", False, 0)
        self.assertIsNone(emulator_fault(r))

    # A 6.12 guest's oops on TCG: sched_clock_tick's static-key jump just
    # patched back to its nop (66 90), the int3 gone before RIP.
    OOPS = (b"[    2.412345] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI\n"
            b"[    2.412345] RIP: 0010:sched_clock_tick+0x5/0x70\n"
            b"[    2.412345] Code: 0f 1f 40 00 90 90 90 90 f3 0f 1e fa 66 "
            b"<90> 55 48 89 e5 e8 0b 00 00 00\n")

    def test_stale_int3(self):
        r = Result("t", b"", self.OOPS, False, 0)
        self.assertEqual(r.outcome, "lost")
        self.assertIn("no int3 before RIP (fa 66 <90>)", stale_int3(r))
        self.assertIn("stale", emulator_fault(r))

    def test_a_real_int3_is_not_stale(self):
        real = self.OOPS.replace(b"66 <90>", b"cc <90>")
        self.assertIsNone(stale_int3(Result("t", b"", real, False, 0)))
        # Nor is another oops, nor a guest that passed.
        other = self.OOPS.replace(b"Oops: int3", b"Oops: general protection")
        self.assertIsNone(stale_int3(Result("t", b"", other, False, 0)))
        ok = Result("t", channel(("exit", b"0")), b"", False, 0)
        self.assertIsNone(stale_int3(ok))


class Splats(unittest.TestCase):
    def test_kinds(self):
        for line in ("WARNING: CPU: 1 PID: 5 at mm/x.c:1",
                     "BUG: unable to handle page fault",
                     "Oops: 0002 [#1] SMP", "kernel BUG at mm/slub.c:1!",
                     "WARNING: possible circular locking dependency detected",
                     "rcu: INFO: rcu_preempt self-detected stall on CPU",
                     "Kernel panic - not syncing: Fatal exception",
                     "UBSAN: shift-out-of-bounds in x.c"):
            self.assertEqual(find_splats("[    1.000000] " + line, True),
                             ["[    1.000000] " + line], line)

    def test_console_user_output_is_not_kernel(self):
        self.assertEqual(find_splats("WARNING: printed by a test", True), [])
        self.assertEqual(len(find_splats("WARNING: in dmesg", False)), 1)

    def test_clean_log(self):
        log = "[    0.0] Linux version 6.1\n[    1.0] virtio_net loaded\n"
        self.assertEqual(find_splats(log, True), [])


class Modules(unittest.TestCase):
    DEP = ("kernel/arch/x86/kvm/kvm.ko: kernel/virt/lib/irqbypass.ko\n"
           "kernel/arch/x86/kvm/kvm-amd.ko: kernel/drivers/crypto/ccp/ccp.ko"
           " kernel/arch/x86/kvm/kvm.ko kernel/virt/lib/irqbypass.ko\n"
           "kernel/drivers/crypto/ccp/ccp.ko:\n"
           "kernel/virt/lib/irqbypass.ko:\n"
           "kernel/a.ko: kernel/b.ko\nkernel/b.ko: kernel/a.ko\n")

    def test_dependencies_first_each_once(self):
        order = resolve_modules(self.DEP, ["kvm_amd", "kvm"])
        self.assertEqual(order, ["kernel/drivers/crypto/ccp/ccp.ko",
                                 "kernel/virt/lib/irqbypass.ko",
                                 "kernel/arch/x86/kvm/kvm.ko",
                                 "kernel/arch/x86/kvm/kvm-amd.ko"])

    def test_dash_and_underscore_names(self):
        self.assertEqual(resolve_modules(self.DEP, ["kvm-amd"])[-1],
                         "kernel/arch/x86/kvm/kvm-amd.ko")

    def test_unknown_module(self):
        with self.assertRaises(HarnessError):
            resolve_modules(self.DEP, ["no_such_module"])

    def test_loop(self):
        with self.assertRaises(HarnessError):
            resolve_modules(self.DEP, ["a"])

    def test_built_in_needs_no_insmod(self):
        builtin = "kernel/drivers/virtio/virtio_pci.ko\n"
        self.assertEqual(resolve_modules(self.DEP, ["virtio-pci"], builtin),
                         [])
        with self.assertRaises(HarnessError):
            resolve_modules(self.DEP, ["virtio_pci"])


class Staging(unittest.TestCase):
    """What a guest's root holds besides its programs: /init from
    tests/vm/guest/init.sh, the values it passes the script in
    /etc/vmtest/env, the shell libraries the script sources first, and
    files a function writes (a level-2 initramfs)."""

    class Kernel:
        kver = "0"
        moddir = "/nonexistent"
        modules_dep = ""
        modules_builtin = ("kernel/drivers/virtio/virtio_pci.ko\n"
                           "kernel/drivers/char/virtio_console.ko\n")

    def test_root(self):
        lib = guest_sh("level1.sh")
        g = Guest("t", "run_l2\n", kernel=self.Kernel(), shell_libs=[lib],
                  env={"VMTEST_X": "a b'c $d"},
                  files={"/l2/x": lambda p: open(p, "w").write("made")})
        with tempfile.TemporaryDirectory() as root:
            g._stage(root)

            def read(path):
                with open(os.path.join(root, path)) as f:
                    return f.read()
            with open(guest_sh("init.sh")) as f:
                self.assertEqual(read("init"), f.read())
            self.assertTrue(os.access(os.path.join(root, "init"), os.X_OK))
            self.assertEqual(read("etc/vmtest/test.sh"),
                             ". /etc/vmtest/lib/level1.sh\nrun_l2\n")
            with open(lib) as f:
                self.assertEqual(read("etc/vmtest/lib/level1.sh"), f.read())
            self.assertEqual(read("l2/x"), "made")
            env = os.path.join(root, "etc/vmtest/env")
            out = subprocess.run(
                ["sh", "-c", '. "$1"; printf "%s|%s|%s" "$VMTEST_X" '
                 '"$VMTEST_NAME" "$VMTEST_PORT"', "sh", env],
                check=True, capture_output=True, text=True).stdout
            self.assertEqual(out, "a b'c $d|t|sivshm.result")


class Budget(unittest.TestCase):
    """boot() refuses bounds the runner's time limit cannot hold, before
    it starts anything: a third attempt that the runner would cut is no
    attempt."""

    class Guest:
        name = "l1"

    def setUp(self):
        self.saved = os.environ.get("SIVSHM_TEST_TIMEOUT")
        os.environ["SIVSHM_TEST_TIMEOUT"] = "600"

    def tearDown(self):
        if self.saved is None:
            del os.environ["SIVSHM_TEST_TIMEOUT"]
        else:
            os.environ["SIVSHM_TEST_TIMEOUT"] = self.saved

    def test_attempts_over_the_limit(self):
        with self.assertRaisesRegex(HarnessError, r"3 attempt\(s\) of 300 s "
                                    r"do not fit in the 600 s"):
            boot(self.Guest(), timeout=300, emulator_retries=2)

    def test_one_attempt_over_the_limit(self):
        with self.assertRaises(HarnessError):
            boot(self.Guest(), timeout=601)


class Level0(unittest.TestCase):
    """A level 1 carrying our QEMU runs under SIVSHM_LEVEL0_QEMU where
    that is set (runtests.py's pass on the other release); every other
    guest under SIVSHM_QEMU."""

    class Kernel(Staging.Kernel):
        vmlinuz = "/nonexistent/vmlinuz"

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="harness-level0-")
        self.saved = {k: os.environ.get(k) for k in
                      ("SIVSHM_QEMU", "SIVSHM_LEVEL0_QEMU", "SIVSHM_ACCEL")}
        for k in ("SIVSHM_QEMU", "SIVSHM_LEVEL0_QEMU"):
            path = os.path.join(self.tmp, k)
            with open(path, "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            os.chmod(path, 0o755)
            os.environ[k] = path
        os.environ["SIVSHM_ACCEL"] = "tcg"

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(self.tmp)

    def qemu_of(self, level1):
        g = Guest("t", "true\n", kernel=self.Kernel())
        g.level1 = level1
        r = Running(g, os.path.join(self.tmp, "logs"))
        r.wait(30)
        return os.path.basename(r.argv[0])

    def test_level1_under_level0(self):
        self.assertEqual(self.qemu_of(True), "SIVSHM_LEVEL0_QEMU")

    def test_other_guests_under_ours(self):
        self.assertEqual(self.qemu_of(False), "SIVSHM_QEMU")

    def test_level1_under_ours_without_level0(self):
        del os.environ["SIVSHM_LEVEL0_QEMU"]
        self.assertEqual(self.qemu_of(True), "SIVSHM_QEMU")


class Runner(unittest.TestCase):
    """runtests.py's scheduling: tests run beside each other while the
    cores their marks say fit in two, of the same pass or not, in either
    tier; a test not marked runs alone; a bad mark runs nothing."""

    TEST = """#!/bin/sh
%s
date +%%s.%%N > "$0.start"
sleep 1
date +%%s.%%N > "$0.end"
"""

    def setUp(self):
        spec = importlib.util.spec_from_file_location(
            "runtests", os.path.join(TOP, "tests", "runtests.py"))
        self.rt = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.rt)
        self.tmp = tempfile.mkdtemp(prefix="harness-runner-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def script(self, name, cores):
        """A test that sleeps a second, marked with @cores (None: not)."""
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(self.TEST % ("# runtests: cores %s" % cores if cores
                                 else "# runs alone"))
        os.chmod(path, 0o755)
        return path

    def run_passes(self, passes, n):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            verdicts = self.rt.run_all(
                [(tests, dict(os.environ), suffix)
                 for tests, suffix in passes], self.tmp)
        self.assertEqual(verdicts, ["PASS"] * n, out.getvalue())
        return out.getvalue()

    def overlap(self, *paths):
        spans = list(map(self.span, paths))
        return all(a0 < b1 and b0 < a1
                   for i, (a0, a1) in enumerate(spans)
                   for b0, b1 in spans[i + 1:])

    def span(self, path):
        with open(path + ".start") as a, open(path + ".end") as b:
            return float(a.read()), float(b.read())

    def test_marked_tests_meet_others_run_alone(self):
        a = self.script("a", "1")
        w = self.script("w", None)
        b = self.script("b", "1")
        # b in a second pass, as the device tests on the other QEMU are.
        out = self.run_passes([([("vm", a, 30), ("vm", w, 30)], ""),
                               ([("vm", b, 30)], "@other")], 3)
        self.assertIn("PASS vm/b@other", out)
        self.assertTrue(self.overlap(a, b), "a and b did not overlap")
        self.assertFalse(self.overlap(a, w) or self.overlap(b, w),
                         "w ran beside another")

    def test_half_cores_fill(self):
        """Three tests of 1, 0.5 and 0.5 cores run at once, and a test of
        1.5 beside one of 0.5, not beside one of 1."""
        one, h1, h2 = (self.script(n, c) for n, c in
                       (("one", "1"), ("h1", "0.5"), ("h2", "0.5")))
        self.run_passes([([("vm", p, 30) for p in (h1, h2, one)], "")], 3)
        self.assertTrue(self.overlap(one, h1, h2), "1+0.5+0.5 apart")
        big, half, whole = (self.script(n, c) for n, c in
                            (("big", "1.5"), ("half", "0.5"),
                             ("whole", "1")))
        self.run_passes([([("vm", p, 30) for p in (whole, half, big)],
                          "")], 3)
        self.assertTrue(self.overlap(big, half), "1.5 and 0.5 apart")
        self.assertFalse(self.overlap(big, whole), "1.5 beside 1")

    def test_bad_mark_runs_nothing(self):
        good = self.script("good", "1")
        for mark in ("3", "0.7", "0", "one", "nan", "1 # two"):
            bad = self.script("bad", mark)
            with self.assertRaisesRegex(ValueError, "bad: .*cores"):
                self.run_passes([([("vm", good, 30), ("vm", bad, 30)],
                                  "")], 0)
            self.assertFalse(os.path.exists(good + ".start"), mark)
        with open(bad, "w") as f:
            f.write(self.TEST % "# runtests: one core")
        with self.assertRaisesRegex(ValueError, "bad: .*cores"):
            self.run_passes([([("vm", bad, 30)], "")], 0)

    def test_cpu_time_reported(self):
        """Each verdict says the CPU time the test's processes took: a
        child that spins one second and one that sleeps one second."""
        spin = os.path.join(self.tmp, "spin")
        with open(spin, "w") as f:
            f.write("#!/bin/sh\nsh -c 'e=$(($(date +%s) + 2)); "
                    "while [ $(date +%s) -lt $e ]; do :; done' &\n"
                    "sleep 1; wait\n")
        os.chmod(spin, 0o755)
        idle = self.script("idle", None)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.rt.run_all([([("unit", spin, 30), ("unit", idle, 30)],
                              dict(os.environ), "")], self.tmp)
        cpu = dict(re.findall(r"unit/(\w+) \([\d.]+ s, cpu ([\d.]+) s\)",
                              out.getvalue()))
        self.assertEqual(sorted(cpu), ["idle", "spin"], out.getvalue())
        self.assertGreater(float(cpu["spin"]), 0.8)
        self.assertLess(float(cpu["idle"]), 0.5)

    def test_unit_tests_pair_too(self):
        """The mark means the same in the host tier (a checkpatch run, one
        libFuzzer process)."""
        a = self.script("a", "1")
        b = self.script("b", "1")
        self.run_passes([([("unit", a, 30), ("unit", b, 30)], "")], 2)
        self.assertTrue(self.overlap(a, b), "a and b did not overlap")

    def test_tiers_in_turn(self):
        """A tier's tests start once the tier before has ended, whatever
        their marks."""
        u = self.script("u", "1")
        v = self.script("v", "1")
        self.run_passes([([("unit", u, 30), ("vm", v, 30)], "")], 2)
        self.assertFalse(self.overlap(u, v), "vm test beside a unit test")


class Discover(unittest.TestCase):
    """A build tree apart from the source tree runs its own programs: one
    of the same name in the source tree is another build's."""

    def test_build_tree_first(self):
        spec = importlib.util.spec_from_file_location(
            "runtests", os.path.join(TOP, "tests", "runtests.py"))
        rt = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(rt)
        build = tempfile.mkdtemp(prefix="harness-discover-")
        try:
            os.makedirs(os.path.join(build, "tests", "unit"))
            ours = os.path.join(build, "tests", "unit", "harness.py")
            with open(ours, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(ours, 0o755)
            found = dict((os.path.basename(p), p)
                         for _, p, _ in rt.discover(build, ["unit"]))
            self.assertEqual(found["harness.py"], ours)
            # what only the source tree has is still found there
            self.assertEqual(found["checkpatch.sh"], os.path.join(
                TOP, "tests", "unit", "checkpatch.sh"))
        finally:
            shutil.rmtree(build)


class Except(unittest.TestCase):
    """runtests.py --except: the test named is left out; a name that is no
    test is an error, so that a renamed test is not run again unseen."""

    def runtests(self, *args):
        return subprocess.run(
            [sys.executable, os.path.join(TOP, "tests", "runtests.py"),
             "--builddir", TOP, "--tier", "unit"] + list(args),
            capture_output=True, text=True)

    def test_left_out(self):
        p = self.runtests("--except", "tree", "--preflight", "harness")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = self.runtests("--except", "tree", "--preflight", "tree")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no such test: tree", p.stdout)

    def test_unknown_name_refused(self):
        p = self.runtests("--except", "no-such-test", "--preflight")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--except: no such test: no-such-test", p.stderr)


class UserDirs(unittest.TestCase):
    """A process that runs as another user (a QEMU as nobody, libvirt's
    QEMU user) gets its files from user_dir(), wherever the checkout is:
    from a checkout in a 0700 directory, as a clone under /root is, nobody
    still opens every file the harness hands it."""

    def setUp(self):
        self.saved = os.environ.get("SIVSHM_LOGDIR")
        self.tmp = tempfile.mkdtemp(prefix="harness-user-")   # mode 0700
        self.logs = os.path.join(self.tmp, "logs", "t")
        os.environ["SIVSHM_LOGDIR"] = self.logs

    def tearDown(self):
        remove_user_dirs()
        if self.saved is None:
            del os.environ["SIVSHM_LOGDIR"]
        else:
            os.environ["SIVSHM_LOGDIR"] = self.saved
        shutil.rmtree(self.tmp)

    def need_root(self):
        if os.geteuid() != 0:
            self.skipTest("root only can make a directory for nobody")

    def test_modes(self):
        self.need_root()
        u = user_dir(NOBODY, NOBODY)
        top = os.path.dirname(u.path)
        self.assertEqual(os.path.dirname(top), vmuser.SHARED_PARENT)
        self.assertNotEqual(os.path.commonpath([u.path, TOP]), TOP)
        st = os.lstat(top)
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (0, 0o711))
        st = os.lstat(u.path)
        self.assertEqual((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)),
                         (NOBODY, NOBODY, 0o700))
        self.assertTrue(user_can(NOBODY, NOBODY, u.path,
                                 os.W_OK | os.X_OK))
        self.assertIs(user_dir(NOBODY, NOBODY), u)

    def test_reach_out_of_a_closed_checkout(self):
        """A link in the checkout to an open cache is followed there; a
        file of the closed checkout itself is copied out."""
        self.need_root()
        checkout = os.path.join(self.tmp, "repo")
        cache = tempfile.mkdtemp(prefix="harness-cache-")
        self.addCleanup(shutil.rmtree, cache)
        os.chmod(cache, 0o755)
        os.makedirs(checkout)
        with open(os.path.join(cache, "vmlinuz"), "w") as f:
            f.write("kernel")
        os.symlink(cache, os.path.join(checkout, "kernel"))
        qemu = os.path.join(checkout, "qemu")
        with open(qemu, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(qemu, 0o755)
        self.assertFalse(user_can(NOBODY, NOBODY, qemu, os.X_OK))

        u = user_dir(NOBODY, NOBODY)
        kernel = u.reach(os.path.join(checkout, "kernel", "vmlinuz"))
        self.assertEqual(kernel, os.path.join(cache, "vmlinuz"))
        copied = u.reach(qemu, os.X_OK)
        self.assertEqual(os.path.dirname(copied), u.path)
        self.assertTrue(user_can(NOBODY, NOBODY, copied, os.X_OK))

        # At exit: the test's own files go to its log directory, the
        # inputs copied in do not, and the directory is removed.
        with open(os.path.join(u.path, "g.console"), "w") as f:
            f.write("console")
        remove_user_dirs()
        self.assertEqual(os.listdir(self.logs), ["g.console"])
        self.assertFalse(os.path.exists(u.path))

    def test_running_refuses_a_log_directory_outside(self):
        u = user_dir(os.geteuid(), os.getegid())
        g = Guest("t", "true\n", kernel=Staging.Kernel())
        with self.assertRaisesRegex(HarnessError, r"its files go in"):
            Running(g, self.logs, user=u)

    def test_no_test_switches_user_itself(self):
        """A test that ran a process as another user by its own means
        would choose that process's paths itself, the checkout's too."""
        pat = re.compile(r"\b(setpriv|runuser|sudo|su)\b[\"']?,?\s*[\"']?-|"
                         r"os\.set(res|re)?[ug]id\(|preexec_fn=|"
                         r"extra_groups=")
        found = []
        for f in sorted(glob.glob(os.path.join(TOP, "tests", "vm", "*.py")) +
                        glob.glob(os.path.join(TOP, "tests", "vm", "tests",
                                               "*.py"))):
            with open(f) as fh:
                for n, line in enumerate(fh, 1):
                    if (pat.search(line)
                            and not line.lstrip().startswith("#")):
                        found.append("%s:%d: %s" % (os.path.relpath(f, TOP),
                                                    n, line.strip()))
        self.assertEqual(found, [], "run it through Running(..., user="
                         "user_dir(uid, gid)) instead")


if __name__ == "__main__":
    unittest.main()

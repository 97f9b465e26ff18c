"""What comes back from a guest: the frames of its result channel, the
kernel splats of its console and log, and the Result they make; and how a
VM test reports its own verdict (check, skip, main).

Frames (docs/testing.md), sent by the guest's /init (tests/vm/guest/init.sh)
over the virtio-serial port RESULT_PORT:

    SVT1 <kind> <length>\\n<length bytes of payload>\\n
"""

import os
import re
import sys

PASS, FAIL, SKIP = 0, 1, 77
RESULT_PORT = "sivshm.result"
FRAME_MAGIC = b"SVT1"
FRAME_MAX = 64 << 20
# What QEMU prints when KVM_RUN fails (kvm_cpu_exec); the guest is stopped.
KVM_RUN_FAILED = "error: kvm run failed"
# What level 1 says of a level 2 killed at its bound before its script ran
# (no "vmtest: running NAME" on its console): its clock stopped in its boot,
# TCG's nested SVM losing its timer (docs/testing.md).
L2_BOOT_STALL = "lost in its boot, before its script ran"

# Kernel lines that make a test fail, whatever the test printed.
SPLAT_RE = re.compile(
    r"(BUG: |WARNING: |Oops|general protection fault|kernel BUG at|"
    r"Kernel panic|possible circular locking|possible recursive locking|"
    r"inconsistent lock state|suspicious RCU usage|"
    r"rcu: INFO: rcu_\w+ (self-)?detected stall|"
    r"INFO: task .* blocked for more than|UBSAN: |KASAN: |"
    r"Call Trace:)")
# Only kernel lines are scanned on the console: they carry a timestamp.
KLINE_RE = re.compile(r"^\[\s*\d+\.\d+\] ")


class FrameError(Exception):
    pass


class HarnessError(Exception):
    """The harness cannot run the test (missing build product, bad use)."""


def encode_frame(kind, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return b"%s %s %d\n%s\n" % (FRAME_MAGIC, kind.encode(), len(payload),
                                payload)


_KIND_RE = re.compile(rb"^(out|dmesg|exit|file:[A-Za-z0-9._-]{1,64})$")


def parse_frames(data):
    """Split a result channel into [(kind, payload)], strictly.

    Raises FrameError on anything that is not a whole, well-formed frame;
    a guest that died mid-write leaves a truncated frame, and that must
    never pass for a result.
    """
    frames = []
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos, pos + 128)
        if nl < 0:
            raise FrameError("frame header without end at offset %d" % pos)
        fields = data[pos:nl].split(b" ")
        if len(fields) != 3 or fields[0] != FRAME_MAGIC:
            raise FrameError("bad frame header %r" % data[pos:nl])
        kind, length = fields[1], fields[2]
        if not _KIND_RE.match(kind):
            raise FrameError("bad frame kind %r" % kind)
        if not length.isdigit() or len(length) > 9:
            raise FrameError("bad frame length %r" % length)
        length = int(length)
        if length > FRAME_MAX:
            raise FrameError("frame of %d bytes is over the limit" % length)
        start = nl + 1
        end = start + length
        if end + 1 > len(data):
            raise FrameError("truncated %s frame" % kind.decode())
        if data[end:end + 1] != b"\n":
            raise FrameError("%s frame not terminated" % kind.decode())
        frames.append((kind.decode(), data[start:end]))
        pos = end + 1
    return frames


def find_splats(text, kernel_lines_only):
    """Lines of a kernel log that make a test fail."""
    found = []
    for line in text.splitlines():
        if kernel_lines_only and not KLINE_RE.match(line):
            continue
        if SPLAT_RE.search(line):
            found.append(line.strip())
    return found


class Result:
    """What came back from one guest."""

    def __init__(self, name, channel, console, timed_out, qemu_status,
                 stderr=b""):
        self.name = name
        self.status = None
        # QEMU's stderr: -trace output, and what KVM_RUN said when it failed.
        self.stderr = stderr.decode(errors="replace")
        # KVM refused to run the guest any more (KVM_RUN failed, as for a VM
        # a host module killed on purpose): QEMU stops it, nothing hung.
        self.killed = KVM_RUN_FAILED in self.stderr
        self.output = b""
        self.dmesg = b""
        self.files = {}
        self.splats = []
        self.lost = None
        self.timed_out = timed_out
        self.qemu_status = qemu_status
        try:
            frames = parse_frames(channel)
        except FrameError as e:
            frames = []
            self.lost = "result channel corrupt: %s" % e
        for kind, payload in frames:
            if self.status is not None:
                self.lost = "frame after the exit frame"
                break
            if kind == "out":
                self.output += payload
            elif kind == "dmesg":
                self.dmesg += payload
            elif kind.startswith("file:"):
                self.files[kind[5:]] = payload
            elif kind == "exit":
                if not payload.isdigit() or int(payload) > 255:
                    self.lost = "bad exit status %r" % payload
                    break
                self.status = int(payload)
        if self.status is None and self.lost is None and self.killed:
            pass
        elif self.status is None and self.lost is None:
            if timed_out:
                self.lost = "no result within the timeout (guest hung)"
            else:
                self.lost = ("QEMU exited (status %s) before the guest sent "
                             "a result (crash or panic)" % qemu_status)
        text = console.decode(errors="replace")
        self.splats = find_splats(text, kernel_lines_only=True)
        self.splats += find_splats(self.dmesg.decode(errors="replace"),
                                   kernel_lines_only=False)
        self.console = text

    @property
    def outcome(self):
        if self.killed and self.status is None:
            return "killed"
        if self.lost:
            return "lost"
        if self.splats:
            return "fail"
        if self.status == SKIP:
            return "skip"
        return "pass" if self.status == 0 else "fail"

    def describe(self):
        if self.outcome == "killed":
            why = self.stderr.strip().splitlines()[0]
        elif self.lost:
            why = self.lost
        elif self.splats:
            why = "kernel splat: %s" % self.splats[0]
        else:
            why = "exit status %d" % self.status
            # A guest program's T_ASSERT says where: keep its first one.
            asserted = re.search(r"^ASSERT \S+:\d+: .*$", self.text(),
                                 re.M)
            if asserted:
                why += ": " + asserted.group(0)
        return "%s: %s (%s)" % (self.name, self.outcome, why)

    def text(self):
        return self.output.decode(errors="replace")


# Level 1's own kernel in NMI context where it cannot be: TCG's emulation of
# nested SVM under interrupt load now and then does this (docs/testing.md).
EMULATOR_SPLAT = re.compile(r"scheduling while atomic: .*/0x0011|"
                            r"stack guard page was hit|"
                            r"at kernel/(softirq|context_tracking|smp)\.c")


# The line of opcode bytes an oops prints, the byte at RIP in <>.
CODE_LINE = re.compile(r"Code: ((?:[0-9a-f]{2} )*)<([0-9a-f]{2})>")


def stale_int3(r):
    """Why @r's guest failed, if it trapped on an int3 that was no longer
    in memory: the kernel's int3 oops whose Code line has no int3 (cc)
    just before RIP.  A kernel patching its text (text_poke_bp()) removes
    its int3s only after every CPU has serialized, so on hardware no CPU
    traps on one that is gone; TCG running a stale translation of the
    patched code does (docs/pibooster.md).  None if not that."""
    if r.outcome == "pass":
        return None
    text = r.console + "\n" + r.dmesg.decode(errors="replace")
    at = text.find("Oops: int3")
    if at < 0:
        return None
    m = CODE_LINE.search(text, at)
    if not m or m.group(1).split()[-1:] == ["cc"]:
        return None
    return ("an int3 trap with no int3 before RIP (%s <%s>): TCG ran a "
            "stale translation" % (" ".join(m.group(1).split()[-2:]),
                                   m.group(2)))


def emulator_fault(r1):
    """Why level 1 failed, or its level 2 never ran its script, if TCG's
    nested SVM is to blame; None if it is not."""
    stalls = [l for l in r1.text().splitlines() if L2_BOOT_STALL in l]
    if stalls:
        return stalls[0].strip()
    if r1.outcome == "pass":
        return None
    int3 = stale_int3(r1)
    if int3:
        return "level 1: " + int3
    if r1.lost:
        return "level 1 " + r1.lost
    bad = [s for s in r1.splats if EMULATOR_SPLAT.search(s)]
    return "level 1: " + bad[0] if bad else None


def check(cond, msg):
    """Assert in the host part of a VM test, with the caller's line."""
    if not cond:
        frame = sys._getframe(1)
        print("ASSERT %s:%d: %s" % (os.path.basename(frame.f_code.co_filename),
                                     frame.f_lineno, msg), flush=True)
        sys.exit(FAIL)


def skip(why):
    print("SKIP: " + why, flush=True)
    sys.exit(SKIP)


def main(fn):
    """Run a VM test function: exit 0, 1 or 77, never a traceback as pass."""
    try:
        fn()
    except HarnessError as e:
        print("harness: %s" % e, flush=True)
        if os.environ.get("CI"):
            sys.exit(FAIL)
        skip(str(e))
    sys.exit(PASS)

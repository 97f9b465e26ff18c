"""Kernel-in-QEMU test harness.

A VM test is a small host program that describes one or more guests
(kernel, initramfs contents, QEMU arguments, a script to run inside),
boots them with this project's QEMU and asserts on what came back.

What comes back travels over a dedicated virtio-serial port, named
RESULT_PORT, as a sequence of frames (docs/testing.md):

    SVT1 <kind> <length>\\n<length bytes of payload>\\n

The guest's /init sends the test's output ("out"), the kernel log after the
test ("dmesg"), any files the test asked to collect ("file:<name>") and,
last, the script's exit status ("exit").  Anything else, a truncated frame
or no "exit" frame at all, means the guest was lost: it crashed, panicked,
hung or was killed at its timeout, and the test fails.  A kernel splat (BUG,
WARNING, Oops, lockdep, RCU stall, ...) on the console or in the dmesg frame
also fails the test.

Configuration comes from the environment, set by tests/runtests.py:

    SIVSHM_QEMU       our qemu-system-x86_64
    SIVSHM_KERNEL     the fetched kernel (tests/vm/fetch-kernel.sh): KVER, root/
    SIVSHM_BUILDDIR   the build tree (modules, guest programs)
    SIVSHM_LOGDIR     where this test keeps its logs (consoles, channels)
    SIVSHM_ACCEL      kvm or tcg (probed once by the runner)
    SIVSHM_TEST_TIMEOUT  seconds the runner gives the whole test (0: none)
"""

import atexit
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PASS, FAIL, SKIP = 0, 1, 77
RESULT_PORT = "sivshm.result"
FRAME_MAGIC = b"SVT1"
FRAME_MAX = 64 << 20
# Where Debian puts the firmware our QEMU is built to look in
# (qemu-sivshm/build.sh: --firmwarepath).
FIRMWARE_DIRS = ("/usr/share/qemu", "/usr/share/seabios")
FIRMWARE_FILES = ("bios-256k.bin", "kvmvapic.bin", "linuxboot_dma.bin",
                  "linuxboot.bin")
TCG_ACCEL = ("-accel", "tcg,thread=multi", "-cpu", "max")
# What QEMU prints when KVM_RUN fails (kvm_cpu_exec); the guest is stopped.
KVM_RUN_FAILED = "error: kvm run failed"
KVM_ACCEL = ("-accel", "kvm", "-cpu", "host")
# Level 2 inside a TCG level 1: TCG's -cpu max reports XSAVE state sizes
# that disagree with the components it enables, and a 6.1 kernel booted on
# -cpu host there WARNs in fpu__init_system_xstate.  Level 2 goes without
# XSAVE (and the AVX family that needs it).
NESTED_ACCEL = ("-accel", "kvm", "-cpu", "host,-xsave")

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


def module_name(path):
    """kernel/arch/x86/kvm/kvm-amd.ko.xz -> kvm_amd"""
    base = re.sub(r"\.ko(\.(xz|zst|gz))?$", "", os.path.basename(path))
    return base.replace("-", "_")


def resolve_modules(modules_dep, names, builtin=""):
    """In-tree modules to insmod, dependencies first, each once.

    modules_dep is the text of modules.dep, builtin that of modules.builtin
    (a module built into this kernel needs no insmod: 6.12 has virtio_pci
    built in, 6.1 a module); names are module names ("kvm_amd" or
    "kvm-amd").  Returns paths relative to /lib/modules/KVER.
    """
    built_in = {module_name(p) for p in builtin.split()}
    deps = {}
    by_name = {}
    for line in modules_dep.splitlines():
        if ":" not in line:
            continue
        path, rest = line.split(":", 1)
        deps[path] = rest.split()
        by_name[module_name(path)] = path
    order = []

    def visit(path, stack):
        if path in order:
            return
        if path in stack:
            raise HarnessError("module dependency loop at %s" % path)
        for dep in deps.get(path, []):
            visit(dep, stack + [path])
        order.append(path)

    for name in names:
        key = name.replace("-", "_")
        if key in built_in:
            continue
        if key not in by_name:
            raise HarnessError("no in-tree module %s in modules.dep" % name)
        visit(by_name[key], [])
    return order


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
            # A guest program's VM_ASSERT says where: keep its first one.
            asserted = re.search(r"^ASSERT \S+:\d+: .*$", self.text(),
                                 re.M)
            if asserted:
                why += ": " + asserted.group(0)
        return "%s: %s (%s)" % (self.name, self.outcome, why)

    def text(self):
        return self.output.decode(errors="replace")


def _env_path(var, what):
    val = os.environ.get(var)
    if not val:
        raise HarnessError("%s is not set: %s (run through make check)"
                           % (var, what))
    return val


class Kernel:
    """A kernel fetched by tests/vm/fetch-kernel.sh."""

    def __init__(self, path=None):
        self.path = path or _env_path("SIVSHM_KERNEL", "the fetched kernel")
        with open(os.path.join(self.path, "KVER")) as f:
            self.kver = f.read().strip()
        self.root = os.path.join(self.path, "root")
        self.vmlinuz = os.path.join(self.root, "boot", "vmlinuz-" + self.kver)
        self.moddir = os.path.join(self.root, "lib", "modules", self.kver)
        with open(os.path.join(self.moddir, "modules.dep")) as f:
            self.modules_dep = f.read()
        try:
            with open(os.path.join(self.moddir, "modules.builtin")) as f:
                self.modules_builtin = f.read()
        except FileNotFoundError:
            self.modules_builtin = ""


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


INIT_SCRIPT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm /tmp /run
mount -t tmpfs tmp /tmp
mount -t tmpfs shm /dev/shm
while read -r m opts; do
	insmod "/lib/modules/$(uname -r)/$m" $opts ||
		echo "vmtest: insmod $m failed"
done < /etc/vmtest/kmods

port=
i=0
while [ -z "$port" ] && [ $i -lt 100 ]; do
	for d in /sys/class/virtio-ports/*; do
		[ "$(cat "$d/name" 2>/dev/null)" = "%(port)s" ] && port=/dev/${d##*/}
	done
	[ -n "$port" ] && [ -c "$port" ] || { port=; sleep 0.1; }
	i=$((i + 1))
done
if [ -z "$port" ]; then
	echo "vmtest: no result port %(port)s"
	poweroff -f
fi

frame() {
	printf 'SVT1 %%s %%d\n' "$1" "$(wc -c < "$2")"
	cat "$2"
	printf '\n'
}

echo "vmtest: running %(name)s"
cd /tmp
{ sh -e /etc/vmtest/test.sh; echo $? > /tmp/vmtest.status; } 2>&1 |
	tee /tmp/vmtest.out
status=$(cat /tmp/vmtest.status)
echo "vmtest: %(name)s exited with $status"
dmesg > /tmp/vmtest.dmesg
echo "$status" > /tmp/vmtest.exit
{
	frame out /tmp/vmtest.out
	frame dmesg /tmp/vmtest.dmesg
	for f in $(cat /etc/vmtest/collect); do
		[ -f "$f" ] && frame "file:${f##*/}" "$f"
	done
	printf 'SVT1 exit %%d\n%%s\n' "${#status}" "$status"
} > "$port"
%(after)s
poweroff -f
"""


class Guest:
    """One guest: what its initramfs holds and how QEMU runs it.

    script      shell run by /init (sh -e); its exit status is the result
    kmods       in-tree modules to load at boot, dependencies resolved
    kmod_opts   {module name: "param=value ..."} for those modules
    modules     our .ko files, copied to /lib/modules/extra/
    programs    host binaries (static or not) copied to /bin
    files       {guest path: host path (str) or content (bytes)}
    collect     guest paths sent back as file:<basename> frames
    qemu_args   extra QEMU arguments (devices, machine options)
    """

    def __init__(self, name, script, kmods=(), modules=(), programs=(),
                 files=None, collect=(), qemu_args=(), machine="pc",
                 memory=512, smp=2, cmdline="", kernel=None, kmod_opts=None):
        self.name = name
        self.script = script
        self.kmods = ["virtio_pci", "virtio_console"] + list(kmods)
        self.kmod_opts = {k.replace("-", "_"): v
                          for k, v in (kmod_opts or {}).items()}
        self.modules = list(modules)
        self.programs = list(programs)
        self.files = dict(files or {})
        self.collect = list(collect)
        self.qemu_args = list(qemu_args)
        self.machine = machine
        self.memory = memory
        self.smp = smp
        self.cmdline = cmdline
        self.kernel = kernel or Kernel()
        self.hold = os.environ.get("SIVSHM_VM_HOLD") == name

    def build_initramfs(self, path):
        """Write an uncompressed newc cpio of this guest's root to path."""
        with tempfile.TemporaryDirectory(prefix="vmtest-root-") as root:
            self._stage(root)
            names = subprocess.run(
                "find . -mindepth 1 | LC_ALL=C sort", shell=True, cwd=root,
                check=True, capture_output=True).stdout
            with open(path, "wb") as out:
                subprocess.run(["cpio", "--quiet", "-o", "-H", "newc",
                                "-R", "0:0"], cwd=root, input=names,
                               stdout=out, check=True)

    def _put(self, root, guest_path, src):
        """Place src in the guest at guest_path: bytes are the content,
        a str is the path of a host file to copy."""
        dst = os.path.join(root, guest_path.lstrip("/"))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if isinstance(src, bytes):
            with open(dst, "wb") as f:
                f.write(src)
            return dst
        if not os.path.exists(src):
            raise HarnessError("%s: %s is missing (not built?)"
                               % (self.name, src))
        shutil.copy2(src, dst)
        return dst

    def _stage(self, root):
        for d in ("bin", "sbin", "etc/vmtest", "proc", "sys", "dev", "tmp",
                  "lib/modules/extra", "usr/bin", "usr/sbin"):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        busybox = shutil.which("busybox") or "/bin/busybox"
        self._put(root, "/bin/busybox", busybox)
        after = "exec sh </dev/console >/dev/console 2>&1" if self.hold else ""
        init = INIT_SCRIPT % {"port": RESULT_PORT, "name": self.name,
                              "after": after}
        os.chmod(self._put(root, "/init", init.encode()), 0o755)
        self._put(root, "/etc/vmtest/test.sh", self.script.encode())
        self._put(root, "/etc/vmtest/collect",
                  "".join(p + "\n" for p in self.collect).encode())
        kmods = resolve_modules(self.kernel.modules_dep, self.kmods,
                                self.kernel.modules_builtin)
        for m in kmods:
            self._put(root, "/lib/modules/%s/%s" % (self.kernel.kver, m),
                      os.path.join(self.kernel.moddir, m))
        self._put(root, "/etc/vmtest/kmods",
                  "".join("%s %s\n" % (m, self.kmod_opts.get(module_name(m),
                                                              ""))
                          for m in kmods).encode())
        for m in self.modules:
            self._put(root, "/lib/modules/extra/" + os.path.basename(m), m)
        for p in self.programs:
            dst = self._put(root, "/bin/" + os.path.basename(p), p)
            os.chmod(dst, 0o755)
        for gpath, src in self.files.items():
            self._put(root, gpath, src)

    def qemu_argv(self, qemu, vmlinuz, initrd, channel, console, accel):
        """The QEMU command line; used on the host and inside level 1.  No
        -L: our QEMU looks for firmware in FIRMWARE_DIRS itself, as it
        must when libvirt runs it."""
        # no_timer_check: on a loaded host a TCG guest's timer can miss the
        # boot-time IO-APIC check's window ("IO-APIC + timer doesn't work!").
        append = ("console=ttyS0 panic=-1 oops=panic printk.time=1 "
                  "nokaslr rcupdate.rcu_cpu_stall_timeout=60 no_timer_check "
                  + self.cmdline)
        argv = [qemu, "-nodefaults", "-display", "none", "-no-reboot",
                "-machine", self.machine, "-m", str(self.memory),
                "-smp", str(self.smp)]
        argv += list(accel)
        argv += ["-kernel", vmlinuz, "-initrd", initrd,
                 "-append", append.strip(),
                 "-serial", ("mon:stdio" if self.hold
                             else "file:" + console),
                 "-device", "virtio-serial-pci,id=vmtest-serial",
                 "-chardev", "file,id=vmtest-result,path=" + channel,
                 "-device", "virtserialport,bus=vmtest-serial.0,"
                 "chardev=vmtest-result,name=" + RESULT_PORT]
        return argv + self.qemu_args


_running = []


@atexit.register
def _kill_leftovers():
    """A test that fails early leaves no guest running behind it."""
    for run in _running:
        run.kill()


def _terminated(signo, frame):
    sys.exit(FAIL)      # through atexit: no guest outlives a killed test


signal.signal(signal.SIGTERM, _terminated)


class Qmp:
    """A QMP client on a QEMU's unix socket: cmd() returns the answer of one
    command (an exception for an error unless error_ok), events collects
    what QEMU said in between."""

    def __init__(self, path, timeout=30):
        deadline = time.monotonic() + timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        while True:
            try:
                self.sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    raise HarnessError("no QMP socket at " + path)
                time.sleep(0.05)
        self.sock.settimeout(timeout)
        self.buf = b""
        self.events = []
        self._read()                            # the greeting
        self.cmd("qmp_capabilities")

    def _read(self):
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise HarnessError("QEMU closed its QMP socket")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def send(self, name, **args):
        """Send a command without waiting: answer() takes its answer."""
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")

    def cmd(self, name, error_ok=False, **args):
        self.send(name, **args)
        return self.answer(name, error_ok)

    def answer(self, name, error_ok=False):
        while True:
            r = self._read()
            if "event" in r:
                self.events.append(r)
                continue
            if "error" in r and not error_ok:
                raise HarnessError("QMP %s: %s" % (name, r["error"]["desc"]))
            return r

    def wait_event(self, name, timeout=60, **data):
        """Wait for event @name whose data has every item of @data."""
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e["event"] == name and all(
                        e.get("data", {}).get(k) == v for k, v in data.items()):
                    return self.events.pop(i)
            left = deadline - time.monotonic()
            if left <= 0:
                raise HarnessError("no %s event in %d s" % (name, timeout))
            self.sock.settimeout(left)
            try:
                self.events.append(self._read())
            except socket.timeout:
                pass

    def close(self):
        self.sock.close()


class Running:
    """A booted guest on the host; with qmp=True, its QMP monitor is at
    self.qmp_path (connect with Qmp(run.qmp_path))."""

    def __init__(self, guest, logdir, accel=None, qemu=None, qmp=False):
        self.guest = guest
        self.logdir = logdir
        os.makedirs(logdir, exist_ok=True)
        self.initrd = os.path.join(logdir, guest.name + ".cpio")
        self.channel = os.path.join(logdir, guest.name + ".channel")
        self.console = os.path.join(logdir, guest.name + ".console")
        guest.build_initramfs(self.initrd)
        for p in (self.channel, self.console):
            if os.path.exists(p):
                os.unlink(p)
        accel = accel or host_accel()
        qemu = qemu or _env_path("SIVSHM_QEMU", "our qemu-system-x86_64")
        self.argv = guest.qemu_argv(qemu, guest.kernel.vmlinuz, self.initrd,
                                    self.channel,
                                    self.console, accel)
        self.qmp_path = None
        if qmp:
            self.qmp_path = os.path.join(logdir, guest.name + ".qmp")
            self.argv += ["-qmp", "unix:%s,server=on,wait=off"
                          % self.qmp_path]
        with open(os.path.join(logdir, guest.name + ".cmdline"), "w") as f:
            f.write(" ".join(self.argv) + "\n")
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


def log(msg):
    print("vmtest: " + msg, flush=True)


def logdir():
    d = os.environ.get("SIVSHM_LOGDIR")
    if not d:
        d = tempfile.mkdtemp(prefix="vmtest-")
    os.makedirs(d, exist_ok=True)
    return d


def host_accel():
    return KVM_ACCEL if os.environ.get("SIVSHM_ACCEL") == "kvm" else TCG_ACCEL


# Console lines boot() shows of a guest that was lost.
CONSOLE_TAIL = 8


def boot(guest, timeout=120, accel=None):
    """Boot one guest, wait for it, and return its Result.  A nested level 1
    made with emulator_retries is tried again when it failed through the
    emulator, not through the code under test."""
    attempts = getattr(guest, "emulator_retries", 0) + 1
    budget = int(os.environ.get("SIVSHM_TEST_TIMEOUT") or 0)
    if budget and attempts * timeout > budget:
        raise HarnessError("%s: %d attempt(s) of %d s do not fit in the %d s "
                           "the runner gives the test"
                           % (guest.name, attempts, timeout, budget))
    for attempt in range(1, attempts + 1):
        r = Running(guest, logdir(), accel=accel).wait(timeout)
        if r.lost:
            # The console's last lines say where a lost guest stopped.
            for ln in r.console.rstrip().splitlines()[-CONSOLE_TAIL:]:
                log("  console: " + ln.rstrip())
        fault = r.outcome != "pass" and emulator_fault(r)
        if not fault or attempt == attempts:
            return r
        log("attempt %d of %d: %s (TCG's nested SVM, not the code under "
            "test)" % (attempt, attempts, fault))
    return r


def builddir(*parts):
    return os.path.join(_env_path("SIVSHM_BUILDDIR", "the build tree"),
                        *parts)


def nested(l1_script, l2, l1_kmods=(), l1_args=(), l1_machine="q35",
           l1_memory=2048, l2_timeout=180, l2_collect=(), emulator_retries=0,
           **l1_opts):
    """A level-1 guest that boots level-2 guests with -enable-kvm under our
    QEMU.

    l2 is a Guest or a list of them.  Level 1 carries our QEMU, its shared
    libraries and firmware, and each level-2 guest's kernel and initramfs;
    l1_script runs with these defined:
        run_l2 [NAME]     boot NAME (default: the first) and wait for it
        start_l2 NAME     boot NAME in the background
        wait_l2           wait for every guest start_l2 booted
        wait_l2_console NAME PATTERN
                          wait until NAME's console shows PATTERN; fails
                          when NAME ended without it
    each bounded by l2_timeout seconds of level 1's clock.  A level-2
    guest's channel and console come back as file:NAME.channel and
    file:NAME.console, and the level-1 files in l2_collect (the level-2
    QEMUs' logs, say) as file:<basename>.  Check the outcome with nested_result().

    emulator_retries: boot() tries a level 1 that failed through TCG's
    nested SVM (emulator_fault) again, this many times at most.
    """
    l2s = list(l2) if isinstance(l2, (list, tuple)) else [l2]
    qemu = _env_path("SIVSHM_QEMU", "our qemu-system-x86_64")
    files = {}
    for lib in shared_libraries(qemu):
        files[lib] = lib
    files["/usr/bin/qemu-system-x86_64"] = qemu
    for name, src in firmware_files().items():
        files["/usr/share/qemu/" + name] = src
    files["/l2/vmlinuz"] = l2s[0].kernel.vmlinuz
    staging = tempfile.mkdtemp(prefix="vmtest-l2-")
    collect = []
    for g in l2s:
        if g.kernel.vmlinuz != l2s[0].kernel.vmlinuz:
            raise HarnessError("level-2 guests must share one kernel")
        initrd = os.path.join(staging, g.name + ".cpio")
        g.build_initramfs(initrd)
        files["/l2/%s.cpio" % g.name] = initrd
        argv = g.qemu_argv("/usr/bin/qemu-system-x86_64", "/l2/vmlinuz",
                           "/l2/%s.cpio" % g.name, "/tmp/%s.channel" % g.name,
                           "/tmp/%s.console" % g.name, NESTED_ACCEL)
        files["/l2/%s.sh" % g.name] = ("exec " + " ".join(
            "'%s'" % a.replace("'", "'\\''") for a in argv) + "\n").encode()
        collect += ["/tmp/%s.%s" % (g.name, what) for what in
                    ("channel", "console", "stderr", "status")]
    script = (r"""# Seconds since level 1 booted, from the clock: a loop's own ticks
# under TCG run slower than they say.
now() { local t _; read t _ </proc/uptime; echo ${t%%.*}; }
run_l2() {
	n=${1:-%(first)s}
	sh "/l2/$n.sh" 2> "/tmp/$n.stderr" &
	pid=$!
	echo "vmtest: level 2 $n started" >/dev/kmsg
	local end
	end=$(($(now) + %(t)d))
	while kill -0 $pid 2>/dev/null; do
		# A guest KVM refuses to run is stopped, not ended, by QEMU.
		if grep -q "%(failed)s" "/tmp/$n.stderr"; then
			echo "vmtest: level 2 $n: KVM_RUN failed"
			kill -9 $pid 2>/dev/null || true
			break
		fi
		if [ $(now) -ge $end ]; then
			echo "vmtest: level 2 $n: no end within %(t)d s"
			kill -9 $pid 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	status=0
	wait $pid || status=$?
	echo $status > "/tmp/$n.status"
	echo "vmtest: level 2 $n ended: $status" >/dev/kmsg
	[ $status -eq 0 ] || echo "vmtest: level 2 $n QEMU exited with $status"
	cat "/tmp/$n.stderr"
}
l2_pids=
start_l2() {
	run_l2 "$1" &
	l2_pids="$l2_pids $!"
}
wait_l2() {
	for p in $l2_pids; do wait $p; done
	l2_pids=
}
wait_l2_console() {
	local end
	end=$(($(now) + %(t)d))
	until grep -q "$2" "/tmp/$1.console" 2>/dev/null; do
		if [ -e "/tmp/$1.status" ] || [ $(now) -ge $end ]; then
			grep -q "$2" "/tmp/$1.console" && return 0
			echo "vmtest: level 2 $1: no '$2' on its console"
			return 1
		fi
		sleep 0.2
	done
}
""" % {"t": l2_timeout, "first": l2s[0].name,
       "failed": KVM_RUN_FAILED}) + l1_script
    l1 = Guest(l2s[0].name + "-l1", script,
               kmods=["kvm", "kvm_amd"] + list(l1_kmods), files=files,
               collect=collect + list(l2_collect), qemu_args=l1_args,
               machine=l1_machine, memory=l1_memory, **l1_opts)
    l1._staging = staging
    l1.emulator_retries = emulator_retries
    return l1


def nested_result(l1_result, l2_name):
    """The level-2 Result carried back inside a level-1 Result: its channel,
    console, QEMU's stderr and exit status.  A level-2 guest whose KVM_RUN
    failed (killed on purpose by a host module) has outcome "killed"."""
    files = l1_result.files
    status = files.get(l2_name + ".status", b"").strip().decode()
    return Result(l2_name, files.get(l2_name + ".channel", b""),
                  files.get(l2_name + ".console", b""), False,
                  int(status) if status.isdigit() else "unknown",
                  files.get(l2_name + ".stderr", b""))


# Level 1's own kernel in NMI context where it cannot be: TCG's emulation of
# nested SVM under interrupt load now and then does this (docs/testing.md).
EMULATOR_SPLAT = re.compile(r"scheduling while atomic: .*/0x0011|"
                            r"stack guard page was hit|"
                            r"at kernel/(softirq|context_tracking|smp)\.c")


def emulator_fault(r1):
    """Why level 1 itself failed, if TCG's nested SVM is to blame."""
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

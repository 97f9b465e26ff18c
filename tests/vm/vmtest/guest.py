"""The guest: the kernel it boots, what its initramfs holds (the in-tree
modules it loads, our modules and programs, /init from
tests/vm/guest/init.sh and the test's script), its QEMU command line and
kernel command line; and boot(), which runs one and returns its Result."""

import os
import re
import shlex
import shutil
import subprocess
import tempfile

from .env import env_path, log, logdir
from .qemu import Running
from .result import RESULT_PORT, HarnessError, emulator_fault, stale_int3

# The shell the harness runs in guests (tests/vm/guest/*.sh).
GUEST_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                         "guest")


def guest_sh(name):
    """The path of tests/vm/guest/@name, a shell file for the guests."""
    return os.path.join(GUEST_DIR, name)


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


class Kernel:
    """A kernel fetched by tests/vm/fetch-kernel.sh."""

    def __init__(self, path=None):
        self.path = path or env_path("SIVSHM_KERNEL", "the fetched kernel")
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


class Guest:
    """One guest: what its initramfs holds and how QEMU runs it.

    script      shell run by /init (sh -e); its exit status is the result
    shell_libs  shell files (tests/vm/guest/*.sh) the script sources first,
                from /etc/vmtest/lib/
    env         {name: value} exported to the script
    kmods       in-tree modules to load at boot, dependencies resolved
    kmod_opts   {module name: "param=value ..."} for those modules
    modules     our .ko files, copied to /lib/modules/extra/
    programs    host binaries (static or not) copied to /bin
    files       {guest path: host path (str), content (bytes), or a
                function that writes the file at the host path it is given}
    collect     guest paths sent back as file:<basename> frames
    qemu_args   extra QEMU arguments (devices, machine options)
    """

    def __init__(self, name, script, kmods=(), modules=(), programs=(),
                 files=None, collect=(), qemu_args=(), machine="pc",
                 memory=512, smp=2, cmdline="", kernel=None, kmod_opts=None,
                 shell_libs=(), env=None):
        self.name = name
        self.script = script
        self.shell_libs = list(shell_libs)
        self.env = dict(env or {})
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
        # A level 1 carrying our QEMU (nested()): the QEMU that runs it is
        # the machine's stand-in, SIVSHM_LEVEL0_QEMU where that is set.
        self.level1 = False

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
        a str is the path of a host file to copy, a function writes the
        file at the path it is given."""
        dst = os.path.join(root, guest_path.lstrip("/"))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if isinstance(src, bytes):
            with open(dst, "wb") as f:
                f.write(src)
            return dst
        if callable(src):
            src(dst)
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
        os.chmod(self._put(root, "/init", guest_sh("init.sh")), 0o755)
        env = dict(self.env, VMTEST_NAME=self.name, VMTEST_PORT=RESULT_PORT,
                   VMTEST_HOLD="1" if self.hold else "")
        self._put(root, "/etc/vmtest/env", "".join(
            "%s=%s\n" % (k, shlex.quote(v)) for k, v in env.items()).encode())
        sources = ""
        for lib in self.shell_libs:
            gpath = "/etc/vmtest/lib/" + os.path.basename(lib)
            self._put(root, gpath, lib)
            sources += ". %s\n" % gpath
        self._put(root, "/etc/vmtest/test.sh",
                  (sources + self.script).encode())
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



# Console lines boot() shows of a guest that was lost.
CONSOLE_TAIL = 8


def boot(guest, timeout=120, accel=None, emulator_retries=0):
    """Boot one guest, wait for it, and return its Result.  A guest that
    failed through the emulator, not through the code under test, is tried
    again, emulator_retries times at most: a nested level 1 for
    emulator_fault(), any other guest for stale_int3()."""
    attempts = emulator_retries + 1
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
        # A lost level 1 is the nested SVM's; a lost guest of any other
        # kind is the test's, but for a stale int3.
        fault = emulator_fault(r) if guest.level1 else stale_int3(r)
        if not fault or attempt == attempts:
            return r
        log("attempt %d of %d: %s (the emulator, not the code under test)"
            % (attempt, attempts, fault))
    return r

#!/usr/bin/env python3
"""sivshm domains under a real libvirtd (Debian 12's libvirt 9.0;
libvirt-domains-11 runs this test under Debian 13's 11.3), which this test
starts itself, without systemd, with the built hook installed as
/etc/libvirt/hooks/qemu.d/50-sivshm and the domains written by
sivshm-virt-xml.  Our QEMU passes libvirt's capability probe; the domains
validate and each define takes under 5 s; a reducer started before its
mapper is refused by the hook at once, with the hook's reason in virsh's
error; the mapper's socket appears in a directory the hook made for
QEMU's user and group, mode 0770; a second domain with a running reducer's
vm-id is refused; each reducer's QEMU holds its own slot's memfd and no
other; inside, the mapper VM sees both reducers and marks every slot, each
reducer VM finds its own markers and no other slot's, and all three power
off by themselves.  At release the hook removes the mapper's socket and,
for an unlink=off service, the slot files once its last domain is gone.
And a job: charcount across a mapper and 3 reducers gets the right total
although reducer 2's domain is destroyed mid-job and started again (it
rejoins its slot, its pending request intact), and then nothing of the
service is left: socket, leases, files, QEMU processes.

Everything it changes is undone at the end: its domains, both daemons,
the hook, /dev/kvm's owner and mode, its files in /tmp (its user_dir for
QEMU's user, whatever the checkout's parents let through)."""

import atexit
import grp
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import time
import xml.etree.ElementTree as ET
from vmtest import (RESULT_PORT, Result, builddir, check, env_path,
                    firmware_files, logdir, main, skip, user_can, user_dir)
from sivshm import Service

URI = "qemu:///system"
HOOK_DIR = "/etc/libvirt/hooks/qemu.d"
HOOK = HOOK_DIR + "/50-sivshm"
QEMU_CONF = "/etc/libvirt/qemu.conf"
# libvirt's QEMU user and group when qemu.conf names none (Debian's build).
QEMU_USER = QEMU_GROUP = "libvirt-qemu"
QEMU_LOG_DIR = "/var/log/libvirt/qemu"
PID_DIR = "/run/libvirt/qemu"
LEASE_DIR = "/run/sivshm-hook"          # the hook's state (hook.h)
QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
SIVSHM_NS = "https://sivshm-kvm.example/xmlns/sivshm/1"
PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
QUICK = 5.0             # seconds: a define, a refusal by the hook
GUEST_TIMEOUT = 240     # seconds: boot to power-off of a TCG guest, loaded
WAIT_MS = 300000        # the guests' own waits

ET.register_namespace("qemu", QEMU_NS)
ET.register_namespace("sivshm", SIVSHM_NS)


def tail(path, n=15):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()[-n:]
    except OSError as e:
        return "    (%s)" % e
    return "\n".join("    | " + ln for ln in lines)


class Host:
    """What this test changes on the host; cleanup() undoes all of it."""

    def __init__(self):
        self.log = logdir()
        self.work = None
        self.daemons = []               # [(name, Popen)], in start order
        self.domains = []
        self.services = []
        self.kvm = None                 # /dev/kvm's (uid, gid, mode) as found
        self.hook = False
        self.made_hook_dir = False
        self.made_state_dir = not os.path.exists(LEASE_DIR)
        self.done = False

    def diag(self, *domains):
        """The daemon's log and these domains' QEMU logs, for a failure."""
        out = ["libvirtd's log (tail):",
               tail(os.path.join(self.log, "libvirtd.log"))]
        for d in domains:
            out += ["%s/%s.log (tail):" % (QEMU_LOG_DIR, d),
                    tail(os.path.join(QEMU_LOG_DIR, d + ".log"))]
        return "\n".join(out)

    def spawn(self, name, argv):
        out = open(os.path.join(self.log, name + ".log"), "wb")
        # A session of its own: the runner's SIGTERM at a timeout reaches
        # this test only, whose cleanup stops the daemons in order.
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=subprocess.STDOUT, start_new_session=True,
                             env=dict(os.environ, PATH=PATH))
        out.close()
        self.daemons.append((name, p))
        return p

    def libvirtd_up(self):
        return any(n == "libvirtd" and p.poll() is None
                   for n, p in self.daemons)

    def cleanup(self):
        """Each step on its own: one that fails does not stop the rest."""
        if self.done:
            return
        self.done = True
        for step in (self._stop_domains, self._stop_daemons,
                     self._drop_leases, self._drop_state_dir,
                     self._remove_hook, self._restore_kvm,
                     self._keep_logs):
            try:
                step()
            except Exception as e:
                print("cleanup: %s: %s" % (step.__name__, e), flush=True)

    def _stop_domains(self):
        # QEMUs outlive libvirtd: stop the domains through it first.
        for d in reversed(self.domains):
            if self.libvirtd_up():
                virsh("destroy", d, timeout=60)
                virsh("undefine", d, timeout=60)
            else:
                kill_qemu(d)

    def _stop_daemons(self):
        for name, p in reversed(self.daemons):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def _drop_leases(self):
        # Leases of a domain that stopped without libvirt: ours only.
        for svc in self.services:
            for f in leases(svc):
                os.unlink(os.path.join(LEASE_DIR, f))

    def _drop_state_dir(self):
        # The hook's state directory, if this run's hook made it: by now
        # it holds the lock file only.
        if self.made_state_dir and os.path.isdir(LEASE_DIR):
            os.unlink(os.path.join(LEASE_DIR, "lock"))
            os.rmdir(LEASE_DIR)

    def _remove_hook(self):
        if self.hook:
            os.unlink(HOOK)
        if self.made_hook_dir:
            os.rmdir(HOOK_DIR)

    def _restore_kvm(self):
        if self.kvm:
            uid, gid, mode = self.kvm
            os.chown("/dev/kvm", uid, gid)
            os.chmod("/dev/kvm", mode)

    def _keep_logs(self):
        # The consoles, channels and XML in self.work are kept by the
        # harness at exit (user_dir()).
        for d in self.domains:
            src = os.path.join(QEMU_LOG_DIR, d + ".log")
            if os.path.exists(src):
                shutil.move(src, os.path.join(self.log, d + ".qemu.log"))


def virsh(*args, timeout=120):
    """Run virsh; returns (CompletedProcess, seconds)."""
    t = time.monotonic()
    p = subprocess.run(["virsh", "-c", URI] + list(args), capture_output=True,
                       text=True, timeout=timeout,
                       env=dict(os.environ, PATH=PATH))
    return p, time.monotonic() - t


def kill_qemu(dom):
    """The QEMU of @dom, if libvirtd is gone and it is still there."""
    try:
        with open(os.path.join(PID_DIR, dom + ".pid")) as f:
            pid = int(f.read())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            if b"guest=" + dom.encode() + b"," in f.read():
                os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError):
        pass


def leases(svc):
    try:
        return sorted(f for f in os.listdir(LEASE_DIR)
                      if f.startswith(svc + "."))
    except FileNotFoundError:
        return []


def qemu_owner():
    """The user and group libvirt runs QEMU as: qemu.conf's user and group
    (the first setting counts), else Debian's default."""
    try:
        with open(QEMU_CONF) as f:
            conf = f.read()
    except FileNotFoundError:
        conf = ""
    ids = []
    for key, default, db in (("user", QEMU_USER, pwd.getpwnam),
                             ("group", QEMU_GROUP, grp.getgrnam)):
        m = re.search(r"^\s*%s\s*=\s*[\"']([^\"']*)[\"']" % key, conf, re.M)
        name = m.group(1) if m else default
        ids.append(int(name[1:]) if name.startswith("+") else db(name)[2])
    return ids


def edit(path, initrd, console, channel, name=None):
    """Where the test must differ from the generator: each VM's own
    initramfs, the console to a file and the harness's result channel."""
    tree = ET.parse(path)
    dom = tree.getroot()
    if name:
        dom.find("name").text = name
    dom.find("os/initrd").text = initrd
    # panic=-1 reboots a guest that panicked: end it, as -no-reboot does
    # for the harness's guests, rather than boot it again.
    dom.find("on_reboot").text = "destroy"
    devs = dom.find("devices")
    for tag in ("serial", "console", "channel"):
        for e in devs.findall(tag):
            devs.remove(e)
    serial = ET.SubElement(devs, "serial", type="file")
    ET.SubElement(serial, "source", path=console)
    ET.SubElement(serial, "target", port="0")
    chan = ET.SubElement(devs, "channel", type="file")
    ET.SubElement(chan, "source", path=channel)
    ET.SubElement(chan, "target", type="virtio", name=RESULT_PORT)
    tree.write(path)


class Domains:
    """One service's domains: guests, initramfs, XML, defined."""

    def __init__(self, host, svc, nreducers, size, guests, append, kernel,
                 emulator, vtype, sockdir, extra=()):
        self.host = host
        self.svc = svc
        self.sock = os.path.join(sockdir, svc + ".sock")
        self.names = [g.name for g in guests]
        self.files = {}
        w = host.work
        for g in guests:
            f = {e: os.path.join(w, g.name + "." + e)
                 for e in ("cpio", "console", "channel", "xml")}
            g.build_initramfs(f["cpio"])
            self.files[g.name] = f
        gen = subprocess.run(
            [builddir("libvirt-hooks", "sivshm-virt-xml"), "--name", svc,
             "--size", size, "--reducers", str(nreducers), "--kernel", kernel,
             "--initrd", self.files[self.names[0]]["cpio"],
             "--append", append, "--emulator", emulator, "--type", vtype,
             "--socket-dir", sockdir, "--out-dir", w] + list(extra),
            capture_output=True, text=True)
        check(gen.returncode == 0, "sivshm-virt-xml: " + gen.stderr)
        for n in self.names:
            f = self.files[n]
            edit(f["xml"], f["cpio"], f["console"], f["channel"])
        host.services.append(svc)
        self.defined = {}
        self.started = {}

    def validate(self):
        for n in self.names:
            p = subprocess.run(["virt-xml-validate", self.files[n]["xml"],
                                "domain"], capture_output=True, text=True)
            check(p.returncode == 0, "%s does not validate:\n%s%s"
                  % (self.files[n]["xml"], p.stdout, p.stderr))

    def define(self, name, xml=None):
        self.host.domains.append(name)
        p, t = virsh("define", xml or self.files[name]["xml"])
        check(p.returncode == 0, "virsh define %s: %s\n%s"
              % (name, p.stderr.strip(), self.host.diag()))
        kvm = "absent"
        if os.path.exists("/dev/kvm"):
            st = os.stat("/dev/kvm")
            kvm = "%d:%d mode %04o" % (st.st_uid, st.st_gid,
                                       stat.S_IMODE(st.st_mode))
        check(t < QUICK, "virsh define %s took %.1f s (a capability re-probe "
              "on each lookup? /dev/kvm is %s)\n%s"
              % (name, t, kvm, self.host.diag()))
        self.defined[name] = t

    def start(self, name):
        for e in ("console", "channel"):
            if os.path.exists(self.files[name][e]):
                os.unlink(self.files[name][e])
        p, t = virsh("start", name)
        check(p.returncode == 0, "virsh start %s: %s\n%s"
              % (name, p.stderr.strip(), self.host.diag(name)))
        self.started[name] = (time.monotonic(), t)
        return t

    def refused(self, name, reason):
        """virsh start @name fails at once with the hook's @reason."""
        p, t = virsh("start", name)
        err = " ".join(p.stderr.split())
        check(p.returncode != 0, "%s started:\n%s" % (name, p.stdout))
        check("sivshm-hook: " + reason in err,
              "%s refused, but not by the hook's %r:\n%s\n%s"
              % (name, reason, err, self.host.diag(name)))
        check(t < QUICK, "the refusal of %s took %.1f s" % (name, t))
        st, _ = virsh("domstate", name)
        check(st.stdout.strip() == "shut off",
              "%s after its refusal: %s" % (name, st.stdout.strip()))
        return t, err[err.index("sivshm-hook: "):]

    def pid(self, name):
        with open(os.path.join(PID_DIR, name + ".pid")) as f:
            pid = int(f.read())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            check(b"guest=%s," % name.encode() in f.read(),
                  "pid %d is not %s's QEMU" % (pid, name))
        return pid

    def slot_fds(self, name):
        """The sivshm slot memfds @name's QEMU holds."""
        pid = self.pid(name)
        found = []
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if target.startswith("/memfd:sivshm-"):
                found.append(target)
        return sorted(found)

    def running(self):
        p, _ = virsh("list", "--name")
        check(p.returncode == 0, "virsh list: " + p.stderr)
        return set(p.stdout.split())

    def wait_ended(self, names, timeout=GUEST_TIMEOUT):
        """Wait until each of @names is shut off; boot-to-end seconds."""
        ended = {}
        deadline = time.monotonic() + timeout
        while True:
            up = self.running()
            now = time.monotonic()
            for n in names:
                if n not in up and n not in ended:
                    ended[n] = now - self.started[n][0]
            if len(ended) == len(names):
                return ended
            if now > deadline:
                late = [n for n in names if n not in ended]
                check(False, "%s still running after %d s; console:\n%s\n%s"
                      % (", ".join(late), timeout,
                         tail(self.files[late[0]]["console"]),
                         self.host.diag(*late)))
            time.sleep(0.25)

    def result(self, name):
        f = self.files[name]
        data = {}
        for e in ("channel", "console"):
            with open(f[e], "rb") as fh:
                data[e] = fh.read()
        qlog = os.path.join(QEMU_LOG_DIR, name + ".log")
        with open(qlog, "rb") as fh:
            qemu_log = fh.read()
        return Result(name, data["channel"], data["console"], False,
                      "unknown (libvirt's)", qemu_log)

    def wait_console(self, name, text, timeout):
        """Until @name's console shows @text."""
        def said():
            with open(self.files[name]["console"], errors="replace") as f:
                return text in f.read()
        check(wait_for(said, timeout), "%s never printed %r:\n%s"
              % (name, text, tail(self.files[name]["console"])))

    def destroy(self, name):
        p, _ = virsh("destroy", name)
        check(p.returncode == 0, "virsh destroy %s: %s" % (name, p.stderr))

    def undefine(self, name):
        p, _ = virsh("undefine", name)
        check(p.returncode == 0, "virsh undefine %s: %s" % (name, p.stderr))


def wait_for(cond, timeout):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def libvirtd_version():
    """libvirtd's --version line; the release SIVSHM_LIBVIRT_VERSION names
    (libvirt-domains-11's 11.3), if set, or a failure."""
    p = subprocess.run(["libvirtd", "--version"], capture_output=True,
                       text=True, env=dict(os.environ, PATH=PATH))
    line = p.stdout.strip()
    check(p.returncode == 0 and line, "libvirtd --version: %s%s"
          % (p.stdout, p.stderr))
    want = os.environ.get("SIVSHM_LIBVIRT_VERSION")
    if want:
        got = line.split()[-1]
        check(got == want or got.startswith(want + "."),
              "this is libvirt %s, not %s: %s" % (got, want, line))
    return line


def setup(host, uid, gid):
    """/dev/kvm, the hook, the daemons."""
    p, _ = virsh("uri", timeout=30)
    if p.returncode == 0:
        # The operator's daemon (a systemd host starts one at install):
        # this test runs its own and must not touch that one.  CI's
        # machine has none, so there it is a failure, not a skip.
        why = ("a libvirtd already answers on %s; this test starts its "
               "own (stop that one to run it)" % URI)
        check(not os.environ.get("CI"), why)
        skip(why)
    if os.path.exists("/dev/kvm"):
        # A /dev/kvm QEMU's user cannot open makes libvirt's capability
        # cache invalid on every lookup: each define re-probes for 40 s.
        try:
            kvm_gid = grp.getgrnam("kvm").gr_gid
        except KeyError:
            check(False, "no group kvm for /dev/kvm")
        st = os.stat("/dev/kvm")
        host.kvm = (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode))
        os.chown("/dev/kvm", 0, kvm_gid)
        os.chmod("/dev/kvm", 0o660)

    # The hook, before libvirtd starts: it looks for hooks at start only.
    src = builddir("libvirt-hooks", "50-sivshm")
    check(os.path.exists(src), src + " is not built")
    if not os.path.isdir(HOOK_DIR):
        os.makedirs(HOOK_DIR, 0o755)
        host.made_hook_dir = True
    try:
        out = open(HOOK, "xb")
    except FileExistsError:
        check(False, "%s exists already: it is not this test's to replace "
              "(move it away for the test)" % HOOK)
    host.hook = True
    with out, open(src, "rb") as f:
        out.write(f.read())
    os.chmod(HOOK, 0o755)

    vl = host.spawn("virtlogd", ["virtlogd", "--pid-file",
                                 os.path.join(host.work, "virtlogd.pid")])
    lv = host.spawn("libvirtd", ["libvirtd", "--pid-file",
                                 os.path.join(host.work, "libvirtd.pid")])
    t = time.monotonic()
    while virsh("uri", timeout=30)[0].returncode != 0:
        check(lv.poll() is None and vl.poll() is None,
              "a daemon exited:\nvirtlogd:\n%s\nlibvirtd:\n%s"
              % (tail(os.path.join(host.log, "virtlogd.log")),
                 tail(os.path.join(host.log, "libvirtd.log"))))
        check(time.monotonic() - t < 30, "libvirtd does not answer in 30 s\n"
              + host.diag())
        time.sleep(0.1)
    return time.monotonic() - t


def test():
    if os.geteuid() != 0:
        skip("needs root: it starts libvirtd and installs a hook")
    missing = [p for p in ("libvirtd", "virtlogd", "virsh",
                           "virt-xml-validate")
               if not shutil.which(p, path=PATH)]
    if missing:
        skip("%s not installed (apt-get install libvirt-daemon-system "
             "libvirt-daemon-system-sysv libvirt-daemon-driver-qemu "
             "libvirt-clients)" % ", ".join(missing))
    host = Host()
    for f in os.listdir(host.log):      # an earlier run's domains
        if f.endswith((".qemu.log", ".console", ".channel", ".xml")):
            os.unlink(os.path.join(host.log, f))
    atexit.register(host.cleanup)
    try:
        run(host)
    finally:
        host.cleanup()


def qemus_of(svc):
    """The pids of QEMU processes still running a domain of @svc."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if b"guest=%s-" % svc.encode() in f.read():
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def charcount_restart(host, kernel, append, qemu, vtype, sockdir, poke):
    """h. A job: charcount across a mapper and 3 reducers.  Reducer 2's
    domain, its request posted in its slot and unanswered, is destroyed,
    redefined with the worker (what an operator does to change an inactive
    domain) and started again: it rejoins its slot with the request intact
    and the total is right.  Then nothing of the service is left: no
    socket, lease, file or QEMU process."""
    svc = "lvc%d" % os.getpid()
    s = Service(svc, 3)
    worker = ("charcount-reducer --device /dev/sivshm0 --mode irq "
              "--timeout 300000\n")
    guests = [s.guest(0, "charcount-mapper --device /dev/sivshm0 "
                      "--random 16M --mode irq --threads 1 "
                      "--timeout 300000\n"),
              s.guest(1, worker),
              s.guest(2, "sivshm-poke wait-request 200000\n",
                      programs=poke),
              s.guest(3, worker)]
    job = Domains(host, svc, 3, "16M", guests, append, kernel, qemu, vtype,
                  sockdir)
    for n in job.names:
        job.define(n)
    mapper, r1, r2, r3 = job.names
    for n in job.names:
        job.start(n)
    job.wait_console(r2, "pending", 300)       # its request, unanswered
    job.destroy(r2)
    again = s.guest(2, worker)
    cpio = os.path.join(host.work, r2 + "-again.cpio")
    again.build_initramfs(cpio)
    uuid, _ = virsh("domuuid", r2)
    xml = job.files[r2]["xml"]
    edit(xml, cpio, job.files[r2]["console"], job.files[r2]["channel"])
    tree = ET.parse(xml)
    dom = tree.getroot()
    u = ET.Element("uuid")
    u.text = uuid.stdout.strip()
    dom.insert(list(dom).index(dom.find("name")) + 1, u)
    tree.write(xml)
    job.define(r2)
    job.start(r2)
    ended = job.wait_ended(job.names)
    for n in job.names:
        r = job.result(n)
        check(r.outcome == "pass", r.describe() + "\n" + r.text() + "\n" +
              host.diag(n))
    out = job.result(mapper).text()
    check(": match)" in out, "%s: %s" % (mapper, out))

    check(wait_for(lambda: not os.path.lexists(job.sock), 10),
          "%s is left after %s stopped" % (job.sock, mapper))
    check(wait_for(lambda: not leases(svc), 10),
          "leases left in %s: %s" % (LEASE_DIR, leases(svc)))
    left = [f for f in os.listdir(sockdir) if f.startswith(svc)]
    check(not left, "service %s left %s in %s" % (svc, left, sockdir))
    check(wait_for(lambda: not qemus_of(svc), 10),
          "QEMU processes of %s left: %s" % (svc, qemus_of(svc)))
    return ["charcount, mapper and 3 reducers, reducer 2 destroyed mid-job "
            "and started again: " + next(l for l in out.splitlines()
                                          if "occurs" in l),
            "boot to power-off: %s" % ", ".join(
                "%s %.1f s" % (n, ended[n]) for n in job.names)]


def run(host):
    figures = []
    uid, gid = qemu_owner()
    kvm = os.environ.get("SIVSHM_ACCEL") == "kvm"
    vtype = "kvm" if kvm else "qemu"

    # What QEMU opens itself must be reachable by its user, and the build
    # tree may be under a 0700 /root or home: the per-test files go in a
    # directory of that user's outside it.
    work = user_dir(uid, gid)
    host.work = work.path
    sockdir = os.path.join(host.work, "sock")       # the hook makes it
    qemu = work.reach(env_path("SIVSHM_QEMU", "our qemu-system-x86_64"),
                      os.X_OK)
    poke = [builddir("tests", "vm", "guest", "sivshm-poke")]

    svc = "lvd%d" % os.getpid()
    s = Service(svc, 2)
    guests = [s.guest(0, "sivshm-poke wait-peers 0x6 %d\n"
                      "sivshm-poke mark\n"
                      "sivshm-poke wait-peers 0x0 %d\n" % (WAIT_MS, WAIT_MS),
                      programs=poke)]
    # iomem=relaxed: sivshm-poke isolation reads BAR1 through /dev/mem too.
    guests += [s.guest(j, "sivshm-poke wait-peers 0x1 %d\n"
                       "sivshm-poke isolation %d\n" % (WAIT_MS, WAIT_MS),
                       programs=poke, cmdline="iomem=relaxed")
               for j in (1, 2)]
    argv = guests[1].qemu_argv("qemu", "k", "i", "c", "c", ())
    append = argv[argv.index("-append") + 1]
    # A copy: libvirt gives a domain's kernel to QEMU's user while it runs.
    kernel = work.copy(guests[0].kernel.vmlinuz)

    # 4 MiB slices: sivshm-poke's markers sit at quarters of a slot, which
    # its page-by-page scan finds only when they are page aligned.
    main_svc = Domains(host, svc, 2, "12M", guests, append, kernel, qemu,
                       vtype, sockdir)
    psvc = "lvp%d" % os.getpid()
    ps = Service(psvc, 1)
    pguests = [ps.guest(0, "sivshm-poke wait-peers 0x2 %d\n"
                        "sivshm-poke mark\n" % WAIT_MS, programs=poke),
               # The mapper may be gone before this guest runs: its
               # markers stay in the slot this reducer's QEMU maps.
               ps.guest(1, "sivshm-poke isolation %d\n"
                        "sivshm-poke wait-peers 0x0 %d\n"
                        "echo mapper-gone\n"
                        "sleep 3600\n" % (WAIT_MS, WAIT_MS),
                        programs=poke)]
    persist = Domains(host, psvc, 1, "4M", pguests, append, kernel, qemu,
                      vtype, sockdir, ["--unlink", "off"])

    paths = [(qemu, os.X_OK), (kernel, os.R_OK)]
    paths += [(f, os.R_OK) for f in firmware_files().values()]
    paths += [(f["cpio"], os.R_OK) for d in (main_svc, persist)
              for f in d.files.values()]
    for path, how in paths:
        check(user_can(uid, gid, path, how), "QEMU's user %d:%d cannot %s "
              "%s" % (uid, gid, "run" if how == os.X_OK else "read", path))

    version = libvirtd_version()
    figures.append(version)
    up = setup(host, uid, gid)
    figures.append("libvirtd answers %.1f s after its start" % up)

    # 1. libvirt's capability probe of our QEMU.
    p, t = virsh("domcapabilities", "--emulatorbin", qemu, "--arch",
                 "x86_64", "--virttype", vtype)
    check(p.returncode == 0 and "<domainCapabilities>" in p.stdout,
          "virsh domcapabilities --emulatorbin %s: %s\n%s"
          % (qemu, p.stderr.strip(), host.diag()))
    figures.append("virsh domcapabilities --emulatorbin %s --virttype %s: "
                   "%.1f s (libvirt probes a binary again only once it "
                   "changed)" % (qemu, vtype, t))

    # 2. a. The generated domains validate and define quickly.
    for d in (main_svc, persist):
        d.validate()
    for n in main_svc.names:
        main_svc.define(n)
    mapper, r1, r2 = main_svc.names

    # b. A reducer before its mapper: the hook refuses it at once.
    t, why = main_svc.refused(
        r1, "the mapper of service %s is not listening on %s"
        % (svc, main_svc.sock))
    figures.append("reducer before its mapper refused in %.2f s: %s"
                   % (t, why))

    # c. The mapper, its socket, the directory the hook made.
    main_svc.start(mapper)
    check(os.path.exists(main_svc.sock)
          and stat.S_ISSOCK(os.stat(main_svc.sock).st_mode),
          "no mapper socket at %s once %s runs\n%s"
          % (main_svc.sock, mapper, host.diag(mapper)))
    st = os.stat(sockdir)
    check((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) ==
          (uid, gid, 0o770), "%s is %d:%d mode %04o, not %d:%d mode 0770"
          % (sockdir, st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode),
             uid, gid))

    # d. A second domain as reducer 1 while reducer 1 runs.
    main_svc.start(r1)
    dup = svc + "-dup1"
    dxml = os.path.join(host.work, dup + ".xml")
    shutil.copy(main_svc.files[r1]["xml"], dxml)
    edit(dxml, main_svc.files[r1]["cpio"],
         os.path.join(host.work, dup + ".console"),
         os.path.join(host.work, dup + ".channel"), name=dup)
    main_svc.files[dup] = {"xml": dxml}
    main_svc.define(dup, dxml)
    t, why = main_svc.refused(dup, "vm-id 1 of service %s is taken by "
                              "running domain %s" % (svc, r1))
    figures.append("duplicate of reducer 1 refused in %.2f s: %s" % (t, why))
    main_svc.undefine(dup)
    check(r1 in main_svc.running(), "%s stopped with the duplicate's "
          "refusal\n%s" % (r1, host.diag(r1)))

    # e. Reducer 2; each reducer's QEMU holds its own slot only.
    main_svc.start(r2)
    for j, n in ((1, r1), (2, r2)):
        fds = main_svc.slot_fds(n)
        want = ["/memfd:sivshm-%s-%d (deleted)" % (svc, j)]
        check(fds == want, "%s's QEMU holds %s, not %s" % (n, fds, want))
    held = sorted(set(main_svc.slot_fds(mapper)))
    want = ["/memfd:sivshm-%s-%d (deleted)" % (svc, j) for j in (0, 1, 2)]
    check(held == want, "the mapper's QEMU holds %s, not %s" % (held, want))
    figures.append("slot memfds held: %s" % "; ".join(
        "%s %s" % (n, " ".join(sorted({f.split()[0][len("/memfd:"):]
                                       for f in main_svc.slot_fds(n)})))
        for n in (mapper, r1, r2)))
    figures.append("virsh define %s; virsh start %s" % (
        ", ".join("%.2f s" % main_svc.defined[n] for n in main_svc.names),
        ", ".join("%.2f s" % main_svc.started[n][1]
                  for n in main_svc.names)))

    # f. The guests' own checks, and their ends.
    ended = main_svc.wait_ended(main_svc.names)
    for n in main_svc.names:
        r = main_svc.result(n)
        check(r.outcome == "pass", r.describe() + "\n" + r.text() + "\n" +
              host.diag(n))
    out = main_svc.result(mapper).text()
    check("marked 3 slots" in out and "peers 0x6" in out
          and "peers 0\n" in out, "%s: %s" % (mapper, out))
    for n in (r1, r2):
        out = main_svc.result(n).text()
        check("BAR1:" in out, "%s: %s" % (n, out))
        print(n + ": " + out.strip().replace("\n", "; "))
    print(mapper + ": " + main_svc.result(mapper).text().strip()
          .replace("\n", "; "))
    figures.append("boot to power-off (domain shut off): %s" % ", ".join(
        "%s %.1f s" % (n, ended[n]) for n in main_svc.names))

    # g. Release: the mapper's socket and the service's leases are gone.
    check(wait_for(lambda: not os.path.lexists(main_svc.sock), 10),
          "%s is left after %s stopped\n%s"
          % (main_svc.sock, mapper, host.diag(mapper)))
    check(wait_for(lambda: not leases(svc), 10),
          "leases left in %s: %s" % (LEASE_DIR, leases(svc)))
    left = [f for f in os.listdir(sockdir) if f.startswith(svc)]
    check(not left, "service %s left %s in %s" % (svc, left, sockdir))

    # g. unlink=off: the slot files outlive the mapper while its reducer
    # runs, and go with the last domain of the service.
    for n in persist.names:
        persist.define(n)
    pm, pr = persist.names
    persist.start(pm)
    persist.start(pr)
    persist.wait_ended([pm])
    r = persist.result(pm)
    check(r.outcome == "pass", r.describe() + "\n" + r.text() + "\n" +
          host.diag(pm))
    check(wait_for(lambda: not os.path.lexists(persist.sock), 10),
          "%s is left after %s stopped\n%s"
          % (persist.sock, pm, host.diag(pm)))
    slots = ["%s.slot%d" % (psvc, j) for j in (0, 1)]
    check(sorted(f for f in os.listdir(sockdir) if f.startswith(psvc)) ==
          slots, "with %s stopped and %s running, %s holds %s, not %s"
          % (pm, pr, sockdir, os.listdir(sockdir), slots))
    check(pr in persist.running(), "%s ended early:\n%s"
          % (pr, tail(persist.files[pr]["console"])))
    persist.wait_console(pr, "mapper-gone", 120)
    persist.destroy(pr)
    check(wait_for(lambda: not [f for f in os.listdir(sockdir)
                                if f.startswith(psvc)], 10),
          "slot files left after the last domain of %s: %s"
          % (psvc, os.listdir(sockdir)))
    check(wait_for(lambda: not leases(psvc), 10),
          "leases left in %s: %s" % (LEASE_DIR, leases(psvc)))
    figures.append("unlink=off: %s kept while %s ran, removed when it "
                   "was destroyed" % (" ".join(slots), pr))

    figures += charcount_restart(host, kernel, append, qemu, vtype, sockdir,
                                 poke)
    for line in figures:
        print(line)


main(test)

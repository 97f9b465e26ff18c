"""Hosts joined by RDMA: each host is one guest with Soft-RoCE (rdma_rxe) on
its own virtio-net NIC, the guests' QEMUs joined by socket netdevs on
loopback.  Not network namespaces in one guest: the 6.1 kernel's rxe keeps
its UDP socket in init_net whatever namespace its netdev is in
(docs/testing.md, "Hosts joined by RDMA").

Host i (from 0) is 10.0.0.(i+1)/24 on eth0, with rxe0 on it once its
script starts (rdma_up in tests/vm/guest/rdma.sh, which the script can
use further).  Two hosts are a point-to-point pair (one QEMU listens, the
other connects); more are joined by Hub, an Ethernet hub in the test; one
host alone listens for nobody (its RDMA device reaches its own address).
Every QEMU has a QMP monitor: set_link() takes a host's link down and up
as a cable pulled out and put back."""

import selectors
import socket
import struct
import threading
import time

from vmtest import (Guest, Qmp, Running, builddir, check, guest_sh, logdir,
                    nested, qmp_up)

# rdma_rxe finds its ICRC's crc32 through the crypto API; the guests have
# no modprobe for the kernel to load one itself.
KMODS = ["virtio_net", "crc32_generic", "rdma_rxe", "rdma_ucm", "ib_uverbs"]
HELPERS = guest_sh("rdma.sh")
# rdma-core's Soft-RoCE provider, for a dynamically linked program (our
# QEMU): Debian's ibverbs-providers.
RXE_DRIVER = "/etc/libibverbs.d/rxe.driver"
RXE_PROVIDER = "/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so"
NETDEV = "n0"
# How long a QEMU may take to open its QMP monitor (and, before that, to
# listen on its netdev's port).
QEMU_UP_S = 60


def programs():
    return [builddir("tests", "vm", "guest", "rxe-link"),
            builddir("tests", "vm", "guest", "rdma-ping")]


def mapper_script(job, port, before=""):
    """Shell for a host that runs the charcount @job's mapper, serving
    the ids of /etc/keys over RDMA on @port and reducer 1 on its unix
    socket, where a reducer process then joins as 1 (after the shell
    @before, given the socket).  It prints the mapper's output and exits
    with its status."""
    return """
charcount-mapper --socket /tmp/cc.sock %s \\
	--listen "$RDMA_SELF:%d" --keys /etc/keys >/tmp/mapper.out 2>&1 &
mapper=$!
until [ -S /tmp/cc.sock ]; do sleep 0.1; done
%s
charcount-reducer --socket /tmp/cc.sock --id 1 --mode irq &
status=0
wait $mapper || status=$?
cat /tmp/mapper.out
exit $status
""" % (job, port, before)


def addr(i):
    return "10.0.0.%d" % (i + 1)


def free_port():
    """A TCP port on loopback nobody listens on now."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


class Hub(threading.Thread):
    """An Ethernet hub for QEMU's socket netdev (`connect=`): each frame
    (a 4-byte big-endian length, then the frame) from one port goes to every
    other.  Ports are the QEMUs that connect, up to n."""

    def __init__(self, n):
        super().__init__(daemon=True)
        self.n = n
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(n)
        self.port = self.lsock.getsockname()[1]
        self.start()

    def run(self):
        sel = selectors.DefaultSelector()
        sel.register(self.lsock, selectors.EVENT_READ)
        bufs = {}
        while True:
            for key, _ in sel.select():
                s = key.fileobj
                if s is self.lsock:
                    c, _ = s.accept()
                    bufs[c] = b""
                    sel.register(c, selectors.EVENT_READ)
                    if len(bufs) == self.n:
                        sel.unregister(self.lsock)
                    continue
                data = s.recv(65536)
                if not data:
                    sel.unregister(s)
                    del bufs[s]
                    continue
                bufs[s] += data
                while len(bufs[s]) >= 4:
                    size = struct.unpack(">I", bufs[s][:4])[0]
                    if len(bufs[s]) < 4 + size:
                        break
                    frame, bufs[s] = bufs[s][:4 + size], bufs[s][4 + size:]
                    for other in bufs:
                        if other is not s:
                            try:
                                other.sendall(frame)
                            except OSError:
                                pass        # that QEMU is gone


class Hosts:
    """@n hosts joined by RDMA; their files go in @d (the test's log
    directory by default)."""

    def __init__(self, name, n, d=None):
        check(n >= 1, "hosts joined by RDMA: 1 or more, not %d" % n)
        self.name = name
        self.n = n
        self.d = d or logdir()
        self.hub = Hub(n) if n > 2 else None
        self.port = self.hub.port if self.hub else free_port()
        self.runs = []
        self._qmp = {}

    def netdev(self, i):
        """QEMU arguments of host @i's NIC and its link to the others.  No
        option ROM: the guests boot from -kernel, and our QEMU would look
        for iPXE's efi-virtio.rom, which the machine may not have."""
        if self.n <= 2 and i == 0:
            how = "listen=127.0.0.1:%d" % self.port
        else:
            how = "connect=127.0.0.1:%d" % self.port
        return ["-netdev", "socket,id=%s,%s" % (NETDEV, how),
                "-device", "virtio-net-pci,netdev=%s,mac=52:54:00:12:34:%02x,"
                "romfile=" % (NETDEV, i + 1)]

    def _host(self, i, kw):
        """What makes a guest host @i, merged into its keywords @kw."""
        env = dict(kw.pop("env", {}), RDMA_SELF=addr(i),
                   RDMA_PEER=addr((i - 1) % self.n))
        return dict(kw, env=env,
                    kmods=KMODS + list(kw.pop("kmods", [])),
                    programs=programs() + list(kw.pop("programs", [])),
                    shell_libs=[HELPERS] + list(kw.pop("shell_libs", [])),
                    qemu_args=self.netdev(i) + list(kw.pop("qemu_args", [])))

    def guest(self, i, script, memory=512, **kw):
        """Host @i: its guest runs @script once rxe0 is up at addr(i).  The
        script has RDMA_PEER, the address of the host before it (of the
        last for host 0), and rdma.sh's functions."""
        return Guest("%s-host%d" % (self.name, i),
                     "rdma_up %s/24\n" % addr(i) + script, memory=memory,
                     **self._host(i, kw))

    def nested_guest(self, i, script, l2, **kw):
        """Host @i as a level 1 that runs the level-2 guests @l2 under our
        QEMU (vmtest.nested(); check them with nested_result()): @script
        has level1.sh's functions as well as guest()'s.  Our QEMU reaches
        rxe0 through rdma-core's shared libibverbs, which loads the rxe
        provider named in /etc/libibverbs.d."""
        o = self._host(i, kw)
        o["files"] = {**o.get("files", {}),
                      RXE_DRIVER: RXE_DRIVER,
                      RXE_PROVIDER: RXE_PROVIDER}
        return nested("rdma_up %s/24\n" % addr(i) + script, l2,
                      l1_kmods=o.pop("kmods"), l1_args=o.pop("qemu_args"),
                      **o)

    def start(self, guests):
        """Boot the hosts, guests[i] being host i's (from guest()), each
        with a QMP monitor; the listening one first, its port open before
        the others connect.  Returns the Running list."""
        check(len(guests) == self.n, "%d guests for %d hosts"
              % (len(guests), self.n))
        for g in guests:
            self.runs.append(Running(g, self.d, qmp=True))
            if not self.hub and len(self.runs) == 1:
                self._wait_qemu(0)
        return self.runs

    def _wait_qemu(self, i):
        """Until host @i's QEMU answers on QMP: it opens its netdev's
        listening socket before its monitor."""
        run = self.runs[i]
        deadline = time.monotonic() + QEMU_UP_S
        while not qmp_up(run.qmp_path):
            check(run.proc.poll() is None, "%s's QEMU exited: %s"
                  % (run.guest.name, _tail(run.stderr.name)))
            check(time.monotonic() < deadline, "%s's QEMU not up in %d s"
                  % (run.guest.name, QEMU_UP_S))
            time.sleep(0.05)

    def qmp(self, i):
        if i not in self._qmp:
            self._qmp[i] = Qmp(self.runs[i].qmp_path)
        return self._qmp[i]

    def set_link(self, i, up):
        """Host @i's link down (up=False) or up: QEMU drops every frame of
        the netdev and shows the guest its NIC's carrier off."""
        self.qmp(i).cmd("set_link", name=NETDEV, up=up)

    def wait_line(self, i, text, timeout):
        """Seconds since host @i's QEMU started, once @text shows on its
        console.  Fails the test if it does not within @timeout s, with
        each host's result (the hosts are stopped first)."""
        run = self.runs[i]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and run.proc.poll() is None:
            try:
                with open(run.console, errors="replace") as f:
                    if text in f.read():
                        return time.monotonic() - run.start
            except FileNotFoundError:
                pass
            time.sleep(0.1)
        for r in self.runs:
            r.kill()
        check(False, "%s never printed %r: %s" % (
            run.guest.name, text,
            "; ".join(r.wait(30).describe() for r in self.runs)))

    def wait(self, timeout):
        return [r.wait(timeout) for r in self.runs]


def _tail(path, n=5):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(f.read().strip().splitlines()[-n:])
    except FileNotFoundError:
        return ""

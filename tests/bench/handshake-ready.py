#!/usr/bin/env python3
"""The handshake's own cost: from the moment every QEMU process of a service
is up to the moment every doorbell between the mapper and each reducer is
usable, as the guests see it; sivshm (the mapper hands each reducer its
eventfds) against ivshmem-doorbell with QEMU's ivshmem-server (all-to-all
distribution).  A benchmark: it prints a table and writes a CSV.

Process start is left out, unlike device-ready.py.  All N + 1 QEMUs start
with no shared-memory device, under -accel qtest (no guest code; the qtest
socket reads and writes guest-physical memory and I/O ports as a guest
would), each with QMP.  Once all of them answer and the party that listens is up
(ivshmem-server; sivshm: the mapper's device, added first), the clock
starts and every other QEMU is sent its device_add at once (ivshmem:
chardev-add, which connects to the server, then device_add; the mapper VM
is one of them).  Then the probe, through each QEMU's qtest socket, until
everything holds:

* the mapper rings reducer i (its doorbell register, vector 0) and
  reducer i's device shows that interrupt pending;
* reducer i rings the mapper and the mapper's device shows it pending
  (one reducer at a time: the mapper's pending bit does not say who rang).

One vector per peer for both.  Pending means, for sivshm (msix=off),
INTR_STATUS bit 0; for ivshmem-doorbell, whose doorbells are MSI-X only,
bit 0 of the pending-bit array with MSI-X enabled and the vector masked.
A ring that arrives before the doorbell is wired is lost, and the probe
rings again.

Median of --repeat runs.  Under TCG on a small host, figures are good as
ratios within one run only.

Usage: handshake-ready.py [--builddir DIR] [--reducers 1,3,7,15,31]
"""

import os
import socket
import subprocess
import time

import ready
import vmtest
from vmtest.qtest import Qtest, assign_bars, msix_enable

HERE = os.path.dirname(os.path.abspath(__file__))

SLOT = 4                        # PCI slot of the shared-memory device
RING_WAIT_S = 0.005             # how long a ring may take to show
REGION = "64M"
DEADLINE_S = 120

# sivshm BAR0 registers: include/sivshm-regs.h, read here so that the
# numbers live there only.
REGS = {}


def load_regs(srcdir):
    with open(os.path.join(srcdir, "include", "sivshm-regs.h")) as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and p[0] == "#define" and p[1].startswith(
                    "SIVSHM_REG_"):
                REGS[p[1][len("SIVSHM_REG_"):]] = int(p[2].rstrip("u"), 0)


# ivshmem-doorbell's BAR0 (QEMU's docs/specs/ivshmem-spec.rst).
IVSHMEM_IVPOSITION = 8
IVSHMEM_DOORBELL = 12


class Vm:
    def __init__(self, qemu, d, i):
        self.qmp_path = os.path.join(d, "qmp%d" % i)
        qt_path = os.path.join(d, "qtest%d" % i)
        lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lsock.bind(qt_path)
        lsock.listen(1)
        # A file, not a pipe nobody reads: QEMU must never block on it.
        self.log = os.path.join(d, "qemu%d.log" % i)
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [qemu, "-nodefaults", "-display", "none", "-machine", "pc",
                 "-m", "64", "-accel", "qtest", "-qtest", "unix:" + qt_path,
                 "-qtest-log", "/dev/null",
                 "-qmp", "unix:%s,server=on,wait=off" % self.qmp_path],
                stdout=log, stderr=subprocess.STDOUT)
        lsock.settimeout(60)
        conn, _ = lsock.accept()
        lsock.close()
        conn.settimeout(DEADLINE_S)
        self.qt = Qtest(conn, SLOT)
        self.qmp = None

    def connect(self):
        self.qmp = vmtest.Qmp(self.qmp_path)

    def kill(self):
        self.proc.kill()
        self.proc.wait()


class SivshmPeer:
    """A sivshm device seen through qtest: msix=off, so an interrupt from a
    peer shows in INTR_STATUS (write 1 to clear)."""

    def __init__(self, vm):
        self.qt = vm.qt
        self.bar0 = assign_bars(self.qt)[0]

    def ring(self, peer_id):
        self.qt.writel(self.bar0 + REGS["DOORBELL"], peer_id << 16)

    def pending(self):
        return self.qt.readl(self.bar0 + REGS["INTR_STATUS"]) & 1

    def clear(self):
        self.qt.writel(self.bar0 + REGS["INTR_STATUS"], 1)


class IvshmemPeer:
    """An ivshmem-doorbell device seen through qtest.  Its doorbells are
    MSI-X only: MSI-X is enabled with vector 0 masked, so an interrupt waits
    in the pending-bit array; unmasking delivers it (bus mastering is off,
    so the message goes nowhere) and clears the bit."""

    def __init__(self, vm):
        self.qt = vm.qt
        bars = assign_bars(self.qt)
        self.bar0 = bars[0]
        self.table, self.pba = msix_enable(self.qt, bars)
        self.id = -1

    def ready(self):
        """Whether the server has told this device its id."""
        v = self.qt.readl(self.bar0 + IVSHMEM_IVPOSITION)
        self.id = v if v < 1 << 31 else -1
        return self.id >= 0

    def ring(self, peer_id):
        self.qt.writel(self.bar0 + IVSHMEM_DOORBELL, peer_id << 16)

    def pending(self):
        return self.qt.readl(self.pba) & 1

    def clear(self):
        self.qt.writel(self.table + 12, 0)      # vector control: unmask
        self.qt.writel(self.table + 12, 1)      # and mask again


def probe(peers, ids, deadline):
    """Until the mapper (peers[0]) has rung every reducer and every reducer
    the mapper, each seen pending at the other end.  Mapper to reducers all
    at once (each reducer's own pending bit says who was rung); reducers to
    the mapper one at a time, since the mapper's pending bit does not say
    who rang."""
    n = len(peers) - 1
    mapper, down = peers[0], set()
    while len(down) < n:
        if time.monotonic() > deadline:
            raise RuntimeError("after %d s, the mapper has rung %d of %d "
                               "reducers" % (DEADLINE_S, len(down), n))
        for i in range(1, n + 1):
            if i not in down:
                mapper.ring(ids[i])
                if peers[i].pending():
                    down.add(i)
    for i in range(1, n + 1):
        while True:
            if time.monotonic() > deadline:
                raise RuntimeError("after %d s, reducer %d cannot ring the "
                                   "mapper" % (DEADLINE_S, i))
            mapper.clear()
            peers[i].ring(ids[0])
            t = time.monotonic() + RING_WAIT_S
            while not mapper.pending() and time.monotonic() < t:
                pass
            if mapper.pending():
                break
    mapper.clear()


def sivshm_add(vm, i, n, sock):
    """device_add peer @i of a service of @n reducers, without waiting."""
    vm.qmp.send("device_add", driver="sivshm", id="shm", addr="%d.0" % SLOT,
                **{"vm-id": i, "shm": "hready%d" % os.getpid(),
                   "socket": sock, "size": 64 << 20, "reducers": n,
                   "msix": False})


def service(qemu, server, kind, n, d):
    sock = os.path.join(d, "sock")
    vms, extra = [], []
    try:
        if kind == "ivshmem":
            extra.append(subprocess.Popen(
                [server, "-F", "-S", sock, "-M", "hready%d" % os.getpid(),
                 "-l", REGION, "-n", "1"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            while not os.path.exists(sock):
                time.sleep(0.001)
        for i in range(n + 1):
            vms.append(Vm(qemu, d, i))
        for vm in vms:
            vm.connect()
        if kind == "sivshm":
            # The mapper listens before the clock starts, as ivshmem-server
            # does: what is timed is the reducers' joining.
            sivshm_add(vms[0], 0, n, sock)
            vms[0].qmp.answer("device_add")
        t0 = time.monotonic()
        for i, vm in enumerate(vms):
            if kind == "sivshm":
                if i:
                    sivshm_add(vm, i, n, sock)
            else:
                vm.qmp.send("chardev-add", id="ivc", backend={
                    "type": "socket", "data": {
                        "addr": {"type": "unix", "data": {"path": sock}},
                        "server": False}})
                vm.qmp.send("device_add", driver="ivshmem-doorbell", id="shm",
                            addr="%d.0" % SLOT, chardev="ivc",
                            vectors=1)
        for i, vm in enumerate(vms):
            if kind == "ivshmem":
                vm.qmp.answer("chardev-add")
            if kind == "ivshmem" or i:
                vm.qmp.answer("device_add")
        deadline = t0 + DEADLINE_S
        if kind == "sivshm":
            peers = [SivshmPeer(vm) for vm in vms]
            ids = list(range(n + 1))
        else:
            peers = [IvshmemPeer(vm) for vm in vms]
            while not all(p.ready() for p in peers if p.id < 0):
                if time.monotonic() > deadline:
                    raise RuntimeError("ivshmem-server gave no id to some")
            ids = [p.id for p in peers]
        probe(peers, ids, deadline)
        return time.monotonic() - t0
    finally:
        for vm in vms:
            vm.kill()
        for p in extra:
            p.kill()
            p.wait()
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))


if __name__ == "__main__":
    load_regs(os.path.join(HERE, "..", ".."))
    ready.main("handshake-ready",
               "N+1 QEMU processes already up (-accel qtest)", service,
               (RuntimeError, vmtest.HarnessError))

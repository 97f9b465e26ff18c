#!/usr/bin/env python3
"""Device-ready time of a whole service of real QEMU processes, sivshm
against ivshmem-doorbell with QEMU's ivshmem-server (the papers' boot-time
claim: 0.7 at 32 VMs).  A benchmark: it prints a table and writes a CSV.

For each reducer count, all N + 1 QEMUs start at once with -S (machine and
devices created, no guest code run) and a QMP socket; the service is ready
when every QEMU answers on its QMP socket, i.e. has realized its device:
a sivshm reducer only after the mapper's WELCOME, an ivshmem-doorbell
device only after ivshmem-server has sent it its id and the region.  The
clock starts before the first process of the service (ivshmem-server
included).  Median of --repeat runs.

Usage: device-ready.py [--builddir DIR] [--reducers 1,3,7,15,31]
"""

import os
import subprocess
import time

import ready
from vmtest import qmp_up


def qemu_argv(qemu, qmp, device):
    argv = [qemu, "-S", "-nodefaults", "-display", "none", "-machine", "pc",
            "-m", "64", "-accel", "tcg", "-qmp",
            "unix:%s,server=on,wait=off" % qmp]
    return argv + device


def wait_ready(procs, qmps, deadline):
    pending = set(range(len(qmps)))
    while pending and time.monotonic() < deadline:
        for i in list(pending):
            if procs[i].poll() is not None:
                raise RuntimeError("QEMU %d exited: %s" % (
                    i, procs[i].stderr.read().decode(errors="replace")))
            if qmp_up(qmps[i]):
                pending.discard(i)
        time.sleep(0.002)
    if pending:
        raise RuntimeError("%d QEMUs never became ready" % len(pending))


def service(qemu, server, kind, n, d):
    qmps = [os.path.join(d, "qmp%d" % i) for i in range(n + 1)]
    sock = os.path.join(d, "sock")
    procs, extra = [], []
    t0 = time.monotonic()
    try:
        if kind == "ivshmem":
            extra.append(subprocess.Popen(
                [server, "-F", "-S", sock, "-M", "ready%d" % os.getpid(),
                 "-l", "64M", "-n", "1"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL))
            while not os.path.exists(sock):
                time.sleep(0.001)
        for i in range(n + 1):
            if kind == "sivshm":
                dev = "sivshm,vm-id=%d,shm=ready%d,socket=%s" % (
                    i, os.getpid(), sock)
                if i == 0:
                    dev += ",size=64M,reducers=%d" % n
                device = ["-device", dev]
            else:
                device = ["-chardev", "socket,path=%s,id=ivc" % sock,
                          "-device", "ivshmem-doorbell,chardev=ivc,vectors=1"]
            procs.append(subprocess.Popen(
                qemu_argv(qemu, qmps[i], device), stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE))
        wait_ready(procs, qmps, t0 + 120)
        return time.monotonic() - t0
    finally:
        for p in procs + extra:
            p.kill()
            p.wait()
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))


if __name__ == "__main__":
    ready.main("device-ready", "N+1 QEMU processes with -S", service)

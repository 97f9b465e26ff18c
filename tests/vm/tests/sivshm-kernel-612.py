#!/usr/bin/env python3
# runtests: cores 1
"""The guest driver on Debian's other kernel: 6.12, from bookworm-backports
(what Debian 13 ships).  make dkms-source, dkms add and dkms build against
the fetched 6.12 headers; a mapper VM booted on 6.12 loads that module and
runs charcount in interrupt mode (mmap of the region, doorbells, eventfds
signalled by the driver) with three host-process reducers: the total
matches.  One vCPU (charcount runs one thread): 6.12 booting on two TCG
vCPUs can die of an int3 that TCG ran after the kernel had patched it
away (docs/pibooster.md, "Open: an int3 oops"), nothing of the driver's."""

import os
import shutil
import tempfile
from vmtest import Kernel, check, main
from dkms import dkms_build
from sivshm import Service, host_reducer, mapper_up


def test():
    kernel = Kernel(os.environ["SIVSHM_KERNEL_BACKPORTS"])
    check(kernel.kver.startswith("6.12."), "not a 6.12 kernel: " + kernel.kver)
    tmp = tempfile.mkdtemp(prefix="dkms-")
    built = dkms_build("sivshm", "dkms-source", "sivshm", tmp, kernel=kernel)
    svc = Service("k612", 3, size="16M")
    mapper = svc.guest(0, "echo guest-up $(uname -r)\n"
                       "charcount-mapper --device /dev/sivshm0 --random 8M "
                       "--mode irq --threads 1 --timeout 200000\n",
                       module_path=built, kernel=kernel, smp=1)
    run = svc.start(mapper, [])[0]
    mapper_up(svc, run, "guest-up 6.12.")
    joins = [host_reducer(svc, j) for j in (1, 2, 3)]
    check(all("joined" in line for _, line in joins), "joins: %s" % joins)
    r = run.wait(400)
    shutil.rmtree(tmp)
    for p, _ in joins:
        p.communicate(timeout=60)
        check(p.returncode == 0, "a host reducer failed")
    check(r.outcome == "pass", r.describe() + "\n" + r.text())
    check(": match)" in r.text(), r.text())
    print("on %s: %s" % (kernel.kver, next(
        l for l in r.text().splitlines() if "occurs" in l)))


main(test)

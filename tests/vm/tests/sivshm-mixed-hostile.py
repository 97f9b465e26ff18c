#!/usr/bin/env python3
# runtests: cores 1
"""A mapper VM served by host-process reducers (the same protocol on both
sides), and a hostile client on the mapper QEMU's socket while the job
runs: a wrong version, a duplicate id, id 0 and above N, garbage,
truncation, too many fds, ... are each refused, and the job carries on to
the right total."""

import os
import subprocess
import time
from vmtest import builddir, check, main
from sivshm import Service, host_reducer


def test():
    svc = Service("mixed", 3, size="16M")
    mapper = svc.guest(0, "charcount-mapper --device /dev/sivshm0 "
                       "--random 32M --mode irq --threads 1 "
                       "--timeout 200000\n")
    run = svc.start(mapper, [])[0]
    for _ in range(200):
        if os.path.exists(svc.sock):
            break
        time.sleep(0.05)
    check(os.path.exists(svc.sock), "the mapper QEMU is not listening")
    # Reducers 1 and 2 join; the hostile client comes with id 3 still free.
    joins = [host_reducer(svc, 1), host_reducer(svc, 2)]
    check(all("joined" in line for _, line in joins), "joins: %s" % joins)
    hostile = subprocess.run(
        [builddir("tests", "vm", "host", "sivshm-hostile"), svc.sock, "3",
         "1", "1", "3"], capture_output=True, text=True, timeout=120)
    print(hostile.stdout + hostile.stderr)
    check(hostile.returncode == 0, "a hostile HELLO was not refused")
    joins.append(host_reducer(svc, 3))
    check("joined" in joins[2][1], "reducer 3: " + joins[2][1])
    r = run.wait(400)
    outs = [line + p.communicate(timeout=60)[0].decode()
            for p, line in joins]
    check(r.outcome == "pass", r.describe())
    check(run.proc.returncode == 0, "the mapper's QEMU exited with %s"
          % run.proc.returncode)
    for j, ((p, _), out) in enumerate(zip(joins, outs), 1):
        check(p.returncode == 0, "host reducer %d failed: %s" % (j, out))
    check(": match)" in r.text(), r.text())
    print(next(l for l in r.text().splitlines() if "occurs" in l))


main(test)

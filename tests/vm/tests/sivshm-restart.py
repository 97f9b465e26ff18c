#!/usr/bin/env python3
"""Lifetimes in VMs.  A reducer VM killed in the middle of a job (its
request and data posted in its slot, unanswered) and started again with
the same id finds its slot data intact: it answers that request and the
job ends with the right total, the other reducers undisturbed.  A mapper
VM restarted with unlink=off reattaches the region its first incarnation
left in the backing directory, and a reducer VM that ran all along sees
its QEMU rejoin the new mapper, which takes back the very slot that
reducer maps: the interrupts flow again both ways.  A hostile reducer of
that persistent mapper cannot shrink or grow its slot, and the mapper VM,
reading every slot afterwards, lives.  A mapper that comes back with new
memory (unlink=on) is not rejoined."""

import os
import shutil
import subprocess
import tempfile
import time
from vmtest import Running, builddir, check, main
from sivshm import Service, mapper_up

ROUNDS = 200


def reducer_restart(poke):
    svc = Service("rr", 3)
    mapper = svc.guest(0, "charcount-mapper --device /dev/sivshm0 "
                       "--random 16M --mode irq --threads 1 "
                       "--timeout 300000\n")
    worker = "charcount-reducer --device /dev/sivshm0 --mode irq " \
             "--timeout 300000\n"
    first = svc.guest(2, "sivshm-poke wait-request 200000\n", programs=poke)
    runs = svc.start(mapper, [svc.guest(1, worker), first,
                              svc.guest(3, worker)])
    for _ in range(2400):
        with open(runs[2].console, errors="replace") as f:
            if "pending" in f.read():
                break
        time.sleep(0.1)
    else:
        check(False, "reducer 2 never saw its request")
    runs[2].kill()
    runs[2].wait(30)
    again = svc.guest(2, worker)
    again.name = "rr-reducer2-again"
    runs[2] = Running(again, svc.d)
    results = [r.wait(400) for r in runs]
    for r in results:
        check(r.outcome == "pass", r.describe())
    check(": match)" in results[0].text(), results[0].text())
    print("reducer 2 killed mid-job and restarted: " +
          next(l for l in results[0].text().splitlines() if "occurs" in l))


def mapper_restart(poke, pp):
    d = tempfile.mkdtemp(prefix="sivshm-persist-", dir="/dev/shm")
    try:
        svc = Service("mr", 3, size="8M", extra=",unlink=off,dir=" + d)
        first = svc.guest(0, "sivshm-poke mark\n"
                          "sivshm-pingpong mapper %d 1 eventfd\n" % ROUNDS,
                          programs=poke + pp)
        # Reducer 1 lives through both mappers: its QEMU rejoins the second.
        reducer = svc.guest(1, "".join(
            "sivshm-pingpong reducer %d %s\n" % (ROUNDS, mode)
            for mode in ("eventfd", "signal")), programs=pp)
        runs = svc.start(first, [reducer])
        r1 = runs[0].wait(200)
        check(r1.outcome == "pass", r1.describe() + "\n" + r1.text())
        check(sorted(os.listdir(d)) == ["mr-%d.slot%d" % (os.getpid(), j)
                                        for j in range(4)],
              "slot files: %s" % os.listdir(d))
        # The second mapper waits for reducer 1 and a hostile reducer 2,
        # which tries to truncate slot 3 (sivshm-hostile's flood asserts
        # EPERM), and reads every slot at the end.
        again = svc.guest(0, "echo guest-up\n"
                          "sivshm-poke check-marks\n"
                          "sivshm-poke wait-peers 0x6 120000\n"
                          "sivshm-pingpong mapper %d 1 signal\n"
                          "sivshm-poke check-marks\n" % ROUNDS,
                          programs=poke + pp)
        again.name = "mr-mapper-again"
        second = Running(again, svc.d)
        mapper_up(svc, second)
        hostile = subprocess.Popen(
            [builddir("tests", "vm", "host", "sivshm-hostile"), svc.sock,
             "3", "1", "2", "3", "15", "hold"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        r2 = second.wait(300)
        out = hostile.communicate(timeout=60)[0].decode()
        check(hostile.returncode == 0,
              "sivshm-hostile against the persistent mapper:\n" + out)
        rr = runs[1].wait(200)
        check(r2.outcome == "pass", r2.describe() + "\n" + r2.text())
        check(rr.outcome == "pass", rr.describe() + "\n" + rr.text())
        with open(os.path.join(svc.d, reducer.name + ".stderr")) as f:
            log = f.read()
        check("went away" in log and "rejoined" in log,
              "reducer 1's QEMU did not say it rejoined:\n" + log)
        lines = r2.text().splitlines()
        print("mapper restarted with unlink=off: " +
              next(l for l in lines if "markers" in l))
        print("reducer 1 rejoined it: " +
              next(l for l in lines if "pingpong" in l))
        print("hostile reducer 2: " +
              next(l for l in out.splitlines() if "sent" in l))
    finally:
        shutil.rmtree(d)


def mapper_replaced(poke):
    """unlink=on: the second mapper brings new memory, which reducer 1's
    BAR1 does not show; its QEMU must say so and not rejoin."""
    svc = Service("mn", 1, size="8M")
    runs = svc.start(svc.guest(0, "sivshm-poke mark\n", programs=poke),
                     [svc.guest(1, "sleep 600\n")])
    r1 = runs[0].wait(200)
    check(r1.outcome == "pass", r1.describe())
    again = svc.guest(0, "sleep 600\n")
    again.name = "mn-mapper-again"
    second = Running(again, svc.d)
    stderr = os.path.join(svc.d, "mn-reducer1.stderr")
    log = ""
    for _ in range(600):
        with open(stderr) as f:
            log = f.read()
        if "another region" in log:
            break
        time.sleep(0.1)
    second.kill()
    runs[1].kill()
    check("came back with another region" in log and "rejoined" not in log,
          "reducer 1's QEMU with a new unlink=on mapper:\n" + log)
    print("a new unlink=on mapper is not rejoined: " +
          next(l for l in log.splitlines() if "another region" in l)
          .split("warning: ")[-1])


def test():
    poke = [builddir("tests", "vm", "guest", "sivshm-poke")]
    pp = [builddir("tests", "vm", "guest", "sivshm-pingpong")]
    reducer_restart(poke)
    mapper_restart(poke, pp)
    mapper_replaced(poke)


main(test)

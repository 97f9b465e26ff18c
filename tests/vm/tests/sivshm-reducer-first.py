#!/usr/bin/env python3
# runtests: cores 1
"""A reducer VM that starts before its mapper.  Given the job's size and
reducer count, its QEMU's realize does not wait for a mapper: the guest
boots with none there, sees no peer, and blocks.  A mapper (a host
process here) then starts, the device joins in the background, and the
guest learns it through the peer-change interrupt and the peer bitmap,
maps its slot and writes to it: the mapper reads those bytes."""

import os
import subprocess
import time
from vmtest import builddir, check, main
from sivshm import Service, wait_console


def test():
    poke = [builddir("tests", "vm", "guest", "sivshm-poke")]
    svc = Service("first", 3, size="8M", extra=",size=8M,reducers=3")
    reducer = svc.guest(2, "echo guest-up\nsivshm-poke wait-mapper 300000\n",
                        programs=poke)
    run = svc.start(reducer, [])[0]
    wait_console(run, "guest-up")
    check(not os.path.exists(svc.sock), "a mapper was there")
    time.sleep(2)       # a while without a mapper: nothing may give up
    mapper = subprocess.Popen(
        [builddir("tests", "vm", "host", "sivshm-mapper"), svc.sock, "3",
         "1", str(8 << 20)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True)
    check(mapper.stdout.readline() == "listening\n", "no host mapper")
    r = run.wait(300)
    mapper.stdin.close()
    out = mapper.stdout.read()
    check(mapper.wait(30) == 0, "the host mapper failed")
    check(r.outcome == "pass", r.describe() + "\n" + r.text())
    print(next(l for l in r.text().splitlines() if "mapper came" in l))
    print("the mapper reads slot 2: " + out.splitlines()[1])
    check("slot2: reducer 2 was first" in out,
          "the mapper does not see the reducer's write:\n" + out)
    with open(run.stderr.name, errors="replace") as f:
        check("reducer 2 joined the mapper" in f.read(),
              "the reducer's QEMU did not say it joined")


main(test)

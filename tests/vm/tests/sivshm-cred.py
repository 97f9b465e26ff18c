#!/usr/bin/env python3
# runtests: cores 1
"""Peer credentials between VMs, with reducer QEMUs that run as another
uid (nobody, through setpriv).  The mapper VM allows reducer id 1 to uid
and gid 65534 only and id 2 to root only: a nobody QEMU asking for id 2 is
refused before any descriptor is sent and fails to start with the reason;
a nobody QEMU asking for id 1 joins, and both guests see each other.  A
reducer QEMU that expects its mapper to run as nobody refuses the root
mapper before saying HELLO."""

import os
import time
from vmtest import Running, builddir, check, main, user_dir
from sivshm import Service, mapper_up

NOBODY = 65534


def refused(svc, vm_id, user, extra, why):
    """A reducer whose realize must fail: its QEMU exits with @why."""
    g = svc.guest(vm_id, "true\n", qemu_args=[])
    g.qemu_args[1] += ",timeout=3000" + extra
    r = Running(g, svc.d, user=user).wait(60)
    check(r.qemu_status != 0, "%s started" % g.name)
    check(why in r.stderr, "%s: %s" % (g.name, r.stderr))
    print("%s refused: %s" % (g.name, r.stderr.strip().splitlines()[-1]))


def test():
    poke = [builddir("tests", "vm", "guest", "sivshm-poke")]
    # Every file of the service in nobody's directory: the reducers' QEMUs
    # open theirs and connect to the mapper's socket as nobody.
    nobody = user_dir(NOBODY, NOBODY)
    svc = Service("cred", 3, size="8M", d=nobody.path,
                  extra=",creds=1:%d:%d;2:0:0" % (NOBODY, NOBODY))
    mapper = svc.guest(0, "echo guest-up\n"
                       "sivshm-poke wait-peers 0x2 300000\n"
                       "sivshm-poke wait-peers 0x0 300000\n", programs=poke)
    run = svc.start(mapper, [])[0]
    mapper_up(svc, run)
    os.chmod(svc.sock, 0o666)       # the socket's mode is not under test
    svc.extra = ""                  # the reducers' own properties

    refused(svc, 2, nobody, "", "these credentials may not take this id")
    refused(svc, 3, None, ",mapper-cred=%d:%d" % (NOBODY, NOBODY),
            "the mapper runs as uid 0 gid 0")

    reducer = svc.guest(1, "sivshm-poke wait-peers 0x1 300000\n",
                        programs=poke)
    r1 = Running(reducer, svc.d, user=nobody)
    uid = None
    for _ in range(100):            # setpriv, then exec of QEMU
        with open("/proc/%d/status" % r1.proc.pid) as f:
            uid = next(l.split()[1] for l in f if l.startswith("Uid:"))
        if uid == str(NOBODY):
            break
        time.sleep(0.05)
    check(uid == str(NOBODY), "the reducer's QEMU runs as uid %s" % uid)
    results = [r1.wait(300), run.wait(300)]
    for r in results:
        check(r.outcome == "pass", r.describe() + "\n" + r.text())
    print("reducer 1 as uid %d joined the mapper VM" % NOBODY)


main(test)

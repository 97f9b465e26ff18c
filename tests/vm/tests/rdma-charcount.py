#!/usr/bin/env python3
"""Remote reducers: two hosts, each a guest with Soft-RoCE (rxe) on its
NIC, joined by a QEMU socket network backend.  Host A runs the charcount
mapper, serving reducer 1 on its unix socket and reducers 2 and 3 over
RDMA; host B runs the remote ones.  Before the job, on B: a reducer with
a wrong key is refused, and a hostile reducer holding the keys of 2 and 3
is refused by the NIC when it reads 3's slot through 2's queue pair and
past 3's slot, each refusal ending that connection only; on A: a local
reducer taking a remote id is refused.  Then the job's total is exact."""

import secrets

from rdma import Hosts, mapper_script
from vmtest import builddir, check, main

PORT = 7471
# The job: 3 reducers, slots of 1 MiB, 24 MiB of input in 9 rounds.
JOB = "--reducers 3 --size 4M --random 24M --mode irq --timeout 300000"
# The guests' bound: passes took 11 to 14 s (docs/testing.md).
GUEST_S = 120


def programs():
    return [builddir("tests", "vm", "guest", p) for p in
            ("charcount-mapper", "charcount-reducer", "rdma-hostile")]


# A local reducer taking remote id 2 is refused before the job.
MAPPER = mapper_script(JOB, PORT, """
if charcount-reducer --socket /tmp/cc.sock --id 2 --mode irq \\
	>/tmp/local2.out 2>&1; then
	echo "a local reducer took remote id 2"; exit 1
fi
cat /tmp/local2.out
grep -q "Object is remote" /tmp/local2.out""")

REMOTE = """
addr=$RDMA_PEER:%d
# Until the mapper listens: the wrong key, then refused for it.
rdma_wait_mapper charcount-reducer --connect $addr --id 2 --keys /etc/wrong \\
	--mode irq >/tmp/wrong.out
grep -q "Permission denied" /tmp/wrong.out
rdma-hostile $addr /etc/keys 2 3
charcount-reducer --connect $addr --id 2 --keys /etc/keys --mode irq &
r2=$!
charcount-reducer --connect $addr --id 3 --keys /etc/keys --mode irq
wait $r2
""" % PORT


def test():
    keys = {j: secrets.token_hex(32) for j in (2, 3)}
    keyfile = "".join("%d %s\n" % (j, k) for j, k in keys.items()).encode()
    wrong = ("2 %s\n" % secrets.token_hex(32)).encode()
    hosts = Hosts("rdma-cc", 2)
    hosts.start([
        hosts.guest(0, MAPPER, memory=768, programs=programs(),
                    files={"/etc/keys": keyfile}),
        hosts.guest(1, REMOTE, memory=768, programs=programs(),
                    files={"/etc/keys": keyfile, "/etc/wrong": wrong}),
    ])
    ra, rb = hosts.wait(GUEST_S)
    check(rb.outcome == "pass", "host 1: " + rb.describe())
    check(ra.outcome == "pass", "host 0: " + ra.describe())
    out = ra.text()
    check("(direct count" in out and ": match)" in out,
          "the job's total is not the direct count")
    check("refused remote reducer 2 from 10.0.0.2: wrong key" in out,
          "the mapper did not log the wrong key")
    check("remote reducer 2 joined from 10.0.0.2" in out,
          "reducer 2 did not join")
    bout = rb.text()
    for line in ("reading 3's slot through 2: remote access error",
                 "3 still served", "reading past 3's slot: remote access"):
        check(line in bout, "hostile: no \"%s\"" % line)


main(test)

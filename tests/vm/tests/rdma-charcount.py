#!/usr/bin/env python3
"""Remote reducers: two hosts, each a guest with Soft-RoCE (rxe) on its
NIC, joined by a QEMU socket network backend.  Host A runs the charcount
mapper, serving reducer 1 on its unix socket and reducers 2 and 3 over
RDMA; host B runs the remote ones.  Before the job, on B: a reducer with
a wrong key is refused, and a hostile reducer holding the keys of 2 and 3
is refused by the NIC when it reads 3's slot through 2's queue pair and
past 3's slot, each refusal ending that connection only; on A: a local
reducer taking a remote id is refused.  Then the job's total is exact."""

import os
import secrets
import socket

from vmtest import Guest, Running, builddir, check, guest_sh, logdir, main

PORT = 7471
KMODS = ["virtio_net", "rdma_rxe", "rdma_ucm", "ib_uverbs"]
# The job: 3 reducers, slots of 1 MiB, 24 MiB of input in 8 rounds.
JOB = "--reducers 3 --size 4M --random 24M --mode irq --timeout 300000"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def host(name, script, addr, netdev, mac, files):
    progs = [builddir("tests", "vm", "guest", p) for p in
             ("charcount-mapper", "charcount-reducer", "rdma-hostile",
              "rxe-link")]
    return Guest(name, "rdma_up %s\n%s" % (addr, script), kmods=KMODS,
                 programs=progs, files=files,
                 shell_libs=[guest_sh("rdma.sh")], memory=768,
                 qemu_args=["-netdev", netdev, "-device",
                            "virtio-net-pci,netdev=n0,mac=" + mac])


MAPPER = """
charcount-mapper --socket /tmp/cc.sock %s \\
	--listen 10.0.0.1:%d --keys /etc/keys >/tmp/mapper.out 2>&1 &
mapper=$!
until [ -S /tmp/cc.sock ]; do sleep 0.1; done
if charcount-reducer --socket /tmp/cc.sock --id 2 --mode irq \\
	>/tmp/local2.out 2>&1; then
	echo "a local reducer took remote id 2"; exit 1
fi
cat /tmp/local2.out
grep -q "Object is remote" /tmp/local2.out
charcount-reducer --socket /tmp/cc.sock --id 1 --mode irq &
wait $mapper
cat /tmp/mapper.out
""" % (JOB, PORT)

REMOTE = """
addr=10.0.0.1:%d
# Until the mapper listens: the wrong key, then refused for it.
i=0
until charcount-reducer --connect $addr --id 2 --keys /etc/wrong \\
	--mode irq >/tmp/wrong.out 2>&1 || grep -q "refused our key" /tmp/wrong.out
do
	i=$((i + 1))
	[ $i -lt 300 ] || { cat /tmp/wrong.out; exit 1; }
	sleep 0.5
done
cat /tmp/wrong.out
grep -q "Permission denied" /tmp/wrong.out
rdma-hostile $addr /etc/keys 2 3
charcount-reducer --connect $addr --id 2 --keys /etc/keys --mode irq &
r2=$!
charcount-reducer --connect $addr --id 3 --keys /etc/keys --mode irq
wait $r2
""" % PORT


def test():
    port = free_port()
    keys = {j: secrets.token_hex(32) for j in (2, 3)}
    keyfile = "".join("%d %s\n" % (j, k) for j, k in keys.items()).encode()
    wrong = ("2 %s\n" % secrets.token_hex(32)).encode()
    d = logdir()
    a = Running(host("rdma-a", MAPPER, "10.0.0.1/24",
                     "socket,id=n0,listen=127.0.0.1:%d" % port,
                     "52:54:00:00:00:01", {"/etc/keys": keyfile}), d)
    b = Running(host("rdma-b", REMOTE, "10.0.0.2/24",
                     "socket,id=n0,connect=127.0.0.1:%d" % port,
                     "52:54:00:00:00:02",
                     {"/etc/keys": keyfile, "/etc/wrong": wrong}), d)
    ra, rb = a.wait(600), b.wait(600)
    check(rb.outcome == "pass", "host B: " + rb.describe())
    check(ra.outcome == "pass", "host A: " + ra.describe())
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

#!/usr/bin/env python3
"""make bench: charcount across two hosts, remote reducers over Soft-RoCE
against TCP between the same hosts, and against local sivshm on one of
them.  A benchmark, not a test: it prints a table and judges nothing.

Two hosts joined by RDMA (tests/vm/rdma.py: guests with rxe on virtio-net,
their QEMUs joined by a socket netdev).  In one run, on the same seeded
input, each system REPEAT times, the median of the mapper's result lines:
  local   host 0: charcount-mapper and NREDUCERS local reducers (sivshm)
  rdma    host 0: the mapper; host 1: NREDUCERS remote reducers
  tcp     host 0: charcount-tcp-mapper; host 1: its reducers, over TCP
Figures are TCG: only their ratios inside this run mean anything, and
Soft-RoCE is the guests' CPUs doing a NIC's work (docs/benchmarks.md).
"""

import argparse
import re
import secrets
import statistics

from rdma import Hosts
from vmtest import builddir, check

PORT = 7471
NREDUCERS = 3
SIZE = "4M"            # the region: 1 MiB slots for 3 reducers
TOTAL = "96M"
REPEAT = 3
GUEST_S = 1800


def programs():
    return [builddir("tests", "vm", "guest", p) for p in
            ("charcount-mapper", "charcount-reducer",
             "charcount-tcp-mapper", "charcount-tcp-reducer")]


def scripts(repeat):
    job = "--reducers %d --size %s --random %s" % (NREDUCERS, SIZE, TOTAL)
    ids = " ".join(str(j) for j in range(1, NREDUCERS + 1))
    host0 = """
for i in $(seq %(repeat)d); do
	charcount-mapper --socket /tmp/l.sock %(job)s --mode irq \\
		--name local$i >/tmp/o 2>&1 &
	m=$!
	for j in %(ids)s; do
		charcount-reducer --socket /tmp/l.sock --id $j --mode irq \\
			>/dev/null 2>&1 &
	done
	wait $m; grep "^result" /tmp/o | sed "s/^/local /"
	charcount-mapper --socket /tmp/r.sock %(job)s --mode irq \\
		--listen $RDMA_SELF:%(port)d --keys /etc/keys >/tmp/o 2>&1
	grep "^result" /tmp/o | sed "s/^/rdma /"
	charcount-tcp-mapper --port %(tport)d --addr $RDMA_SELF %(job)s \\
		>/tmp/o 2>&1
	grep "^result" /tmp/o | sed "s/^/tcp /"
done
""" % dict(repeat=repeat, job=job, ids=ids, port=PORT, tport=PORT + 1)
    host1 = """
for i in $(seq %(repeat)d); do
	for j in %(ids)s; do
		until charcount-reducer --connect $RDMA_PEER:%(port)d --id $j \\
			--keys /etc/keys --mode irq >/dev/null 2>&1; do
			sleep 0.2
		done &
	done
	wait
	for j in %(ids)s; do
		charcount-tcp-reducer --port %(tport)d --addr $RDMA_PEER \\
			--id $j --timeout 600000 >/dev/null 2>&1 &
	done
	wait
done
""" % dict(repeat=repeat, ids=ids, port=PORT, tport=PORT + 1)
    return host0, host1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=REPEAT)
    args = ap.parse_args()
    keys = "".join("%d %s\n" % (j, secrets.token_hex(32))
                   for j in range(1, NREDUCERS + 1)).encode()
    host0, host1 = scripts(args.repeat)
    hosts = Hosts("rdma-bench", 2)
    hosts.start([
        hosts.guest(0, host0, memory=1024, programs=programs(),
                    files={"/etc/keys": keys}),
        hosts.guest(1, host1, memory=1024, programs=programs(),
                    files={"/etc/keys": keys}),
    ])
    r0, r1 = hosts.wait(GUEST_S)
    check(r0.outcome == "pass" and r1.outcome == "pass",
          "%s; %s" % (r0.describe(), r1.describe()))
    runs = {}
    for line in r0.text().splitlines():
        m = re.match(r"(local|rdma|tcp) result (.*)", line)
        if m:
            kv = dict(x.split("=", 1) for x in m.group(2).split())
            check(kv["count"] == kv["direct"], "a wrong total: " + line)
            runs.setdefault(m.group(1), []).append(kv)
    print("charcount across two hosts (TCG; %d reducers, %s in %s of "
          "region, median of %d)" % (NREDUCERS, TOTAL, SIZE, args.repeat))
    print("%-6s %10s %10s %10s" % ("system", "xfer_s", "resp_s", "job_s"))
    med = {}
    for name in ("local", "rdma", "tcp"):
        rs = runs.get(name, [])
        check(len(rs) == args.repeat, "%d %s runs" % (len(rs), name))
        med[name] = {k: statistics.median(float(r[k]) for r in rs)
                     for k in ("xfer_s", "resp_s", "job_s")}
        print("%-6s %10.3f %10.3f %10.3f" % (
            name, med[name]["xfer_s"], med[name]["resp_s"],
            med[name]["job_s"]))
    print("job time, rdma / tcp: %.2f; rdma / local: %.2f" % (
        med["rdma"]["job_s"] / med["tcp"]["job_s"],
        med["rdma"]["job_s"] / med["local"]["job_s"]))


main()

#!/usr/bin/env python3
"""Remote reducers through faults: two hosts joined by RDMA
(tests/vm/rdma.py), host 0 the mapper's, host 1 two remote reducers'.
Three jobs, one fault each, mid-job; each job's total must be exact:

1. reducer 2 is killed (SIGKILL) and started again: it joins with a new
   proof, reads its slot and answers the request it finds there;
2. host 1's link is taken down for LINK_DOWN_S (QMP set_link), longer
   than the transport's retries: both sides fail the connections, the
   reducers join again once the link is back;
3. the mapper is killed and started again: the reducers, still running,
   join the new mapper and serve its job from its first request.
"""

import secrets
import time

from rdma import Hosts
from vmtest import builddir, check, log, main

PORT = 7471
# 2 remote reducers, slots of 1 MiB: about 7 s of rounds under TCG.
JOB = ("--reducers 2 --size 3M --random 160M --mode irq --timeout 300000 "
       "--listen $RDMA_SELF:%d --keys /etc/keys" % PORT)
# Longer than the retries' 4 s, so both sides see the link lost.
LINK_DOWN_S = 10
# Bounds in seconds (docs/testing.md): for host 1's fault line, and for
# the guests.
FAULT_S = 180
GUEST_S = 420


def programs():
    return [builddir("tests", "vm", "guest", p) for p in
            ("charcount-mapper", "charcount-reducer")]


# busybox has no pkill: SIGKILL to every process whose command line has $1.
KILL = """
kill_all() {
	for d in /proc/[0-9]*; do
		case "$(tr '\\0' ' ' <"$d/cmdline" 2>/dev/null)" in
		*"$1"*) kill -9 "${d#/proc/}" 2>/dev/null || true ;;
		esac
	done
}
"""

MAPPER = KILL + """
job() {
	charcount-mapper --socket /tmp/cc.sock %s >/tmp/job$1.out 2>&1
}
echo "== job 1: a reducer killed"
job 1 || { cat /tmp/job1.out; exit 1; }
cat /tmp/job1.out
echo "== job 2: the link down"
job 2 || { cat /tmp/job2.out; exit 1; }
cat /tmp/job2.out
echo "== job 3: the mapper killed"
job 3 &
m=$!
rdma_wait_file /tmp/job3.out "reducers ready"
sleep 2
kill_all "charcount-mapper --socket"
wait $m || true
cat /tmp/job3.out
echo "fault: mapper killed"
job 3 || { cat /tmp/job3.out; exit 1; }
cat /tmp/job3.out
""" % JOB

REMOTE = KILL + """
addr=$RDMA_PEER:%d
reducer() {
	charcount-reducer --connect $addr --id $1 --keys /etc/keys --mode irq \\
		--timeout 120000 >>/tmp/r$1.out 2>&1
}
# Join once the mapper listens.
joined() {
	i=0
	until grep -q "$2" /tmp/r$1.out 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 600 ] || { cat /tmp/r$1.out; return 1; }
		sleep 0.2
	done
}
# Until the reducer ends its job: started again when it is killed, or
# when the mapper is not there yet.
start() {
	while ! reducer $1; do
		grep -q "Permission denied" /tmp/r$1.out && return 1
		sleep 0.5
	done
}
echo "== job 1"
start 1 & r1=$!
start 2 & r2=$!
joined 2 "joined,"
sleep 2
kill_all "--id 2 "
echo "fault: reducer 2 killed"
wait $r1
wait $r2
echo "== job 2"
start 1 & r1=$!
start 2 & r2=$!
joined 1 "joined,"
joined 2 "joined,"
sleep 2
echo "FAULT link-down"
wait $r1
wait $r2
echo "== job 3"
start 1 & r1=$!
start 2 & r2=$!
wait $r1
wait $r2
for r in 1 2; do echo "-- reducer $r"; cat /tmp/r$r.out; done
""" % PORT


def test():
    keyfile = "".join("%d %s\n" % (j, secrets.token_hex(32))
                      for j in (1, 2)).encode()
    hosts = Hosts("rdma-faults", 2)
    hosts.start([
        hosts.guest(0, MAPPER, memory=768, programs=programs(),
                    files={"/etc/keys": keyfile}),
        hosts.guest(1, REMOTE, memory=768, programs=programs(),
                    files={"/etc/keys": keyfile}),
    ])
    hosts.wait_line(1, "FAULT link-down", FAULT_S)
    hosts.set_link(1, False)
    log("host 1's link down for %d s" % LINK_DOWN_S)
    time.sleep(LINK_DOWN_S)
    hosts.set_link(1, True)
    log("host 1's link up")
    ra, rb = hosts.wait(GUEST_S)
    check(ra.outcome == "pass", "host 0: " + ra.describe())
    check(rb.outcome == "pass", "host 1: " + rb.describe())
    out = ra.text()
    check(out.count(": match)") == 3 and "MISMATCH" not in out,
          "not three exact totals")
    check("remote reducer 2 left" in out, "the mapper never saw 2 go")
    bout = rb.text()
    check("reducer 2: resuming at request" in bout,
          "the restarted reducer 2 found no pending request: the kill "
          "did not land mid-job")
    check(bout.count("joined again") >= 2,
          "the reducers did not join again after the link and the mapper")
    check("serving again at request 1" in bout,
          "no reducer served the restarted mapper's job from its start")


main(test)

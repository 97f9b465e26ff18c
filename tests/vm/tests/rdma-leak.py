#!/usr/bin/env python3
"""Remote reducers leave nothing behind: one host with Soft-RoCE
(tests/vm/rdma.py) runs tests/vm/guest/rdma-leak, a mapper and its remote
reducers in one process over the host's own RDMA address.  Reducers join
and leave, are refused a wrong key, are replaced by a second join of
their id, are killed, lose their mapper to a close, and prove their key
after a flood of requests for challenges (a replay of the proof
refused); after each, the
process's descriptors and the device's protection domains, queues, queue
pairs, CM ids, memory regions and contexts are what they were."""

from rdma import Hosts
from vmtest import builddir, check, main

PORT = 7471
# The guest's bound: passes took 9 to 12 s (docs/testing.md).
GUEST_S = 120
STEPS = ("join and leave", "wrong key", "id taken again", "reducer killed",
         "mapper closed and started again", "proof after 24 ASKs")


def test():
    hosts = Hosts("rdma-leak", 1)
    hosts.start([hosts.guest(
        0, "rdma-leak $RDMA_SELF:%d\n" % PORT,
        programs=[builddir("tests", "vm", "guest", "rdma-leak")])])
    r, = hosts.wait(GUEST_S)
    check(r.outcome == "pass", r.describe())
    out = r.text()
    for step in STEPS:
        check("rdma-leak: %s x" % step in out, "no line for %r" % step)


main(test)

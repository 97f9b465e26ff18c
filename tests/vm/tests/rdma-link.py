#!/usr/bin/env python3
"""Two hosts joined by RDMA (tests/vm/rdma.py: Soft-RoCE on virtio-net, the
QEMUs joined by a socket netdev).  Host 0 serves rdma-ping; host 1, the
client, connects with RDMA CM, sends a message and reads the server's
1 MiB with one RDMA READ, every byte checked.  Then the test takes the
client's link down (QMP set_link) after a connect: the transfers fail
within the program's bound instead of hanging; a connect while the link
is down fails within its bound too; and once the link is up again a new
connection does it all again."""

import re
import time

from rdma import Hosts
from vmtest import check, log, main

PORT = 7471
# Per wait of the client while the link is down (a completion; the whole
# connect), and what the failure may take beyond it.  A completion's bound
# is over the 7 ack timeouts (about 2 s each) of rdma-ping's RC QPs, after
# which the transport itself gives up.
DOWN_MS = 20000
CONNECT_DOWN_MS = 5000
SLACK_MS = 5000
# Bounds in seconds, from the QEMUs' start: each host's rxe0 up, each
# request of the client to the test, and the guests' end.  The server's
# own bound ends before the guests'.
UP_S = 240
STEP_S = 240
GUEST_S = 480
SERVER_MS = 400000

SERVER = """
rdma-ping server "$RDMA_SELF" %d 2 %d
""" % (PORT, SERVER_MS)

CLIENT = """
echo "== connect, SEND, RDMA READ"
rdma-ping client "$RDMA_PEER" {port} 120000
echo "== the link goes down after a connect"
rdma-ping client "$RDMA_PEER" {port} {down} /tmp/go >/tmp/ping.out 2>&1 &
pid=$!
rdma_wait_file /tmp/ping.out "rdma-ping: client: connected"
echo "rdma-link: take the link down"
rdma_wait_carrier 0
rdma_wait_port DOWN
t0=$(rdma_ms)
touch /tmp/go
status=0
wait $pid || status=$?
cat /tmp/ping.out
if [ $status -eq 0 ]; then
	echo "rdma-link: the transfers succeeded with the link down"
	exit 1
fi
echo "rdma-link: transfers failed after $(($(rdma_ms) - t0)) ms"
echo "== a connect while the link is down"
t0=$(rdma_ms)
if rdma-ping client "$RDMA_PEER" {port} {cdown}; then
	echo "rdma-link: connected with the link down"
	exit 1
fi
echo "rdma-link: connect failed after $(($(rdma_ms) - t0)) ms"
echo "rdma-link: bring the link up"
t0=$(rdma_ms)
rdma_wait_carrier 1
rdma_wait_port ACTIVE
rdma_wait_gid
echo "rdma-link: port active, GID back after $(($(rdma_ms) - t0)) ms"
echo "== connect again"
rdma-ping client "$RDMA_PEER" {port} 60000
""".format(port=PORT, down=DOWN_MS, cdown=CONNECT_DOWN_MS)


def ms(text, pattern):
    m = re.search(pattern, text)
    check(m, "no %r in the client's output" % pattern)
    return float(m.group(1))


def test():
    hosts = Hosts("rdma-link", 2)
    t0 = time.monotonic()
    hosts.start([hosts.guest(0, SERVER), hosts.guest(1, CLIENT)])
    for i in (0, 1):
        log("host %d: rxe0 up %.1f s after its QEMU started"
            % (i, hosts.wait_line(i, "rdma: rxe0 on eth0", UP_S)))
    hosts.wait_line(1, "rdma-link: take the link down", STEP_S)
    hosts.set_link(1, False)
    hosts.wait_line(1, "rdma-link: bring the link up", STEP_S)
    hosts.set_link(1, True)
    rs, rc = hosts.wait(max(1, GUEST_S - (time.monotonic() - t0)))
    check(rs.outcome == "pass", rs.describe())
    check(rc.outcome == "pass", rc.describe())

    server, client = rs.text(), rc.text()
    for line in (server + client).splitlines():
        if line.startswith(("rdma:", "rdma-ping:", "rdma-link:")):
            print(line)
    check("rdma-ping: server: 2 session(s) done" in server,
          "the server did not see both sessions")
    check(client.count("every byte as the server wrote it") == 2,
          "the RDMA READ did not check out before and after the link")
    check(client.count("rdma-ping: client: ok") == 2,
          "the client did not end clean twice")
    check(re.search(r"rdma-ping: client: the (SEND|RDMA READ)"
                    r"( failed after |: no completion)", client),
          "no failed transfer said with the link down")
    failed = ms(client, r"rdma-link: transfers failed after (\d+) ms")
    check(failed < DOWN_MS + SLACK_MS, "the transfers failed after %d ms, "
          "over %d ms" % (failed, DOWN_MS + SLACK_MS))
    check(re.search(r"rdma-ping: client: no connection in %d ms"
                    % CONNECT_DOWN_MS, client),
          "no bounded connect said with the link down")
    failed = ms(client, r"rdma-link: connect failed after (\d+) ms")
    check(failed < CONNECT_DOWN_MS + SLACK_MS, "the connect failed after "
          "%d ms, over %d ms" % (failed, CONNECT_DOWN_MS + SLACK_MS))
    connects = re.findall(r"client: connected to \S+ in ([\d.]+) ms", client)
    log("CM connects (ms): %s" % ", ".join(connects))


main(test)

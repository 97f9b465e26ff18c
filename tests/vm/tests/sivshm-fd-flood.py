#!/usr/bin/env python3
# runtests: cores 1
"""A mapper VM's QEMU under 10000 hostile messages, each carrying
descriptors (tests/unit/hostile.c: an empty message, every malformed or
unwelcome HELLO, a sender that hangs up at once, a message after a good
WELCOME): QEMU's descriptor count is the same after as before, and the
guest saw the hostile tool's reducer come and go; QEMU's resident set
grew by less than RSS_SLACK_KIB.  The mapper has a backing dir
(unlink=on), and every slot it hands out is sealed against truncation all
the same."""

import subprocess
import time
from vmtest import builddir, check, main
from sivshm import Service, mapper_up, qemu_fds

MESSAGES = 10000
# A TCG guest still grows QEMU by a few MiB now and then; 1 KiB kept per
# message would be 10 MiB.
RSS_SLACK_KIB = 8192


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))


def test():
    poke = [builddir("tests", "vm", "guest", "sivshm-poke")]
    # With a backing dir and unlink=on: the slots must still come sealed.
    svc = Service("flood", 3, size="8M", vectors=2, extra=",dir=/dev/shm")
    # The guest sees the tool's reducer 1 arrive, then everyone gone.
    mapper = svc.guest(0, "echo guest-up\n"
                       "sivshm-poke wait-peers 0x2 300000\n"
                       "sivshm-poke wait-peers 0x0 300000\n", programs=poke)
    run = svc.start(mapper, [])[0]
    mapper_up(svc, run)
    pid = run.proc.pid
    before, rss0 = qemu_fds(pid), rss_kib(pid)
    t0 = time.monotonic()
    hostile = subprocess.run(
        [builddir("tests", "vm", "host", "sivshm-hostile"), svc.sock, "3",
         "2", "1", "2", str(MESSAGES)], capture_output=True, text=True,
        timeout=600)
    took = time.monotonic() - t0
    print(hostile.stdout.strip().splitlines()[-1])
    check(hostile.returncode == 0, "sivshm-hostile:\n" + hostile.stdout +
          hostile.stderr)
    after = qemu_fds(pid)
    for _ in range(50):             # the last connection may be closing
        if after == before:
            break
        time.sleep(0.1)
        after = qemu_fds(pid)
    print("QEMU: %d descriptors before, %d after %d messages in %.0f s; "
          "RSS %d -> %d KiB" % (before, after, MESSAGES, took, rss0,
                                rss_kib(pid)))
    check(after == before, "QEMU kept %d descriptors" % (after - before))
    # The guest idles meanwhile: what QEMU kept of 10000 messages shows.
    grew = rss_kib(pid) - rss0
    check(grew < RSS_SLACK_KIB, "QEMU's RSS grew by %d KiB" % grew)
    r = run.wait(300)
    check(r.outcome == "pass", r.describe() + "\n" + r.text())


main(test)

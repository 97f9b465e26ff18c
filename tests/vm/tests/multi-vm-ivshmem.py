#!/usr/bin/env python3
"""Multi-VM mode: two guests run at once, wired together by the test through
one ivshmem-plain region, and exchange a message and its acknowledgement.
Each guest keeps its own console log."""

import os
from vmtest import Guest, Running, builddir, check, logdir, main


def test():
    d = logdir()
    shm = "/dev/shm/vmtest-multi-%d" % os.getpid()
    with open(shm, "wb") as f:
        f.truncate(1 << 20)
    try:
        dev = ["-object", "memory-backend-file,id=shm,share=on,size=1M,"
               "mem-path=" + shm, "-device", "ivshmem-plain,memdev=shm"]
        prog = [builddir("tests", "vm", "guest", "ivshmem-rw")]
        a = Running(Guest("multi-a", """
ivshmem-rw write 0 ping-from-a
ivshmem-rw wait 4096 ack-from-b 60000
""", programs=prog, qemu_args=dev), d)
        b = Running(Guest("multi-b", """
ivshmem-rw wait 0 ping-from-a 60000
ivshmem-rw write 4096 ack-from-b
""", programs=prog, qemu_args=dev), d)
        ra, rb = a.wait(180), b.wait(180)
    finally:
        os.unlink(shm)
    check(ra.outcome == "pass", ra.describe())
    check(rb.outcome == "pass", rb.describe())
    check("found \"ack-from-b\"" in ra.text(), "a did not see b's ack")
    check("found \"ping-from-a\"" in rb.text(), "b did not see a's message")
    for name in ("multi-a", "multi-b"):
        check(os.path.getsize(os.path.join(d, name + ".console")) > 0,
              "no console log kept for " + name)


main(test)

#!/usr/bin/env python3
# runtests: cores 1
"""Harness self-test: a guest whose kernel panics is reported lost, never
passed, and well before the timeout (panic=-1 with -no-reboot ends QEMU)."""

from vmtest import Guest, Running, check, logdir, main


def test():
    run = Running(Guest("selftest-panic", """
echo 1 > /proc/sys/kernel/sysrq
echo c > /proc/sysrq-trigger
echo survived
"""), logdir())
    r = run.wait(120)
    check(r.outcome == "lost", "a panicked guest was not lost: %s"
          % r.describe())
    check(not r.timed_out, "the panic was only noticed at the timeout")
    check(any("Kernel panic" in s for s in r.splats),
          "the panic is not on the console: %s" % r.splats)
    print("caught as expected: " + r.describe())


main(test)

#!/usr/bin/env python3
"""Harness self-test: a guest that hangs is reported lost within its
timeout, never passed."""

from vmtest import Guest, Running, check, logdir, main

TIMEOUT = 30


def test():
    run = Running(Guest("selftest-hang", """
echo about to hang
while :; do :; done
"""), logdir())
    r = run.wait(TIMEOUT)
    check(r.outcome == "lost", "a hung guest was not lost: %s" % r.describe())
    check(r.timed_out, "the hang was not detected by the timeout")
    check(run.elapsed < TIMEOUT + 15,
          "the hung guest took %.0f s to be reported" % run.elapsed)
    print("caught as expected: " + r.describe())


main(test)

#!/usr/bin/env python3
# runtests: cores 1
"""Harness self-test: a guest that hangs is reported lost within its
timeout, never passed.  The timeout is about three plain boots (4 to 5 s
under TCG): the guest must have started its script (init says so on the
console) before it."""

from vmtest import Guest, Running, check, logdir, main

TIMEOUT = 15


def test():
    run = Running(Guest("selftest-hang", """
echo about to hang
while :; do :; done
"""), logdir())
    r = run.wait(TIMEOUT)
    check(r.outcome == "lost", "a hung guest was not lost: %s" % r.describe())
    check(r.timed_out, "the hang was not detected by the timeout")
    check("vmtest: running selftest-hang" in r.console,
          "the guest did not reach its script:\n" + r.console[-2000:])
    check(run.elapsed < TIMEOUT + 15,
          "the hung guest took %.0f s to be reported" % run.elapsed)
    print("caught as expected: " + r.describe())


main(test)

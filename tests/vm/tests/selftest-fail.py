#!/usr/bin/env python3
# runtests: cores 1
"""Harness self-test: a failing command inside the guest fails its test, and
its output and exit status come back."""

from vmtest import Guest, boot, check, main


def test():
    r = boot(Guest("selftest-fail", """
echo before the failing command
ls /no/such/file
echo never printed
"""), timeout=120)
    check(r.lost is None, "the guest was lost: %s" % r.lost)
    check(r.outcome == "fail",
          "a failing command did not fail the test: %s" % r.describe())
    check(r.status != 0, "exit status %s" % r.status)
    check("before the failing command" in r.text(),
          "output before the failure did not come back")
    check("never printed" not in r.text(), "the script went on after failing")
    print("caught as expected: " + r.describe())


main(test)

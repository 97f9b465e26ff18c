#!/usr/bin/env python3
# runtests: cores 1
"""Harness self-test: a guest module that WARNs fails its test, although
every command of the guest script succeeds."""

from vmtest import Guest, boot, builddir, check, main


def test():
    ko = builddir("tests", "vm", "modules", "vmtest_warn.ko")
    r = boot(Guest("selftest-warn", """
insmod /lib/modules/extra/vmtest_warn.ko
echo insmod succeeded
""", modules=[ko]), timeout=120)
    check(r.lost is None, "the guest was lost: %s" % r.lost)
    check(r.status == 0, "the guest script itself should succeed")
    check(r.outcome == "fail",
          "a WARN in the guest did not fail the test: %s" % r.describe())
    check(any("WARNING:" in s for s in r.splats),
          "the splat found is not the WARNING: %s" % r.splats)
    print("caught as expected: " + r.describe())


main(test)

#!/usr/bin/env python3
# runtests: cores 1.5
"""SIVSHM interrupts in VMs: mapper to reducer and reducer to mapper reach
the user program, first through the eventfd the library registers, then
through SIGUSR1 (the papers' path), with no lost and no spurious interrupt
over 10000 ping-pongs each."""

import os
from vmtest import builddir, check, main
from sivshm import Service, pingpong_scripts

ROUNDS = 10000


def test():
    pp = [builddir("tests", "vm", "guest", "sivshm-pingpong")]
    svc = Service("irq", 1, size="8M")
    scripts = pingpong_scripts(ROUNDS)
    mapper = svc.guest(0, scripts[0], programs=pp)
    reducer = svc.guest(1, scripts[1], programs=pp)
    results = [r.wait(600) for r in svc.start(mapper, [reducer])]
    for r in results:
        check(r.outcome == "pass", r.describe() + "\n" + r.text())
    for line in results[0].text().splitlines():
        print(line + " (under %s)" % os.environ.get("SIVSHM_ACCEL",
                                                    "tcg").upper())


main(test)

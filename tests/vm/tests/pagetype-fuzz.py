#!/usr/bin/env python3
"""The bounded random tester (tests/vm/kvm/pagetype-fuzz.c) against
kvm_pagetype.ko in a level-1 guest: op batches, guest stores from two
vCPUs at once, the VMM's own stores, the doorbell and RESET, from a seed,
for FUZZ_SECONDS; after every step the module's view must be guest
memory's.  Then the module unloads (nothing holds it) and loads again.
Any splat in level 1 fails the test (the harness).  SIVSHM_FUZZ_SEED and
SIVSHM_FUZZ_SECONDS pick another seed and length for a longer run by
hand."""

import os
import re
from vmtest import boot, check, main
from pagetype import host

# Long enough for a few thousand steps under TCG, short enough for the
# suite; docs/testing.md has a longer run's figures.
FUZZ_SECONDS = 90


def test():
    seed = os.environ.get("SIVSHM_FUZZ_SEED", "1")
    secs = int(os.environ.get("SIVSHM_FUZZ_SECONDS", FUZZ_SECONDS))
    r = boot(host("pagetype-fuzz", """
pagetype-fuzz %s %d
rmmod kvm_pagetype
insmod /lib/modules/extra/kvm_pagetype.ko
""" % (seed, secs), programs=["pagetype-fuzz"]), timeout=secs + 240)
    check(r.outcome == "pass", r.describe() + "\n" + r.text())
    out = r.text()
    m = re.search(r"pagetype-fuzz: (\d+) steps, (\d+) ops .*kills: "
                  r"(\d+) write, (\d+) batch", out)
    check(m and int(m[1]) > 0, "no summary:\n" + out)
    check("view was memory's after every step" in out, out)
    print(m[0])


main(test)

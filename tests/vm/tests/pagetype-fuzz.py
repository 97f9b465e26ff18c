#!/usr/bin/env python3
# runtests: cores 0.5
"""The bounded random tester (tests/vm/kvm/pagetype-fuzz.c) against
kvm_pagetype.ko in a level-1 guest: op batches, guest stores from two
vCPUs at once, the VMM's own stores, the doorbell and RESET, from a seed,
for FUZZ_SECONDS; after every step the module's view must be guest
memory's.  Then the module unloads (nothing holds it) and loads again.
Any splat in level 1 fails the test (the harness).  SIVSHM_FUZZ_SEED and
SIVSHM_FUZZ_SECONDS pick another seed and length for a longer run by
hand."""

import os
from vmtest import boot, check, main
from pagetype import FUZZ_SECONDS, check_fuzz, fuzz_script, host


def test():
    seed = os.environ.get("SIVSHM_FUZZ_SEED", "1")
    secs = int(os.environ.get("SIVSHM_FUZZ_SECONDS", FUZZ_SECONDS))
    r = boot(host("pagetype-fuzz", fuzz_script(seed, secs),
                  programs=["pagetype-fuzz"]), timeout=secs + 240)
    check(r.outcome == "pass", r.describe() + "\n" + r.text())
    print(check_fuzz(r.text()))


main(test)

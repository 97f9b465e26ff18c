#!/usr/bin/env python3
# runtests: cores 1
"""The platform fact kvm_pagetype is built on, on Linux 6.1: with its
page-table frames write-tracked, a guest load loops under kvm_amd npt=1
and runs under npt=0 (shadow paging), where an instruction KVM's
emulator lacks runs too.  Both in one level 1: npt=1 first, then kvm_amd
reloaded with npt=0.  Each run has an untracked control first.
pagetype-kernel-612 shows what 6.12 does."""

from vmtest import boot, check, main
from pagetype import host


def test():
    r = boot(host("pagetype-npt", """
test "$(cat /sys/module/kvm_amd/parameters/npt)" = Y
echo "== npt=1"
pagetype-npt loops
reload_kvm_amd npt=0
test "$(cat /sys/module/kvm_amd/parameters/npt)" = N
echo "== npt=0"
pagetype-npt runs
""", programs=["pagetype-npt"], npt=1), timeout=300)
    check(r.outcome == "pass", r.describe())
    out = r.text()
    check("tracked: no exit in" in out.split("== npt=0")[0],
          "npt=1 did not loop")
    check("tracked: the load completed" in out.split("== npt=0")[1],
          "npt=0 did not run")
    check("tracked: PSHUFB completed" in out.split("== npt=0")[1],
          "npt=0 did not run PSHUFB")


main(test)

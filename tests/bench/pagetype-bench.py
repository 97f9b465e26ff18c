#!/usr/bin/env python3
"""kvm_pagetype's per-operation costs (docs/benchmarks.md, "kvm_pagetype"):
tests/vm/kvm/pagetype-bench in a TCG level 1 with kvm_amd npt=0, against
a VM it makes itself.  A benchmark: it prints the table and writes it as
CSV to tests/logs/pagetype-bench.csv; it asserts nothing but that it ran."""

import os
import re
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "vm"))
from vmtest import boot, builddir  # noqa: E402
from pagetype import host  # noqa: E402

N = int(os.environ.get("PAGETYPE_BENCH_N", "100000"))


def main():
    r = boot(host("pagetype-bench", "pagetype-bench %d\n" % N,
                  programs=["pagetype-bench"]), timeout=900)
    print(r.text())
    if r.outcome != "pass":
        print("pagetype-bench: " + r.describe())
        return 1
    rows = re.findall(r"^(\S.*?)\s{2,}([\d.]+|-)\s+([\d.]+)\s+(-?\d+%|-)$",
                      r.text(), re.M)
    out = builddir("tests", "logs", "pagetype-bench.csv")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write("operation,native_us,pagetype_us,overhead_pct\n")
        for what, base, us, pct in rows:
            f.write("%s,%s,%s,%s\n" % (what.strip(), base.strip("-"), us,
                                        pct.strip("%-")))
    print("wrote " + out)
    return 0


sys.exit(main())

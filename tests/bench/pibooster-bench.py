#!/usr/bin/env python3
"""pibooster.ko's plain-guest figures (docs/benchmarks.md, "pibooster, plain
guest"): in one TCG guest with no host module, the page-table-heavy kernel
operations of tests/vm/guest/pt-lat (lmbench lat_proc's and
lat_pagefault's method; lmbench is not in Debian) natively, then with the
module in coarse mode, then in PiBooster mode, each the median of its
rounds; and the cache's size per level after a storm with no threshold.
Without a host the rules run in the guest (the local backend) and there
is no IOMMU: the figures price the hooks, the cache and the rule checks,
not the IOTLB flushes PiBooster saves.  A benchmark: it prints the table
and writes it as CSV to tests/logs/pibooster-bench.csv; it asserts
nothing but that it ran."""

import os
import re
import sys
from vmtest import boot, builddir
from pibooster import guest

ROUNDS = int(os.environ.get("PIBOOSTER_BENCH_ROUNDS", "7"))
PER_ROUND = int(os.environ.get("PIBOOSTER_BENCH_N", "20"))
STORM = int(os.environ.get("PIBOOSTER_BENCH_STORM", "40"))

SCRIPT = r"""
lat() { echo "== $1"; pt-lat -r %(r)d -n %(n)d; }
lat native
pib_load enable=0
lat coarse
echo 1 >$P/enable
lat pibooster
storm2 -n %(s)d
pause 1.5
for l in 1 2 3 4; do read c <$P/cached_l$l; echo "cache l$l $c"; done
pib_unload
""" % {"r": ROUNDS, "n": PER_ROUND, "s": STORM}


def main():
    g = guest("pibooster-bench", SCRIPT,
              programs=[builddir("tests", "vm", "guest", "pt-lat")])
    r = boot(g, timeout=1800)
    text = r.text()
    if r.outcome != "pass":
        print(text)
        print("pibooster-bench: " + r.describe())
        return 1
    lat = {}
    for mode in ("native", "coarse", "pibooster"):
        block = text.split("== %s\n" % mode, 1)[1].split("\n== ", 1)[0]
        lat[mode] = dict((m.group(1), float(m.group(2))) for m in
                         re.finditer(r"^lat (\S+) ([\d.]+)$", block, re.M))
    print("pibooster, plain guest (TCG, 2 vCPUs, local rule engine, no "
          "IOMMU); median of %d rounds of %d, us per operation"
          % (ROUNDS, PER_ROUND))
    print("%-14s %10s %10s %8s %10s %8s" % ("operation", "native", "coarse",
                                            "ratio", "pibooster", "ratio"))
    out = builddir("tests", "logs", "pibooster-bench.csv")
    with open(out, "w") as f:
        f.write("operation,native_us,coarse_us,coarse_ratio,pibooster_us,"
                "pibooster_ratio\n")
        for op in lat["native"]:
            n, c, p = (lat[m][op] for m in ("native", "coarse", "pibooster"))
            print("%-14s %10.1f %10.1f %8.2f %10.1f %8.2f"
                  % (op, n, c, c / n, p, p / n))
            f.write("%s,%.2f,%.2f,%.3f,%.2f,%.3f\n"
                    % (op, n, c, c / n, p, p / n))
    cache = re.findall(r"^cache (l\d) (\d+)$", text, re.M)
    total = sum(int(c) for _, c in cache)
    print("cache after a storm of %d x 2 children, no threshold: %s; %d "
          "pages, %d KiB" % (STORM, ", ".join("%s %s" % lc for lc in cache),
                             total, total * 4))
    print("wrote " + out)
    return 0


sys.exit(main())

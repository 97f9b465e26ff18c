#!/usr/bin/env python3
"""kvm_pagetype's per-operation costs (docs/benchmarks.md, "kvm_pagetype"):
tests/vm/kvm/pagetype-bench in a TCG level 1 with kvm_amd npt=0, against
a VM it makes itself.  Then its DMA rows in a second level 1, set up as
tests/vm/tests/pagetype-dma.py does (q35, emulated VT-d, edu alone in its
IOMMU group): a conversion per frame at batch sizes 1 to 512, fine-grained
against coarse mode, with edu confined to the VM.  A benchmark: it prints
the tables and writes them as CSV to tests/logs/pagetype-bench.csv and
pagetype-bench-dma.csv; it asserts nothing but that they ran."""

import os
import re
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "vm"))
from vmtest import boot, builddir  # noqa: E402
from pagetype import host, iommu_host  # noqa: E402

N = int(os.environ.get("PAGETYPE_BENCH_N", "100000"))
DMA_FRAMES = int(os.environ.get("PAGETYPE_BENCH_DMA_FRAMES", "4096"))

# edu's PCI name, from its vendor and device IDs.
DMA_SCRIPT = """
for d in /sys/bus/pci/devices/*; do
	grep -q 0x1234 $d/vendor && grep -q 0x11e8 $d/device && edu=${d##*/}
done
pagetype-bench dma $edu %d
"""


def dma_rows():
    """The DMA confinement rows; 0 or 1 like main()."""
    r = boot(iommu_host("pagetype-bench-dma", DMA_SCRIPT % DMA_FRAMES,
                        programs=["pagetype-bench"]), timeout=900)
    print(r.text())
    if r.outcome != "pass":
        print("pagetype-bench-dma: " + r.describe())
        return 1
    rows = re.findall(r"^(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+"
                      r"([\d.]+)\s+([\d.]+)$", r.text(), re.M)
    out = builddir("tests", "logs", "pagetype-bench-dma.csv")
    with open(out, "w") as f:
        f.write("frames_per_batch,fine_us_per_frame,coarse_us_per_frame,"
                "ratio,fine_flushes_per_batch,coarse_flushes_per_batch\n")
        for row in rows:
            f.write(",".join(row) + "\n")
    print("wrote " + out)
    return 0 if len(rows) == 4 else 1


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
    return dma_rows()


sys.exit(main())

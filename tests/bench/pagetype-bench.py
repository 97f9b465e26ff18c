#!/usr/bin/env python3
"""kvm_pagetype's per-operation costs (docs/benchmarks.md, "kvm_pagetype"):
tests/vm/kvm/pagetype-bench in a TCG level 1 with kvm_amd npt=0, against
a VM it makes itself.  Then its DMA rows in a second level 1, set up as
tests/vm/tests/pagetype-dma.py does (q35, emulated VT-d, edu alone in its
IOMMU group): a conversion per frame at batch sizes 1 to 512, fine-grained
against coarse mode, with edu confined to the VM.  Last, the carriers seen
from a real level-2 Linux (tests/vm/modules/pagetype_l2.ko bench=N): N
round trips of a null op through the pagetype device's COUNT register
(an exit to QEMU, which calls the module's ioctl) and through the
doorbell page, against N writes to its NULL register (an exit to QEMU
that does nothing).  A benchmark: it prints the tables and writes them as
CSV to tests/logs/pagetype-bench.csv, pagetype-bench-dma.csv and
pagetype-bench-qemu.csv; it asserts nothing but that they ran."""

import os
import re
import sys
from vmtest import Guest, boot, builddir, nested, nested_result
from pagetype import host, iommu_host, pagetype_device

N = int(os.environ.get("PAGETYPE_BENCH_N", "100000"))
DMA_FRAMES = int(os.environ.get("PAGETYPE_BENCH_DMA_FRAMES", "4096"))
QEMU_N = int(os.environ.get("PAGETYPE_BENCH_QEMU_N", "100000"))

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


def qemu_rows():
    """The carriers from a level-2 Linux; 0 or 1 like main()."""
    ko = builddir("tests", "vm", "modules", "pagetype_l2.ko")
    l2 = Guest("pagetype-bench-l2", "insmod /lib/modules/extra/"
               "pagetype_l2.ko bench=%d\n" % QEMU_N, modules=[ko],
               qemu_args=pagetype_device(), memory=256, smp=1)
    l1 = nested("mount -t debugfs none /sys/kernel/debug\n"
                "insmod /lib/modules/extra/kvm_pagetype.ko\n"
                "run_l2\n", l2, smp=1, kmod_opts={"kvm_amd": "npt=0"},
                modules=[builddir("kvm-pagetype", "kvm_pagetype.ko")],
                l2_timeout=1500)
    r2 = nested_result(boot(l1, timeout=1800, emulator_retries=2),
                       "pagetype-bench-l2")
    ns = dict(re.findall(r"bench (\S+) (\d+)",
                         r2.dmesg.decode(errors="replace")))
    if r2.outcome != "pass" or len(ns) != 3:
        print("pagetype-bench-l2: " + r2.describe())
        return 1
    base = int(ns["null-register"])
    print("kvm_pagetype from a level-2 Linux (TCG/nested), %d round trips "
          "each, ns per op:" % QEMU_N)
    out = builddir("tests", "logs", "pagetype-bench-qemu.csv")
    with open(out, "w") as f:
        f.write("carrier,ns_per_op,ratio_to_null_register\n")
        for what, key in (("NULL register write (baseline)", "null-register"),
                          ("null op through COUNT (QEMU, ioctl)",
                           "qemu-count"),
                          ("null op through the doorbell page", "doorbell")):
            v = int(ns[key])
            print("  %-38s %9d  %.2f" % (what, v, v / base))
            f.write("%s,%d,%.3f\n" % (key, v, v / base))
    print("wrote " + out)
    return 0


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
    return dma_rows() | qemu_rows()


sys.exit(main())

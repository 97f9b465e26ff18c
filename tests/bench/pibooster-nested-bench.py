#!/usr/bin/env python3
"""pibooster.ko's figures against the real host module with a device
confined (docs/benchmarks.md, "pibooster, nested"): a TCG level 1 on q35
with an emulated VT-d, QEMU's edu alone in its IOMMU group, kvm_amd npt=0
and kvm_pagetype.ko; a level-2 Debian guest whose QEMU confines edu to it
(-device pagetype,dma-device=...), so that every page table it pins is
unmapped from edu's IOMMU domain.  In level 2, one boot:

  1. pt-lat (lmbench lat_proc's method) natively, in coarse mode and in
     PiBooster mode;
  2. per level, the time pibooster.ko spends allocating and freeing a
     table: one table at a time through the module's own paths (debugfs
     pibooster/bench, coarse and PiBooster alternately, median of
     BENCH_RUNS runs), and as the kernel's tables came and went over the
     coarse and the Pre-PiBooster storms (debugfs pibooster/latency,
     where a free is its share of a reaper batch);
  3. a process-churn workload (pt-storm) in three phases: coarse, PiBooster
     enabled before it (Pre-PiBooster), and coarse with PiBooster enabled
     while it runs (Dyn-PiBooster).

Level 1 samples the host module's IOTLB flush and map counts once a
second, with the phase level 2 is in, and level 0's QEMU traces every
IOTLB invalidation it is asked for, with its time (-msg timestamp=on):
both are binned by the second they happened (level 1's clock comes from
level 0's, through the emulated RTC).  It prints the tables, writes CSV to
tests/logs/pibooster-nested-bench*.csv and, with gnuplot, the flush rate
over time to tests/logs/pibooster-flushes.png (the paper's figure 8).  A
benchmark: it asserts nothing but that it ran."""

import os
import re
import shutil
import subprocess
import sys
from vmtest import Guest, boot, builddir, nested, nested_result
from pibooster import EDU, HELPERS, IOMMU_L1, KO, STORM
ROUNDS = int(os.environ.get("PIBOOSTER_BENCH_ROUNDS", "5"))
PER_ROUND = int(os.environ.get("PIBOOSTER_BENCH_N", "10"))
PHASE = int(os.environ.get("PIBOOSTER_BENCH_PHASE", "30"))
BIN = 5         # seconds per point of the flush rate
BENCH_RUNS = 3  # debugfs pibooster/bench runs per mode
BENCH_N = 200   # tables per level per run

L2_SCRIPT = r"""
mount -t debugfs none /sys/kernel/debug
phase() { echo "pibooster-bench: phase $1" >/dev/kmsg; }
latency() { echo "== latency $1"; cat /sys/kernel/debug/pibooster/latency; }
lat() { echo "== lat $1"; pt-lat -r %(r)d -n %(n)d; }
phase native; lat native
pib_load enable=0
phase coarse-lat; lat coarse
echo 1 >$P/enable
phase pibooster-lat; lat pibooster
B=/sys/kernel/debug/pibooster/bench
for i in $(seq %(runs)d); do
	echo 0 >$P/enable; echo %(bn)d >$B; echo "== bench $i"; cat $B
	echo 1 >$P/enable; echo %(bn)d >$B; cat $B
done
echo 0 >$P/enable
latency coarse-0; phase coarse; pt-storm -s %(t)d; pause 1; latency coarse-1
echo 1 >$P/enable
latency pre-0; phase pre; pt-storm -s %(t)d; pause 1; latency pre-1
echo 0 >$P/enable
phase dyn; pt-storm -s %(t2)d >/tmp/dyn & s=$!
pause %(half)d
echo 1 >$P/enable
phase dyn-on
wait $s; cat /tmp/dyn
phase end
for l in 1 2 3 4; do read c <$P/cached_l$l; echo "cache l$l $c"; done
pib_unload
""" % {"r": ROUNDS, "n": PER_ROUND, "t": PHASE, "t2": 2 * PHASE,
       "half": PHASE, "runs": BENCH_RUNS, "bn": BENCH_N}

L1_SCRIPT = r"""
mount -t debugfs none /sys/kernel/debug
insmod /lib/modules/extra/kvm_pagetype.ko
G=/sys/kernel/debug/kvm_pagetype/global
sample() {
	while test ! -e /tmp/l2-done; do
		f=$(awk '$1 == "dma_flushes" { f = $2 }
			 $1 == "dma_maps" { m = $2 }
			 END { print f, m }' $G)
		p=$(grep -o 'pibooster-bench: phase [a-z-]*' \
			/tmp/pibooster-bench.console 2>/dev/null | tail -1)
		echo "sample $(date +%s) $f ${p##* }"
		sleep 1
	done
}
sample >/tmp/samples & sp=$!
run_l2 pibooster-bench
touch /tmp/l2-done; wait $sp
cp $G /tmp/host
"""


def lat_table(text):
    lat = {}
    for mode in ("native", "coarse", "pibooster"):
        block = text.split("== lat %s\n" % mode, 1)[1].split("\n== ", 1)[0]
        lat[mode] = dict((m.group(1), float(m.group(2))) for m in
                         re.finditer(r"^lat (\S+) ([\d.]+)$", block, re.M))
    return lat


def latency(text, tag):
    """debugfs pibooster/latency at `== latency tag`: per level
    (allocs, alloc_ns, frees, free_ns)."""
    block = text.split("== latency %s\n" % tag, 1)[1]
    return {m.group(1): tuple(int(x) for x in m.groups()[1:]) for m in
            re.finditer(r"^(l\d) (\d+) (\d+) (\d+) (\d+)$",
                        block.split("\n== ", 1)[0], re.M)}


def per_level(text, phase):
    """Mean allocation and free time per level over a phase, in us."""
    a, b = latency(text, phase + "-0"), latency(text, phase + "-1")
    out = {}
    for lv in sorted(b):
        n_a, ns_a = b[lv][0] - a[lv][0], b[lv][1] - a[lv][1]
        n_f, ns_f = b[lv][2] - a[lv][2], b[lv][3] - a[lv][3]
        out[lv] = (ns_a / n_a / 1000 if n_a else 0, n_a,
                   ns_f / n_f / 1000 if n_f else 0, n_f)
    return out


def level_header(title):
    """The title and column heads of a per-level coarse/PiBooster table."""
    print(title)
    print("%-5s %9s %9s %7s   %9s %9s %7s" % ("level", "alloc", "alloc",
                                              "less", "free", "free",
                                              "less"))


def bench_rows(text):
    """debugfs pibooster/bench over the runs: {(level, mode): [(alloc_ns,
    free_ns), ...]}."""
    out = {}
    for m in re.finditer(r"^(l\d) (coarse|pibooster) \d+ (\d+) (\d+)$",
                         text, re.M):
        out.setdefault((m.group(1), m.group(2)), []).append(
            (int(m.group(3)), int(m.group(4))))
    return out


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (
        xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def flush_rates(samples, qemu_times):
    """Per BIN-second bin, tagged with the phase at the bin's end: the
    module's IOTLB flushes per minute, and the IOTLB invalidations per
    minute from the module's count (maps and flushes: under caching mode
    a map is invalidated too) and from level 0's QEMU trace, from the
    per-second samples (t, flushes, maps, phase) and the trace's times."""
    rows, start = [], None
    qemu_times = sorted(qemu_times)
    for t, flushes, maps, ph in samples:
        if ph in ("", "native", "coarse-lat", "pibooster-lat"):
            continue
        if start is None:
            start = (t, flushes, maps)
            continue
        if t - start[0] >= BIN:
            per_min = 60.0 / (t - start[0])
            qemu = sum(1 for q in qemu_times if start[0] <= q < t)
            rows.append((t, (flushes - start[1]) * per_min,
                         (flushes - start[1] + maps - start[2]) * per_min,
                         qemu * per_min, ph))
            start = (t, flushes, maps)
    return rows


def main():
    l2 = Guest("pibooster-bench", L2_SCRIPT, shell_libs=[HELPERS],
               modules=[builddir(*KO)], programs=[
                   builddir(*STORM), builddir("tests", "vm", "guest",
                                              "pt-lat")],
               memory=256, smp=1,
               qemu_args=["-device", "pagetype,dma-device=" + EDU])
    l1 = nested(L1_SCRIPT, l2, smp=1, kmod_opts={"kvm_amd": "npt=0"},
                modules=[builddir("kvm-pagetype", "kvm_pagetype.ko")],
                l1_machine=IOMMU_L1["l1_machine"],
                l1_args=IOMMU_L1["l1_args"] + ["-trace",
                                               "vtd_inv_desc_iotlb*",
                                               "-msg", "timestamp=on"],
                cmdline=IOMMU_L1["cmdline"], l2_collect=["/tmp/host",
                                                         "/tmp/samples"],
                l2_timeout=1500)
    r1 = boot(l1, timeout=1800, emulator_retries=1)
    r2 = nested_result(r1, "pibooster-bench")
    if r1.outcome != "pass" or r2.outcome != "pass":
        print(r1.text())
        print(r2.text())
        print("pibooster-nested-bench: %s; %s" % (r1.describe(),
                                                   r2.describe()))
        return 1
    text = r2.text()
    lat = lat_table(text)
    logs = builddir("tests", "logs")
    print("pibooster, nested (TCG level 1, KVM level 2, edu confined); "
          "median of %d rounds of %d, us per operation" % (ROUNDS, PER_ROUND))
    print("%-14s %10s %10s %8s %10s %8s %10s" % (
        "operation", "native", "coarse", "ratio", "pibooster", "ratio",
        "pib/coarse"))
    with open(os.path.join(logs, "pibooster-nested-bench.csv"), "w") as f:
        f.write("operation,native_us,coarse_us,coarse_ratio,pibooster_us,"
                "pibooster_ratio,pibooster_over_coarse\n")
        for op in lat["native"]:
            n, c, p = (lat[m][op] for m in ("native", "coarse", "pibooster"))
            print("%-14s %10.1f %10.1f %8.2f %10.1f %8.2f %10.2f"
                  % (op, n, c, c / n, p, p / n, p / c))
            f.write("%s,%.2f,%.2f,%.3f,%.2f,%.3f,%.3f\n"
                    % (op, n, c, c / n, p, p / n, p / c))
    rows = bench_rows(text)
    level_header("page-table allocation and free, us per table, one table "
                 "at a time (debugfs pibooster/bench, %d per level, median "
                 "of %d runs), coarse against PiBooster:"
                 % (BENCH_N, BENCH_RUNS))
    with open(os.path.join(logs, "pibooster-nested-bench-tables.csv"),
              "w") as f:
        f.write("level,coarse_alloc_us,pibooster_alloc_us,coarse_free_us,"
                "pibooster_free_us,runs\n")
        for lv in sorted({k[0] for k in rows}):
            c, p = rows.get((lv, "coarse"), []), rows.get((lv, "pibooster"),
                                                          [])
            if not c or not p:
                continue
            ca, cf = (median([x[i] for x in c]) / 1000 for i in (0, 1))
            pa, pf = (median([x[i] for x in p]) / 1000 for i in (0, 1))
            print("%-5s %9.1f %9.1f %6.0f%%   %9.1f %9.1f %6.0f%%"
                  % (lv, ca, pa, 100 * (1 - pa / ca), cf, pf,
                     100 * (1 - pf / cf)))
            f.write("%s,%.2f,%.2f,%.2f,%.2f,%d\n"
                    % (lv, ca, pa, cf, pf, min(len(c), len(p))))
    coarse, pib = per_level(text, "coarse"), per_level(text, "pre")
    level_header("the same as the kernel's tables came and went (debugfs "
                 "pibooster/latency, mean over the storm phase; a free is "
                 "its share of a reaper batch):")
    with open(os.path.join(logs, "pibooster-nested-bench-levels.csv"),
              "w") as f:
        f.write("level,coarse_alloc_us,pibooster_alloc_us,coarse_free_us,"
                "pibooster_free_us,coarse_tables,pibooster_tables\n")
        for lv in sorted(coarse):
            ca, cn, cf, _ = coarse[lv]
            pa, pn, pf, _ = pib[lv]
            print("%-5s %9.1f %9.1f %6.0f%%   %9.1f %9.1f %6.0f%%"
                  % (lv, ca, pa, 100 * (1 - pa / ca) if ca else 0,
                     cf, pf, 100 * (1 - pf / cf) if cf else 0))
            f.write("%s,%.2f,%.2f,%.2f,%.2f,%d,%d\n"
                    % (lv, ca, pa, cf, pf, cn, pn))
    samples = [(int(t), int(f), int(m), ph) for t, f, m, ph in re.findall(
        r"^sample (\d+) (\d+) (\d+) ?(\S*)$",
        r1.files["samples"].decode(), re.M)]
    qemu_times = [int(t) for t in re.findall(
        r"^\d+@(\d+)\.\d+:vtd_inv_desc_iotlb_\w+", r1.stderr, re.M)]
    rates = flush_rates(samples, qemu_times)
    t0 = rates[0][0] - BIN if rates else 0
    csv = os.path.join(logs, "pibooster-nested-bench-flushes.csv")
    with open(csv, "w") as f:
        f.write("seconds,flushes_per_minute,invalidations_per_minute,"
                "qemu_invalidations_per_minute,phase\n")
        for t, rate, inv, qemu, ph in rates:
            f.write("%d,%.0f,%.0f,%.0f,%s\n" % (t - t0, rate, inv, qemu, ph))
    by_phase = {}
    for t, rate, inv, qemu, ph in rates:
        by_phase.setdefault(ph, []).append((rate, inv, qemu))
    print("IOTLB flushes per minute (the module's count, %d s bins), "
          "per phase; then IOTLB invalidations per minute counted by the "
          "module (maps + flushes) and by level 0's QEMU trace, same bins:"
          % BIN)
    for ph in ("coarse", "pre", "dyn", "dyn-on"):
        r = by_phase.get(ph, [])
        if r:
            print("  %-7s mean %6.0f  first %6.0f  last %6.0f  (%d bins)"
                  "   invalidations: module %6.0f, QEMU %6.0f"
                  % (ph, sum(x[0] for x in r) / len(r), r[0][0], r[-1][0],
                     len(r), sum(x[1] for x in r) / len(r),
                     sum(x[2] for x in r) / len(r)))
    host = dict(l.split() for l in r1.files["host"].decode().splitlines())
    trace = len(qemu_times)
    print("host module: %s IOMMU maps, %s unmaps, %s IOTLB flushes; level "
          "0's QEMU: %d IOTLB invalidation descriptors"
          % (host["dma_maps"], host["dma_unmaps"], host["dma_flushes"],
             trace))
    cache = re.findall(r"^cache (l\d) (\d+)$", text, re.M)
    print("cache after the churn: %s" % ", ".join("%s %s" % c
                                                   for c in cache))
    if shutil.which("gnuplot"):
        png = os.path.join(logs, "pibooster-flushes.png")
        subprocess.run(["gnuplot"], check=True, input=(
            'set terminal png size 800,400\n'
            'set output "%s"\n'
            'set datafile separator ","\n'
            'set title "IOTLB flushes per minute (TCG/nested): coarse, '
            'Pre-PiBooster, Dyn-PiBooster"\n'
            'set xlabel "seconds"\nset ylabel "flushes per minute"\n'
            'plot "%s" every ::1 using 1:2 with linespoints title '
            '"flushes (module)", "" every ::1 using 1:4 with lines title '
            '"invalidations (level 0 QEMU)"\n'
            % (png, csv)).encode())
        print("wrote " + png)
    print("wrote " + csv)
    return 0


sys.exit(main())

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

Then, in a second level-2 guest of the same level 1 (4-level paging, so
that roots are pinned; no device confined), fork+exit storms with every
table pinned (pin=all, coarse) against only roots pinned and every table
below them validated by the host by reference (pin=roots), the module
loaded again for each, BYREF_ROUNDS rounds in the order all, roots,
roots, all, ... (so that a drift over the run weighs on both alike)
after one untimed storm; each mode's storm is BYREF_CHUNKS short storms,
the best of which counts (another load on the machine slows some of
them); level 1 copies the host module's counters before and after them.

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
from pagetype import pagetype_device
from pibooster import (EDU, HELPERS, IOMMU_L1, KO, STORM, ACK_PORT,
                       CHECKPOINT_L1, CHECKPOINT_L2)
ROUNDS = int(os.environ.get("PIBOOSTER_BENCH_ROUNDS", "5"))
PER_ROUND = int(os.environ.get("PIBOOSTER_BENCH_N", "10"))
PHASE = int(os.environ.get("PIBOOSTER_BENCH_PHASE", "30"))
BIN = 5         # seconds per point of the flush rate
BENCH_RUNS = 3  # debugfs pibooster/bench runs per mode
BENCH_N = 200   # tables per level per run
BYREF_PHASE = int(os.environ.get("PIBOOSTER_BENCH_BYREF_PHASE", "15"))
BYREF_ROUNDS = 8
BYREF_CHUNKS = 5
BYREF_MODES = ("all", "roots")
# (mode, round), each round's modes in turn reversed: all roots roots all
BYREF_ORDER = [(m, r) for r in range(1, BYREF_ROUNDS + 1)
               for m in (BYREF_MODES if r % 2 else BYREF_MODES[::-1])]
BYREF_CHECKPOINTS = ["%s-%d-%d" % (m, r, e) for m, r in BYREF_ORDER
                     for e in (0, 1)]

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

# fork+exit (pt-storm -m exit): a child that exits at once, whose tables
# are those the fork copies (the binary's data, its stack); each short
# storm timed by the clock, between two checkpoints at which level 1
# copies the host's counters
BYREF_SCRIPT = CHECKPOINT_L2 + r"""
pt-storm -m exit -s 5 >/dev/null
for mr in %(order)s; do
	m=${mr%%:*}; r=${mr#*:}
	if test $m = all; then pib_load enable=0; else pib_load pin=$m; fi
	checkpoint $m-$r-0
	for i in $(seq %(chunks)d); do
		read -r t0 _ </proc/uptime
		pt-storm -m exit -s %(t)d >/tmp/storm
		read -r t1 _ </proc/uptime
		read -r line </tmp/storm
		echo "storm $m $r $t0 $t1 $line"
	done
	checkpoint $m-$r-1
	echo "== $m $r"; stats
	pib_unload
done
""" % {"t": BYREF_PHASE // BYREF_CHUNKS, "chunks": BYREF_CHUNKS,
       "order": " ".join("%s:%d" % mr for mr in BYREF_ORDER)}

L1_SCRIPT = CHECKPOINT_L1 + r"""
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
start_l2 pibooster-byref
for c in """ + " ".join(BYREF_CHECKPOINTS) + r"""; do
	checkpoint pibooster-byref $c || break
done
wait_l2
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


def byref_report(text, counters, logs):
    """The fork+exit storms of the second guest: processes per second with
    every table pinned and with roots only (a mode's best short storm in
    each round, and all of them), their ratio per round, its median, and
    what the host did per process, from its counters around each mode's
    storms.  Writes pibooster-nested-bench-byref.csv."""
    cells = {}
    for m in re.finditer(r"^storm (\w+) (\d+) ([\d.]+) ([\d.]+) "
                         r"pt-storm: (\d+) iterations", text, re.M):
        c = cells.setdefault((m.group(1), int(m.group(2))),
                             dict(n=0, secs=0.0, best=0.0))
        n, secs = int(m.group(5)), float(m.group(4)) - float(m.group(3))
        c["n"] += n
        c["secs"] += secs
        c["best"] = max(c["best"], n / secs)
    for (mode, rnd), c in cells.items():
        a = counters["%s-%d-0" % (mode, rnd)]
        b = counters["%s-%d-1" % (mode, rnd)]
        c["pins"] = sum(b["op_pin_l%d" % lv] - a["op_pin_l%d" % lv]
                        for lv in (1, 2, 3, 4))
        for k in ("op_unpin", "ref_validations", "devalidations", "writes"):
            c[k] = b[k] - a[k]
    with open(os.path.join(logs, "pibooster-nested-bench-byref.csv"),
              "w") as f:
        f.write("pin,round,processes,seconds,best_per_s,pins,unpins,"
                "ref_validations,devalidations,writes\n")
        for (mode, rnd), c in sorted(cells.items()):
            f.write("%s,%d,%d,%.2f,%.2f,%d,%d,%d,%d,%d\n"
                    % (mode, rnd, c["n"], c["secs"], c["best"], c["pins"],
                       c["op_unpin"], c["ref_validations"],
                       c["devalidations"], c["writes"]))
    print("pibooster, nested: validation by reference against explicit pins "
          "(TCG/nested: TCG level 1, KVM level 2, 4-level paging, no device "
          "confined).  pin=all: every table pinned (coarse); pin=roots: "
          "roots only, the tables below validated by the host by reference. "
          " fork+exit (pt-storm -m exit) per second, %d rounds (all, roots, "
          "roots, all, ...), in each the best of %d storms of %d s, and all "
          "of them" % (BYREF_ROUNDS, BYREF_CHUNKS,
                       BYREF_PHASE // BYREF_CHUNKS))
    print("%-6s %10s %10s %10s   %10s %10s" % (
        "round", "pin=all", "pin=roots", "roots/all", "all: all", "roots"))
    ratios = []
    for rnd in range(1, BYREF_ROUNDS + 1):
        c = [cells.get((mode, rnd)) for mode in BYREF_MODES]
        if None in c:
            continue
        ratios.append(c[1]["best"] / c[0]["best"])
        print("%-6d %10.2f %10.2f %10.2f   %10.2f %10.2f"
              % (rnd, c[0]["best"], c[1]["best"], ratios[-1],
                 c[0]["n"] / c[0]["secs"], c[1]["n"] / c[1]["secs"]))
    tot = [[c for (m, _), c in cells.items() if m == mode]
           for mode in BYREF_MODES]
    best = [median([c["best"] for c in t]) for t in tot]
    rate = [sum(c["n"] for c in t) / sum(c["secs"] for c in t) for t in tot]
    print("roots/all, TCG/nested: median of the rounds %.2f (from %.2f to "
          "%.2f); medians of the best, %.2f against %.2f a second: %.0f "
          "against %.0f us per fork+exit; every storm: %.2f"
          % (median(ratios), min(ratios), max(ratios), best[1], best[0],
             1e6 / best[1], 1e6 / best[0], rate[1] / rate[0]))
    print("the host's work per process, over all rounds: pin and unpin ops, "
          "tables validated by reference, tables devalidated, trapped "
          "writes to tables")
    print("%-12s %8s %8s %8s %8s %8s" % ("pin", "pins", "unpins", "by ref",
                                         "deval", "writes"))
    for mode, t in zip(BYREF_MODES, tot):
        n = sum(c["n"] for c in t)
        print("%-12s %8.1f %8.1f %8.1f %8.1f %8.1f"
              % (mode, *(sum(c[x] for c in t) / n for x in
                         ("pins", "op_unpin", "ref_validations",
                          "devalidations", "writes"))))
    end = counters[BYREF_CHECKPOINTS[-1]]
    print("the host after the last storm: %d tables validated by reference "
          "in all, %d VMs killed" % (end["ref_validations"], end["kills"]))


def main():
    l2 = Guest("pibooster-bench", L2_SCRIPT, shell_libs=[HELPERS],
               modules=[builddir(*KO)], programs=[
                   builddir(*STORM), builddir("tests", "vm", "guest",
                                              "pt-lat")],
               memory=256, smp=1,
               qemu_args=pagetype_device(",dma-device=" + EDU))
    byref = Guest("pibooster-byref", BYREF_SCRIPT, shell_libs=[HELPERS],
                  modules=[builddir(*KO)], programs=[builddir(*STORM)],
                  memory=256, smp=1, cmdline="no5lvl",
                  qemu_args=pagetype_device() + ACK_PORT)
    l1 = nested(L1_SCRIPT, [l2, byref], smp=1,
                kmod_opts={"kvm_amd": "npt=0"},
                modules=[builddir("kvm-pagetype", "kvm_pagetype.ko")],
                l1_machine=IOMMU_L1["l1_machine"],
                l1_args=IOMMU_L1["l1_args"] + ["-trace",
                                               "vtd_inv_desc_iotlb*",
                                               "-msg", "timestamp=on"],
                cmdline=IOMMU_L1["cmdline"],
                l2_collect=["/tmp/host", "/tmp/samples"] +
                ["/tmp/host-" + c for c in BYREF_CHECKPOINTS],
                l2_timeout=1500)
    r1 = boot(l1, timeout=2400, emulator_retries=1)
    r2 = nested_result(r1, "pibooster-bench")
    r3 = nested_result(r1, "pibooster-byref")
    if r1.outcome != "pass" or r2.outcome != "pass" or r3.outcome != "pass":
        print(r1.text())
        print(r2.text())
        print(r3.text())
        print("pibooster-nested-bench: %s; %s; %s"
              % (r1.describe(), r2.describe(), r3.describe()))
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
    byref_report(r3.text(), {c: dict(
        (k, int(v)) for k, v in (l.split() for l in r1.files[
            "host-" + c].decode().splitlines())) for c in BYREF_CHECKPOINTS},
        logs)
    return 0


sys.exit(main())

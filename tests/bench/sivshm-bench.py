#!/usr/bin/env python3
"""make bench: charcount over sivshm, TCP loopback and ivshmem-server,
measured side by side in one run.  A benchmark, not a test: it reports
figures (a table on stdout, a CSV file) and judges nothing.

For each reducer count and each system it runs the same job (the same
seeded random input) through sivshm-run --repeat times and reports the
median of the mapper's result lines.  Also measured in the same run:
  - memcpy bandwidth at the mapper's thread count, in slot-sized chunks:
    the physical limit for Xfer;
  - ready time (all reducers connected and ready), sivshm against
    ivshmem-server, from separate runs with a tiny input, median of 3;
  - CPU use of the whole service (mapper and reducers) over the job, in
    percent of the machine's CPUs, polling against interrupt mode.

docs/benchmarks.md says how to reproduce every figure.
"""

import argparse
import csv
import os
import resource
import statistics
import subprocess
import sys
import time

SYSTEMS = [  # (label, sivshm-run program, mode)
    ("sivshm-poll", "charcount", "poll"),
    ("sivshm-irq", "charcount", "irq"),
    ("ivshmem-poll", "charcount-ivshmem", "poll"),
    ("ivshmem-irq", "charcount-ivshmem", "irq"),
    ("tcp", "charcount-tcp", None),
]


def parse_result(out):
    for line in out.splitlines():
        if line.startswith("result "):
            return dict(kv.split("=", 1) for kv in line.split()[1:])
    raise RuntimeError("no result line in:\n" + out)


def run(cmd):
    """Run a service; return its result dict, wall and CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        raise RuntimeError("%s failed (%d):\n%s%s" % (" ".join(cmd),
                           p.returncode, p.stdout, p.stderr))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime -
                                                 before.ru_stime)
    return parse_result(p.stdout), wall, cpu


def size(s):
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    return int(s[:-1]) * mult[s[-1].lower()] if s[-1].isalpha() else int(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--builddir", default=os.getcwd())
    ap.add_argument("--reducers", default="1,3,7,15,31")
    ap.add_argument("--data", default="512M", help="input per job")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per figure; the median is reported")
    ap.add_argument("--region", default="256M", help="shared region")
    ap.add_argument("--csv", default=None)
    args = ap.parse_args()
    bindir = os.path.join(args.builddir, "examples")
    runner = os.path.join(bindir, "sivshm-run")
    mbw = os.path.join(args.builddir, "tests", "bench", "memcpy-bw")
    ncpu = os.cpu_count()
    counts = [int(n) for n in args.reducers.split(",")]
    rows = []

    print("sivshm bench: %s of random data per job, %s region, %d CPUs "
          "(host processes, no VM)" % (args.data, args.region, ncpu))
    for n in counts:
        slice_ = (size(args.region) // (n + 1)) & ~4095
        cap = slice_ - 128
        for label, prog, mode in SYSTEMS:
            cmd = [runner, prog, "--reducers", str(n), "--size",
                   args.region, "--random", args.data, "--seed", "1"]
            if mode:
                cmd += ["--mode", mode]
            runs = [run(cmd) for _ in range(args.repeat)]
            for res, _, _ in runs:
                if res["count"] != res["direct"]:
                    raise RuntimeError("%s: count mismatch" % label)
            res = runs[0][0]
            xfer = statistics.median(float(r["xfer_s"]) for r, _, _ in runs)
            rows.append({
                "reducers": n, "system": label,
                "threads": res["threads"],
                "xfer_s": xfer,
                "resp_s": statistics.median(float(r["resp_s"])
                                            for r, _, _ in runs),
                "copy_gib_s": int(res["bytes"]) / xfer / (1 << 30)
                if xfer else 0,
                "cpu_pct": statistics.median(100.0 * c / (w * ncpu)
                                             for _, w, c in runs),
                "count": res["count"],
            })
        threads = rows[-1]["threads"]
        dests = -(-n // int(threads))
        mbs = [parse_result(subprocess.run(
            [mbw, "--threads", threads, "--chunk", str(cap), "--bytes",
             str(size(args.data)), "--dests", str(dests)],
            capture_output=True, text=True, check=True).stdout)
            for _ in range(args.repeat)]
        rows.append({"reducers": n, "system": "memcpy", "threads": threads,
                     "xfer_s": statistics.median(float(m["seconds"])
                                                 for m in mbs),
                     "resp_s": "",
                     "copy_gib_s": statistics.median(float(m["gib_s"])
                                                     for m in mbs),
                     "cpu_pct": "", "count": ""})
        for label, prog in (("ready-sivshm", "charcount"),
                            ("ready-ivshmem", "charcount-ivshmem")):
            ready = [float(run([runner, prog, "--reducers", str(n),
                                "--size", args.region, "--random", "1M",
                                "--mode", "irq"])[0]["ready_ms"])
                     for _ in range(args.repeat)]
            rows.append({"reducers": n, "system": label, "threads": "",
                         "xfer_s": "", "resp_s": "", "copy_gib_s": "",
                         "cpu_pct": "", "count": "",
                         "ready_ms": statistics.median(ready)})
        print_table([r for r in rows if r["reducers"] == n])

    summarize(rows, counts)
    path = args.csv or os.path.join(args.builddir, "bench", "sivshm-bench.csv")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fields = ["reducers", "system", "threads", "xfer_s", "resp_s",
              "copy_gib_s", "cpu_pct", "ready_ms", "count"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    print("CSV: %s" % path)


def fmt(v, spec):
    return format(v, spec) if isinstance(v, float) else str(v)


def print_table(rows):
    print("\n%-8s %-14s %7s %9s %9s %10s %7s %10s" % (
        "reducers", "system", "threads", "Xfer s", "Resp s", "copy GiB/s",
        "CPU %", "ready ms"))
    for r in rows:
        print("%-8s %-14s %7s %9s %9s %10s %7s %10s" % (
            r["reducers"], r["system"], r["threads"],
            fmt(r["xfer_s"], ".3f"), fmt(r["resp_s"], ".3f"),
            fmt(r["copy_gib_s"], ".2f"), fmt(r["cpu_pct"], ".0f"),
            fmt(r.get("ready_ms", ""), ".1f")))


def summarize(rows, counts):
    def get(n, system, key):
        for r in rows:
            if r["reducers"] == n and r["system"] == system:
                return r.get(key)
        return None

    print("\nRatios (the papers' claims and this project's targets):")
    for n in counts:
        sx, tx = get(n, "sivshm-irq", "xfer_s"), get(n, "tcp", "xfer_s")
        sc = get(n, "sivshm-irq", "copy_gib_s")
        mc = get(n, "memcpy", "copy_gib_s")
        rs, ri = get(n, "ready-sivshm", "ready_ms"), get(n, "ready-ivshmem",
                                                          "ready_ms")
        cp, ci = get(n, "sivshm-poll", "cpu_pct"), get(n, "sivshm-irq",
                                                        "cpu_pct")
        print("  %2d reducers: Xfer sivshm/TCP %.2f (target <= 0.4 at 31); "
              "copy rate/memcpy %.2f (target >= 0.9); ready sivshm/ivshmem "
              "%.2f (target <= 0.5 at 31); CPU irq %.0f%% vs poll %.0f%%"
              % (n, sx / tx, sc / mc, rs / ri, ci, cp))


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        print("bench: %s" % e)
        sys.exit(1)

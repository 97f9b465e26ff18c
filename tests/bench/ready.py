"""What device-ready.py and handshake-ready.py share: the command line, the
table of sivshm against ivshmem per reducer count (median of --repeat runs
of each), and its CSV in <builddir>/bench/<name>.csv."""

import argparse
import csv
import os
import shutil
import statistics
import sys
import tempfile


def main(name, what, service, errors=(RuntimeError,)):
    """Run @service(qemu, server, kind, n, tmpdir) -> seconds for each
    kind and reducer count; @what says what is timed."""
    ap = argparse.ArgumentParser(prog=name)
    ap.add_argument("--builddir", default=os.getcwd())
    ap.add_argument("--reducers", default="1,3,7,15,31")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--csv", default=None)
    args = ap.parse_args()
    out = os.path.join(args.builddir, "qemu-sivshm", "out", "bin")
    qemu = os.path.join(out, "qemu-system-x86_64")
    server = os.path.join(out, "ivshmem-server")
    d = tempfile.mkdtemp(prefix=name + "-")
    rows = []
    print("%s: %s, %d CPUs, median of %d" % (name, what, os.cpu_count(),
                                             args.repeat))
    print("%8s %12s %12s %8s" % ("reducers", "sivshm ms", "ivshmem ms",
                                 "ratio"))
    try:
        for n in [int(x) for x in args.reducers.split(",")]:
            s = statistics.median(service(qemu, server, "sivshm", n, d)
                                  for _ in range(args.repeat))
            i = statistics.median(service(qemu, server, "ivshmem", n, d)
                                  for _ in range(args.repeat))
            rows.append({"reducers": n, "sivshm_ms": s * 1e3,
                         "ivshmem_ms": i * 1e3, "ratio": s / i})
            print("%8d %12.1f %12.1f %8.2f" % (n, s * 1e3, i * 1e3, s / i),
                  flush=True)
    except errors as e:
        print("%s: %s" % (name, e))
        sys.exit(1)
    finally:
        shutil.rmtree(d)
    path = args.csv or os.path.join(args.builddir, "bench", name + ".csv")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print("CSV: %s" % path)

#!/usr/bin/env python3
# runtests: cores 1.5
"""Bad input from a guest: a reducer VM writes random values, of every
width, to every BAR0 offset and to the doorbell for 20 s, while the
mapper VM and another reducer VM run charcount.  Neither the fuzzing
VM's QEMU nor any other VM may crash, and the job must still be right."""

import os
from vmtest import builddir, check, main
from sivshm import Service


def test():
    poke = [builddir("tests", "vm", "guest", "sivshm-poke")]
    svc = Service("fuzz", 2)
    mapper = svc.guest(0, "charcount-mapper --device /dev/sivshm0 "
                       "--random 8M --mode irq --threads 1 "
                       "--timeout 200000\n")
    worker = svc.guest(1, "charcount-reducer --device /dev/sivshm0 "
                       "--mode irq --timeout 200000\n")
    # The fuzzer is reducer 2: it answers the job too, after fuzzing.
    # iomem=relaxed lets it map BAR0 raw beside sivshm.ko (Debian's kernel
    # has IO_STRICT_DEVMEM), as a hostile guest kernel could write it.
    # The seed, said first: a failure is reproduced with it.
    seed = int(os.environ.get("SIVSHM_BAR_FUZZ_SEED") or os.getpid())
    print("sivshm-bar-fuzz: seed %d (SIVSHM_BAR_FUZZ_SEED)" % seed, flush=True)
    fuzzer = svc.guest(2, "sivshm-poke fuzz 20 %d\n"
                       "charcount-reducer --device /dev/sivshm0 --mode irq "
                       "--timeout 200000\n" % seed, programs=poke,
                       cmdline="iomem=relaxed")
    runs = svc.start(mapper, [worker, fuzzer])
    results = [r.wait(400) for r in runs]
    for run, r in zip(runs, results):
        check(r.outcome == "pass", r.describe())
        check(run.proc.returncode == 0, "%s's QEMU exited with %s"
              % (r.name, run.proc.returncode))
    check(": match)" in results[0].text(), results[0].text())
    print(next(l for l in results[2].text().splitlines() if "fuzz:" in l))


main(test)

#!/usr/bin/env python3
"""make demo-vm: SIVSHM in VMs.  Boots a mapper VM and 3 reducer VMs in our
QEMU, wired by the sivshm device (KVM where it boots guests, else TCG),
and runs charcount across them in interrupt mode; prints what the mapper
printed: the total against its direct count, Xfer and Resp."""

import os
import sys

import vmtest
from sivshm import Service


def main():
    d = os.path.join(os.environ.get("SIVSHM_BUILDDIR", "."), "demo-logs")
    os.environ.setdefault("SIVSHM_LOGDIR", d)
    accel = os.environ.get("SIVSHM_ACCEL", "tcg").upper()
    print("demo: booting 1 mapper VM and 3 reducer VMs under %s ..." % accel,
          flush=True)
    svc = Service("demo", 3, size="64M")
    mapper = svc.guest(0, "charcount-mapper --device /dev/sivshm0 "
                       "--random 64M --mode irq --threads 1 "
                       "--timeout 300000\n")
    reducers = [svc.guest(j, "charcount-reducer --device /dev/sivshm0 "
                          "--mode irq --timeout 300000\n") for j in (1, 2, 3)]
    results = [r.wait(600) for r in svc.start(mapper, reducers)]
    for line in results[0].text().splitlines():
        if line.startswith("charcount:"):
            print(line + ("  [%s]" % accel if "Xfer" in line else ""))
    for r in results:
        print("demo: " + r.describe())
    print("demo: consoles and channels in %s" % os.environ["SIVSHM_LOGDIR"])
    return 0 if all(r.outcome == "pass" for r in results) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except vmtest.HarnessError as e:
        print("demo: %s" % e)
        sys.exit(1)

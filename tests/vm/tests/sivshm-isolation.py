#!/usr/bin/env python3
"""SIVSHM isolation in VMs: the mapper VM writes distinct markers into
every slot; each of 3 reducer VMs then sees exactly its own slice behind
BAR1 and never another slot's marker, whether it reads through the
driver's mmap, the whole BAR1 container through sysfs, or /dev/mem; an
mmap beyond its slice fails with EINVAL."""

from vmtest import builddir, check, main
from sivshm import Service


def test():
    poke = [builddir("tests", "vm", "guest", "sivshm-poke")]
    svc = Service("iso", 3, size="24M")  # 6 MiB slices in 8 MiB BARs
    mapper = svc.guest(0, "sivshm-poke mark\n", programs=poke)
    # iomem=relaxed: let the guest map the BAR raw while sivshm.ko owns
    # it (Debian's kernel has IO_STRICT_DEVMEM), as a hostile guest
    # kernel could.
    reducers = [svc.guest(j, "sivshm-poke isolation 120000\n",
                          programs=poke, cmdline="iomem=relaxed")
                for j in (1, 2, 3)]
    results = [r.wait(300) for r in svc.start(mapper, reducers)]
    for r in results:
        check(r.outcome == "pass", r.describe() + "\n" + r.text())
    for r in results[1:]:
        check("BAR1:" in r.text() and "/dev/mem: only our own" in r.text(),
              r.name + ": " + r.text())
        print(r.name + ": " + r.text().strip().replace("\n", "; "))


main(test)

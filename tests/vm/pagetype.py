"""Level-1 hosts for kvm_pagetype's tests.

A level-1 guest (TCG, -cpu max, so SVM is there) loads kvm and kvm_amd,
then kvm_pagetype.ko, and runs KVM-selftests-style programs from
tests/vm/kvm/ that create their own VMs: no level-2 kernel boots.  One CPU,
as the nested limits in docs/testing.md ask."""

import os
import re
import shutil
import tempfile
from vmtest import (NESTED_CPU, Guest, Kernel, boot, builddir, check,
                    guest_sh)
from dkms import dkms_build

# What the pagetype device asks of every vCPU: none of the features
# through which KVM writes guest memory unseen by kvm_pagetype.ko, and KVM
# holding the guest to its PV CPUID (docs/pagetype.md, "Writers of guest
# memory").
PAGETYPE_CPU = ("kvmclock=off,kvm-steal-time=off,svm=off,vmx=off,"
                "kvm-pv-enforce-cpuid=on")


def pagetype_device(opts=""):
    """A level-2 QEMU's arguments for -device pagetype@opts: the device and
    vCPUs it accepts."""
    return ["-cpu", NESTED_CPU + "," + PAGETYPE_CPU,
            "-device", "pagetype" + opts]

# What a host's script runs first: debugfs, kvm_pagetype.ko loaded, and
# reload_kvm_amd to reload kvm_amd with other parameters (npt=1).
SCRIPT_HEAD = guest_sh("pagetype-host.sh")


def iommu_host(name, script, programs=(), qemu_args=(), **opts):
    """host() on q35 with an emulated VT-d (interrupt remapping, caching
    mode: level 0's QEMU sees every IOTLB invalidation) and the edu device
    alone in its IOMMU group, for DMA confinement; @qemu_args adds more."""
    return host(name, script, programs, machine="q35,kernel-irqchip=split",
                qemu_args=["-device", "intel-iommu,intremap=on,caching-mode=on",
                           "-device", "edu"] + list(qemu_args),
                cmdline="intel_iommu=on", **opts)


def host(name, script, programs=(), npt=0, module_path=None, **opts):
    """A level-1 guest with kvm_amd npt=<npt> and kvm_pagetype loaded (ours,
    or the one at @module_path)."""
    progs = [builddir("tests", "vm", "kvm", p) for p in programs]
    kmods = ["kvm", "kvm_amd"] + list(opts.pop("kmods", ()))
    return Guest(name, script, shell_libs=[SCRIPT_HEAD],
                 kmods=kmods, kmod_opts={"kvm_amd": "npt=%d" % npt},
                 modules=[module_path or
                          builddir("kvm-pagetype", "kvm_pagetype.ko")],
                 programs=progs, smp=1, memory=1024, **opts)


# pagetype-ops, then the module unloaded and loaded again.
OPS_SCRIPT = """
pagetype-ops
cat /sys/kernel/debug/kvm_pagetype/global > /tmp/global
rmmod kvm_pagetype
test ! -e /dev/kvm-pagetype
insmod /lib/modules/extra/kvm_pagetype.ko
pagetype-ops abi
"""


def check_ops(r):
    """What a run of OPS_SCRIPT must show: every pagetype-ops test passed,
    each kind of kill logged, and nothing of the gone VMs left."""
    check(r.outcome == "pass", r.describe())
    out = r.text()
    for name in ("abi", "pin", "legal-writes", "kill-write",
                 "kill-by-reference", "by-reference", "subtree", "batches",
                 "overflow", "memslots", "io-and-growth", "lifetimes",
                 "modes", "doorbell", "global", "unseen-writes", "stuck-vm",
                 "table-bound", "race"):
        check("ok " + name in out, "test %s did not pass" % name)
    dmesg = r.dmesg.decode(errors="replace")
    for why in ("a trapped write broke a rule", "malformed batch",
                "memslot holding a pinned table removed",
                "a write KVM made itself broke a rule"):
        check("killed: " + why in dmesg, "no kill logged for: " + why)
    stats = dict(line.split() for line in
                 r.files["global"].decode().splitlines())
    check(int(stats["vms"]) == 0, "VMs still attached: " + stats["vms"])
    check(int(stats["pinned_l4"]) == 0, "tables of gone VMs counted")
    check(int(stats["kills"]) >= 16, "kills: " + stats["kills"])
    print("global after the run: " + ", ".join(
        "%s %s" % (k, stats[k]) for k in ("batches", "validations",
                                          "writes", "violations", "kills")))


# The random tester's length: about 30000 steps under TCG, short enough
# for the suite; docs/testing.md has a longer run's figures.
FUZZ_SECONDS = 90
# Its length in the 6.12 tests (set_on_612()), which run the same rules
# through 6.12's page tracking, at npt=1 and at npt=0: half as long each.
FUZZ_612_SECONDS = 45


def fuzz_script(seed, secs):
    """pagetype-fuzz from @seed for @secs, then the module unloaded (nothing
    holds it) and loaded again."""
    return """
pagetype-fuzz %s %d
rmmod kvm_pagetype
insmod /lib/modules/extra/kvm_pagetype.ko
""" % (seed, secs)


def check_fuzz(out):
    """What a run of fuzz_script() must show in @out, level 1's output:
    steps made and the module's view memory's after each.  Returns the
    summary line."""
    m = re.search(r"pagetype-fuzz: (\d+) steps, (\d+) ops .*kills: "
                  r"(\d+) write, (\d+) batch", out)
    check(m and int(m[1]) > 0, "no summary:\n" + out)
    check("view was memory's after every step" in out, out)
    return m[0]


def set_on_612(npt, timeout):
    """The pagetype programs (pagetype-npt, OPS_SCRIPT, fuzz_script()) in
    a level 1 booted on the 6.12 of bookworm-backports with kvm_amd
    npt=<npt>, against kvm_pagetype.ko built there by DKMS; each must pass
    (pagetype-kernel-612.py, pagetype-kernel-612-npt0.py), pagetype-npt
    naming what 6.12 does (emulates at npt=1, runs at npt=0).  @timeout
    bounds the level 1."""
    kernel = Kernel(os.environ["SIVSHM_KERNEL_BACKPORTS"])
    check(kernel.kver.startswith("6.12."), "not a 6.12 kernel: " + kernel.kver)
    tmp = tempfile.mkdtemp(prefix="dkms-")
    built = dkms_build("kvm-pagetype", "dkms-source-pagetype",
                       "kvm_pagetype", tmp, kernel=kernel)
    script = """
uname -r
test "$(cat /sys/module/kvm_amd/parameters/npt)" = %s
pagetype-npt %s
""" % ("NY"[npt], ("runs", "emulates")[npt]) + OPS_SCRIPT + fuzz_script(
        1, FUZZ_612_SECONDS)
    r = boot(host("pagetype-612-npt%d" % npt, script,
                  programs=["pagetype-npt", "pagetype-ops", "pagetype-fuzz"],
                  collect=["/tmp/global"], module_path=built, kernel=kernel,
                  npt=npt), timeout=timeout)
    shutil.rmtree(tmp)
    check(r.outcome == "pass", r.describe() + "\n" + r.text())
    out = r.text()
    check(kernel.kver in out, "level 1 did not run " + kernel.kver)
    check("tracked: the load completed" in out,
          "the load through tracked tables did not complete")
    sse = ("tracked: PSHUFB completed",
           "tracked: PSHUFB went to the emulator, which failed")[npt]
    check(sse in out, "not seen: " + sse)
    check_ops(r)
    print(check_fuzz(out))
    print("on %s with kvm_amd npt=%d: pagetype-npt, pagetype-ops and "
          "pagetype-fuzz pass" % (kernel.kver, npt))

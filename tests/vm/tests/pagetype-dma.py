#!/usr/bin/env python3
# runtests: cores 0.5
"""DMA confinement by kvm_pagetype.ko under emulated VT-d:
level 1 on q35 with intel-iommu (caching mode) and intel_iommu=on, edu alone
in its IOMMU group and bound to no driver, driven from level 1 by
tests/vm/kvm/pagetype-dma as the attacker's device.  A DMA write lands in a
writable guest frame, not in a frame pinned as a page table nor in a
semi-writable one (level 1 logs the DMAR fault), and lands again once the
frame is writable; one unmap and one IOTLB flush per pin, one map per unpin;
bad devices are refused (a bridge, a device bound to pci-stub, a caller
without CAP_SYS_ADMIN among them), and a released device is no bus master
any more; releasing, closing and removing the memslot leave
no page pinned.  Bad batches with edu confined (frames outside guest
memory, a frame named twice) do the IOMMU work of the ops that succeeded
and no more; a mode switch with semi-writable frames and tables in flight
changes no mapping; the VM going with edu confined (KVM fds closed first,
or the process exiting) leaves nothing pinned and edu confinable again;
so does a release while another thread runs batches of conversions.
The flushes are counted twice: by the module, and by level
0's QEMU (its vtd_inv_desc_iotlb_pages trace): 64 pins of scattered frames
in one coarse batch are 64 IOTLB invalidations, one per frame; in
fine-grained mode 64 scattered writable -> semi-writable conversions in one
batch are one invalidation, and 64 pins and unpins between semi-writable
and table none."""

import re
from vmtest import boot, check, main
from pagetype import iommu_host

SCRIPT = """
pagetype-dma
cat /sys/kernel/debug/kvm_pagetype/global > /tmp/global
"""


def test():
    r = boot(iommu_host("pagetype-dma", SCRIPT, programs=["pagetype-dma"],
                        collect=["/tmp/global"], kmods=["pci_stub"],
                        # a bridge alone in its group, to be refused
                        qemu_args=["-device", "pci-bridge,chassis_nr=1",
                                   "-trace", "vtd_inv_desc_iotlb_pages",
                                   "-trace", "vtd_dmar_fault"]), timeout=600)
    check(r.outcome == "pass", r.describe())
    out = r.text()
    for name in ("refusals", "coarse", "lifetimes", "flushes", "fine",
                 "bad-batches", "mode-switch", "vm-gone", "release-racing"):
        check("ok " + name in out, "test %s did not pass" % name)
    dmesg = r.dmesg.decode(errors="replace")
    # Two DMA writes bounced: into the table and into the semi frame.
    faults = re.findall(r"DMAR: \[DMA Write[^\]]*\] Request device "
                        r"\[[0-9a-f:.]+\] fault addr (0x[0-9a-f]+)", dmesg)
    check(len(faults) >= 2, "DMAR write faults logged: %d" % len(faults))
    check(int("0x100000", 16) in [int(a, 16) for a in faults],
          "no DMAR fault at the table's address 0x100000: %s" % faults)
    # Level 0 sees every fault, also those its VT-d does not record for
    # level 1 while one from the same device is pending ("compression").
    l0_faults = {int(a, 16) & ~0xfff for a in re.findall(
        r"vtd_dmar_fault .*addr 0x([0-9a-f]+) write 1", r.stderr)}
    bounced = [0x100000, 0x42000, 0x40e000,        # coarse: table, semi
               0x612000, 0x616000, 0x61a000]       # fine: semi, table, semi
    check(set(bounced) <= l0_faults, "DMA writes level 0 saw fault: %s"
          % sorted(hex(a) for a in l0_faults))
    check("released from vm" in dmesg and
          "a memslot it maps was removed" in dmesg,
          "no release logged for the removed memslot")
    # Level 0's count.  With caching mode Linux invalidates a page's IOTLB
    # entry when it maps it too.  Frames from 4 MiB up exist only in the
    # two 8 MiB VMs (flushes, fine), and each confinement maps them once.
    # Coarse: each scattered frame is invalidated once more at its pin
    # (the unmap) and once at its unpin (the map).
    inv, blocks = {}, []
    for m in re.finditer(r"vtd_inv_desc_iotlb_pages .*addr 0x([0-9a-f]+) "
                         r"mask 0x([0-9a-f]+)\b", r.stderr):
        addr, mask = int(m.group(1), 16), int(m.group(2), 16)
        if mask:
            blocks.append((addr, mask))
        else:
            inv[addr] = inv.get(addr, 0) + 1
    scattered = [(0x400 + 2 * i) << 12 for i in range(64)]
    counts = [inv.get(a, 0) for a in scattered]
    confines = 2
    check(counts == [confines + 2] * 64,
          "IOTLB invalidations per scattered frame: %s" % counts)
    check(sum(inv.get(a, 0) for a in range(0x400000, 0x600000, 4096)) ==
          512 * confines + 2 * 64, "invalidations in 4-6 MiB")
    # Fine-grained: the fine test's frames are invalidated one by one only
    # when mapped (at the confinements, and back to writable); their 64
    # lazy unmaps are one invalidation of an aligned block covering them
    # all, the only block invalidation from 4 MiB up (mode-switch makes
    # two frames below it semi-writable in one batch: another block).
    fine = [(0x600 + 2 * i) << 12 for i in range(64)]
    counts = [inv.get(a, 0) for a in fine]
    check(counts == [confines + 1] * 64,
          "page invalidations per fine-mode frame: %s" % counts)
    high = [b for b in blocks if b[0] >= 0x400000]
    check(len(high) == 1, "block invalidations: %s" % blocks)
    base, mask = high[0]
    check(base <= fine[0] and fine[-1] < base + (4096 << mask),
          "the block 0x%x mask %d does not cover the batch" % (base, mask))
    stats = dict(line.split() for line in
                 r.files["global"].decode().splitlines())
    for k in ("dma_pinned", "dma_devices", "vms"):
        check(int(stats[k]) == 0, "%s after the run: %s" % (k, stats[k]))
    # Nothing else in level 1 invalidates IOTLB pages (virtio bypasses the
    # IOMMU): every one QEMU saw is a map or an unmap the module counted.
    seen = sum(inv.values()) + len(blocks)
    check(seen == int(stats["dma_maps"]) + int(stats["dma_flushes"]),
          "level 0 saw %d IOTLB invalidations, the module counted %s maps "
          "and %s flushes" % (seen, stats["dma_maps"], stats["dma_flushes"]))
    for line in out.splitlines():
        if line.startswith("#"):
            print(line)
    print("DMAR write faults in level 1: " + ", ".join(faults))
    print("DMAR write faults seen by level 0, by page: " +
          ", ".join(hex(a) for a in sorted(l0_faults)))
    print("level 0 QEMU: %d IOTLB invalidations in all (= module maps + "
          "flushes); coarse: each of 64 scattered frames map, pin, unpin = 3; "
          "fine: 64 conversions = 1 block invalidation 0x%x mask %d"
          % (seen, base, mask))
    print("global after the run: " + ", ".join(
        "%s %s" % (k, stats[k]) for k in ("dma_maps", "dma_unmaps",
                                          "dma_flushes", "dma_pinned")))


main(test)

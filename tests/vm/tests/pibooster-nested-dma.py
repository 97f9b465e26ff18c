#!/usr/bin/env python3
# runtests: cores 0.5
"""pibooster.ko with the attacker's device confined: level 1 on q35 with an
emulated VT-d and QEMU's edu device alone in its IOMMU group; the level-2
QEMU confines edu to its VM (-device pagetype,dma-device=...), which
happens when level 2's pibooster.ko registers its doorbell.  Level 2
holds 64 PTE tables in one process and names three frames on its console:
a page of a victim process (writable), a pinned L1 table new since the
holder started (the holder's: nothing else forks meanwhile), and a
cached, semi-writable frame.  Level
1 has edu write zeros to each, by DMA at IOVA = guest-physical address.
The victim's page is zeroed (the device does reach the VM), the holder
finds its pages as it left them (its tables were not touched), the cache
gives back every frame intact, level 1 logs a DMAR fault for the table
and the cached frame, and the host counted the IOMMU work.

A level 1 that dies or hangs is tried again, twice at most
(docs/testing.md, "Level-2 Linux guests")."""

import re
from vmtest import builddir, check, main
from pibooster import EDU, IOMMU_L1, run_nested, check_unload, host_counters
from pagetype import pagetype_device

L2_SCRIPT = r"""
mount -t debugfs none /sys/kernel/debug
F=/sys/kernel/debug/pibooster/frames
pib_load
read b <$P/backend/name; echo "backend $b"
pt-storm -V 40 >/tmp/victim & v=$!
pause 2
# From here to the targets line, only the holder forks: the frames file is
# read with the shell's builtins, so no reader's own tables are among the
# new ones.
seen=" "
while read f l s; do seen="$seen$f "; done <$F
pt-storm -n 1 -w 64 -S 35 >/tmp/hold 2>&1 & h=$!
held /tmp/hold
t= c=
while read f l s; do
	case "$s" in cached) c=${c:-$f}; continue;; table*) ;; *) continue;; esac
	case "$seen" in *" $f "*) continue;; esac
	test "$l" = l1 && t=$f
done <$F
read x y p </tmp/victim
echo "pibooster-dma: targets victim $p table $t cached $c" >/dev/kmsg
# level 1 fires within seconds; the holder holds for 35
pause 15
grep -q "^$t l1 table" $F && echo "table $t still pinned"
wait $h || { cat /tmp/hold; exit 1; }
cat /tmp/hold
wait $v; cat /tmp/victim
read n <$P/cached; echo "cached $n"
echo 0 >$P/shrink
pib_unload
"""

L1_SCRIPT = r"""
mount -t debugfs none /sys/kernel/debug
insmod /lib/modules/extra/kvm_pagetype.ko
start_l2 pibooster-dma
wait_l2_console pibooster-dma 'pibooster-dma: targets' || { wait_l2; exit 1; }
set -- $(grep -o 'targets victim 0x[0-9a-f]* table 0x[0-9a-f]* cached 0x[0-9a-f]*' \
	/tmp/pibooster-dma.console)
echo "targets: victim $3 table $5 cached $7"
for f in $3 $5 $7; do edu-dma $((f * 4096)); done
wait_l2
dmesg | grep DMAR || true
cp /sys/kernel/debug/kvm_pagetype/global /tmp/host
"""


def test():
    r1, r2 = run_nested(
        "pibooster-dma", L2_SCRIPT, L1_SCRIPT,
        pagetype_device(",dma-device=" + EDU) + [
            "-trace", "pagetype_confine"], l2_collect=["/tmp/host"],
        programs=[builddir("tests", "vm", "kvm", "edu-dma")], **IOMMU_L1)
    text, l1text = r2.text(), r1.text()
    check("backend host doorbell" in text, "not the host backend: " + text)
    check("pagetype_confine %s err 0" % EDU in r2.stderr,
          "edu was not confined: " + r2.stderr)
    m = re.search(r"targets: victim (0x[0-9a-f]+) table (0x[0-9a-f]+) "
                  r"cached (0x[0-9a-f]+)", l1text)
    check(m, "level 1 got no targets:\n" + l1text)
    victim, table, cached = (int(x, 16) for x in m.groups())
    check("victim landed" in text,
          "the DMA into a writable page did not land: the device does not "
          "reach the VM, so the rest proves nothing")
    check(text.count(", 0 failures") == 1,
          "the holder found its pages changed: a table was written")
    check("table %#x still pinned" % table in text,
          "the target table was not a pinned table after the DMA")
    faults = re.findall(r"DMAR: \[DMA Write.*fault addr (0x[0-9a-f]+)",
                        l1text)
    faulted = {int(a, 16) >> 12 for a in faults}
    check(table in faulted and cached in faulted and victim not in faulted,
          "DMAR faults at %s; table %#x, cached %#x, victim %#x"
          % (faults, table, cached, victim))
    check_unload(r2.dmesg.decode(errors="replace"))
    host = host_counters(r1.files["host"].decode())
    check(host["kills"] == 0 and host["dma_maps"] > 0 and
          host["dma_unmaps"] > 0 and host["dma_flushes"] > 0,
          "the host's IOMMU counts: %s" % host)
    print("edu confined to level 2: its DMA reached a writable page, not the "
          "pinned table %#x nor the cached frame %#x (DMAR faults); host: "
          "%d maps, %d unmaps, %d IOTLB flushes"
          % (table, cached, host["dma_maps"], host["dma_unmaps"],
             host["dma_flushes"]))


main(test)

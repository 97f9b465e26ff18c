#!/usr/bin/env python3
# runtests: cores 0.5
# Its guest has two vCPUs but sleeps through most of the test (a holder's
# 15 s, the pauses): about a quarter of a core alone (docs/testing.md).
"""pibooster.ko's cache sizes in a plain guest: shrink by number (from the
fullest level) and by percent (of each level, 0% releasing nothing),
thresholds by number and by ratio to the tables in use (enforced at once
and on every free), 0 releasing everything, bad values refused, fill
bounded by one batch and every level filled to the largest; then memory
pressure: a cache of a few thousand frames, a program touching more
memory than is free, and the shrinker gives frames back, counted to the
reclaim that called it (the root cgroup's memory.reclaim of half the
cache succeeds).  A hardware
memory error on a cached frame (hwpoison_inject), which is never handed
out; pins refused as a host out
of memory refuses them (the test-only debugfs test_refuse_pins): no
table goes out unpinned, the faults that wanted one are retried and the
process finishes.  The module's counts
balance throughout and page tables and free memory are back after
unload."""

import re
from vmtest import boot, check, main
from pibooster import (guest, stats, check_balance, check_memory,
                       check_unload)

SCRIPT = r"""
mount -t debugfs none /sys/kernel/debug
D=/sys/kernel/debug/pibooster
storm2 -n 10
mem native
pib_load
# children that each free 300 more L1 tables: the cache grows past fill
storm2 -n 4 -w 300
pause 1.5
levels() {
	read a <$P/cached_l1; read b <$P/cached_l2
	read c <$P/cached_l3; read d <$P/cached_l4
}
levels; read r0 <$P/stats/released
echo 10 >$P/shrink
read r1 <$P/stats/released; a0=$a; b0=$b; c0=$c; d0=$d; levels
echo "shrink-n $a0 $b0 $c0 $d0 $a $b $c $d $((r1 - r0))"
a0=$a; b0=$b; c0=$c; d0=$d
echo 50% >$P/shrink
levels; echo "shrink-p $a0 $b0 $c0 $d0 $a $b $c $d"
echo 0% >$P/shrink
levels; echo "shrink-0p $a $b $c $d"
echo 20 >$P/threshold
read t <$P/threshold; levels; echo "threshold-n $t $a $b $c $d"
storm2 -n 2 -w 100
pause 1.5; levels; echo "threshold-n-storm $a $b $c $d"
echo none >$P/threshold
# A hardware memory error on a cached L1 frame: the holder below takes
# every cached L1 frame and must not get it.
p=
while read f l s; do
	case "$l $s" in "l1 cached") p=$f; break;; esac
done <$D/frames
test -n "$p" || { echo "no cached L1 frame"; exit 1; }
echo $((p)) >/sys/kernel/debug/hwpoison/corrupt-pfn 2>/dev/null || true
while read k v _; do
	case $k in HardwareCorrupted:) hc=$v;; esac
done </proc/meminfo
# a child holding 300 L1 tables while the ratio is set; the cache grows
# past half of the tables in use only after it has taken its own
pt-storm -n 1 -w 300 -S 15 >/tmp/hold & h=$!
held /tmp/hold
ps=gone
while read f l s; do test "$f" = "$p" && ps="$l-$s"; done <$D/frames
read pn <$P/stats/poisoned
echo "poison $hc $ps $pn"
storm2 -n 2 -w 300
pause 1.5
levels; echo "before-p $a"
echo 50% >$P/threshold
read t <$P/threshold; levels
read ta <$P/tables_l1; read tb <$P/tables_l2; read tc <$P/tables_l3
read td <$P/tables_l4
echo "threshold-p $t $a $b $c $d $ta $tb $tc $td"
wait $h; cat /tmp/hold
echo none >$P/threshold
read t <$P/threshold; echo "threshold-none $t"
read f0 <$P/stats/refused; read e0 <$P/stats/errors; read s0 <$P/stats/stock
pt-storm -H 16 -R 3 || { echo "the refused process failed"; exit 1; }
read f <$P/stats/refused; read e <$P/stats/errors; read s1 <$P/stats/stock
echo "refused $((f - f0)) $((e - e0)) $((s1 - s0))"
for v in abc 101% -1 "" 1x; do
	if echo "$v" >$P/shrink 2>/dev/null; then echo "shrink took '$v'"; exit 1; fi
done
for v in abc 101% 0% -1; do
	if echo "$v" >$P/threshold 2>/dev/null; then echo "threshold took '$v'"; exit 1; fi
done
# the holder's and cat's tables come back through the reaper: let them
# land first, or they refill the cache after the shrink
pause 1.5
echo 0 >$P/shrink
levels; echo "shrink-0 $a $b $c $d"
# SET_MODE and the four levels' frames fit one batch: fill 63 at most
F=/sys/module/pibooster/parameters/fill
if echo 64 >$F 2>/dev/null; then echo "fill took 64"; exit 1; fi
echo 63 >$F
echo 0 >$P/enable; echo 1 >$P/enable
levels; echo "fill-63 $a $b $c $d"
echo 0 >$P/shrink
pause 1.5; echo "== sized"; stats
# MemFree leaves out the per-CPU free lists, which 6.12 grows by itself
# to about the size of the cache (2233 pages seen): held at their
# smallest, MemFree says what a hog can have.
echo 1000000 >/proc/sys/vm/percpu_pagelist_high_fraction
storm2 -n 3 -w 1500
pause 1.5
read big <$P/cached
free=$(meminfo MemFree)
pcp=$(awk '$1 == "count:" { n += $2 } END { print n }' /proc/zoneinfo)
# What a hog may take without the cache: MemFree less what the kernel
# keeps of each zone (its high watermark and its largest lowmem_reserve:
# totalreserve_pages).
reserve=$(awk '$1 == "high" { r += $2 }
	$1 == "protection:" { gsub(/[(),]/, " "); m = 0
		for (i = 2; i <= NF; i++) if ($i > m) m = $i; r += m }
	END { print r * 4 }' /proc/zoneinfo)
echo "pressure cached $big free $free reclaimable $(meminfo SReclaimable) pcp $pcp reserve $reserve"
# That and half the cache (4 KiB a frame): with no swap and the caches
# dropped, reclaim has little else to take (the other reclaimable slab,
# printed above), so it goes down the priorities to where the shrinker's
# share of a scan is whole batches; the other half (less the hog's own
# page tables, which come from the cache too) is the margin before the
# OOM killer.
pt-storm -H $(((free - reserve + big * 4 / 2) / 1024))
pause 1.5
read small <$P/cached
read sf <$P/stats/shrinker_freed
echo "after-pressure cached $small shrinker_freed $sf"
pause 1.5; echo "== pressed"; stats
# Reclaim asked of the root cgroup, as global reclaim is: with no swap
# and no file pages, the cache is what it can take, and it returns
# success (not EAGAIN) only if the frames the shrinker frees are counted
# to it.  Asked half the cache.
storm2 -n 3 -w 1500
pause 1.5
read big <$P/cached
mount -t cgroup2 none /sys/fs/cgroup
if echo $((big * 4 / 2))K >/sys/fs/cgroup/memory.reclaim; then rc=ok
else rc=refused; fi
read small <$P/cached
echo "root-reclaim $big $small $rc"
pib_unload
mem unloaded
"""


def nums(text, tag):
    m = re.search(r"^%s ([\w%% -]+)$" % re.escape(tag), text, re.M)
    check(m, "no '%s' line" % tag)
    return [int(x) if x.lstrip("-").isdigit() else x
            for x in m.group(1).split()]


def test():
    # A stale int3 (vmtest.stale_int3()) is tried again.
    r = boot(guest("pibooster-shrink", SCRIPT, kmods=["hwpoison_inject"]),
             timeout=300, emulator_retries=1)
    check(r.outcome == "pass", r.describe())
    text = r.text()
    n = nums(text, "shrink-n")
    before, after, released = n[:4], n[4:8], n[8]
    check(before[0] >= 300 and before[0] == max(before),
          "the storm did not grow the L1 cache: %s" % before)
    check(after == [before[0] - 10] + before[1:] and released == 10,
          "shrink 10: %s -> %s, %d released" % (before, after, released))
    n = nums(text, "shrink-p")
    before, after = n[:4], n[4:]
    check(after == [x // 2 for x in before],
          "shrink 50%%: %s -> %s" % (before, after))
    check(nums(text, "shrink-0p") == after,
          "shrink 0%%: %s -> %s" % (after, nums(text, "shrink-0p")))
    n = nums(text, "threshold-n")
    check(n[0] == 20 and max(n[1:]) <= 20,
          "threshold 20: reads %s, levels %s" % (n[0], n[1:]))
    n = nums(text, "threshold-n-storm")
    check(max(n) <= 20 and n[0] == 20,
          "threshold 20 after a storm: levels %s" % n)
    before = nums(text, "before-p")[0]
    n = nums(text, "threshold-p")
    t, cached, tables = n[0], n[1:5], n[5:]
    check(t == "50%" and tables[0] >= 300 and before > tables[0] // 2 and
          cached[0] > 0 and
          all(c <= tb // 2 for c, tb in zip(cached, tables)),
          "threshold 50%%: %d L1 frames cached before, levels %s after, "
          "tables %s" % (before, cached, tables))
    # 5-level paging (TCG's -cpu max has LA57): the holder's p4d is an L4
    check(tables[3] > 0, "no p4d table pinned: tables %s" % tables)
    check(nums(text, "threshold-none") == ["none"], "threshold none")
    refused, errors, stock = nums(text, "refused")
    check(refused == 3 and errors == 0 and stock == 0,
          "3 pins to refuse: %d refused, %d op errors, %d tables handed "
          "out unpinned" % (refused, errors, stock))
    hc, state, poisoned = nums(text, "poison")
    check(hc == 4, "no frame poisoned: HardwareCorrupted %s kB" % hc)
    check(state in ("gone", "l1-cached") and poisoned == 1,
          "the poisoned frame: %s while the holder holds every cached L1 "
          "frame, stats/poisoned %d" % (state, poisoned))
    check(nums(text, "shrink-0") == [0, 0, 0, 0], "shrink 0 left frames")
    check(nums(text, "fill-63") == [63] * 4,
          "fill 63: levels %s" % nums(text, "fill-63"))
    check_balance(stats(text, "sized"), "sized")
    big = nums(text, "pressure")[1]
    small, freed = nums(text, "after-pressure")[1], nums(text,
                                                          "after-pressure")[3]
    check(big >= 2000, "the cache grew to %d frames only" % big)
    check(freed > 0 and small < big,
          "memory pressure: %d frames cached before, %d after, %d by the "
          "shrinker" % (big, small, freed))
    check_balance(stats(text, "pressed"), "pressed")
    big, small, rc = nums(text, "root-reclaim")
    # reclaim counts the other pages it frees too (slab): the cache may
    # give a little less than half
    check(rc == "ok" and small < big,
          "memory.reclaim of half the cache: %s, %d frames cached before, "
          "%d after" % (rc, big, small))
    check_unload(r.dmesg.decode(errors="replace"))
    check_memory(text, "native", "unloaded", "sizes and pressure")


main(test)

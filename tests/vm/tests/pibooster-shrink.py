#!/usr/bin/env python3
"""pibooster.ko's cache sizes in a plain guest: shrink by number (from the
fullest level) and by percent (of each level), thresholds by number and by
ratio to the tables in use (enforced at once and on every free), 0
releasing everything, bad values refused; then memory pressure: a cache of
a few thousand frames, a program touching more memory than is free, and
the shrinker gives frames back.  The module's counts balance throughout
and page tables and free memory are back after unload."""

import sys, os, re
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from vmtest import boot, check, main
from pibooster import (guest, stats, check_balance, check_memory,
                       check_unload)

SCRIPT = r"""
storm2 -n 10
mem native
pib_load
# children that each free 300 more L1 tables: the cache grows past fill
storm2 -n 4 -w 300
pause 1.5
levels() { read a <$P/cached_l1; read b <$P/cached_l2; read c <$P/cached_l3; }
levels; read r0 <$P/stats/released
echo 10 >$P/shrink
read r1 <$P/stats/released; a0=$a; b0=$b; c0=$c; levels
echo "shrink-n $a0 $b0 $c0 $a $b $c $((r1 - r0))"
a0=$a; b0=$b; c0=$c
echo 50% >$P/shrink
levels; echo "shrink-p $a0 $b0 $c0 $a $b $c"
echo 20 >$P/threshold
read t <$P/threshold; levels; echo "threshold-n $t $a $b $c"
storm2 -n 2 -w 100
pause 1.5; levels; echo "threshold-n-storm $a $b $c"
echo none >$P/threshold
storm2 -n 2 -w 300
# a child holding 300 L1 tables while the ratio is set
pt-storm -n 1 -w 300 -S 6 >/tmp/hold & h=$!
pause 3
levels; echo "before-p $a"
echo 50% >$P/threshold
read t <$P/threshold; levels
read ta <$P/tables_l1; read tb <$P/tables_l2; read tc <$P/tables_l3
echo "threshold-p $t $a $b $c $ta $tb $tc"
wait $h; cat /tmp/hold
echo none >$P/threshold
read t <$P/threshold; echo "threshold-none $t"
for v in abc 101% -1 "" 1x; do
	if echo "$v" >$P/shrink 2>/dev/null; then echo "shrink took '$v'"; exit 1; fi
done
for v in abc 101% 0% -1; do
	if echo "$v" >$P/threshold 2>/dev/null; then echo "threshold took '$v'"; exit 1; fi
done
echo 0 >$P/shrink
levels; echo "shrink-0 $a $b $c"
pause 1.5; echo "== sized"; stats
storm2 -n 3 -w 1500
pause 1.5
read big <$P/cached
free=$(meminfo MemFree)
echo "pressure cached $big free $free"
# more than is free, less than free and half the cache: reclaim has
# nothing else to take (no swap, caches dropped) and need not kill
pt-storm -H $((free / 1024 + big * 4 / 1024 / 2 - 4))
pause 1.5
read small <$P/cached
read sf <$P/stats/shrinker_freed
echo "after-pressure cached $small shrinker_freed $sf"
pause 1.5; echo "== pressed"; stats
pib_unload
mem unloaded
"""


def nums(text, tag):
    m = re.search(r"^%s ([\w%% -]+)$" % re.escape(tag), text, re.M)
    check(m, "no '%s' line" % tag)
    return [int(x) if x.lstrip("-").isdigit() else x
            for x in m.group(1).split()]


def test():
    r = boot(guest("pibooster-shrink", SCRIPT), timeout=900)
    check(r.outcome == "pass", r.describe())
    text = r.text()
    a0, b0, c0, a, b, c, released = nums(text, "shrink-n")
    check(a0 >= 300 and a0 > b0 and a0 > c0,
          "the storm did not grow the L1 cache: %d %d %d" % (a0, b0, c0))
    check((a, b, c) == (a0 - 10, b0, c0) and released == 10,
          "shrink 10: %s -> %s, %d released"
          % ((a0, b0, c0), (a, b, c), released))
    a0, b0, c0, a, b, c = nums(text, "shrink-p")
    check((a, b, c) == (a0 // 2, b0 // 2, c0 // 2),
          "shrink 50%%: %s -> %s" % ((a0, b0, c0), (a, b, c)))
    t, a, b, c = nums(text, "threshold-n")
    check(t == 20 and max(a, b, c) <= 20,
          "threshold 20: reads %s, levels %s" % (t, (a, b, c)))
    a, b, c = nums(text, "threshold-n-storm")
    check(max(a, b, c) <= 20 and a == 20,
          "threshold 20 after a storm: levels %s" % ((a, b, c),))
    before = nums(text, "before-p")[0]
    t, a, b, c, ta, tb, tc = nums(text, "threshold-p")
    check(t == "50%" and ta >= 300 and before > ta // 2 and
          0 < a <= ta // 2 and b <= tb // 2 and c <= tc // 2,
          "threshold 50%%: %d L1 frames cached before, levels %s after, "
          "tables %s" % (before, (a, b, c), (ta, tb, tc)))
    check(nums(text, "threshold-none") == ["none"], "threshold none")
    check(nums(text, "shrink-0") == [0, 0, 0], "shrink 0 left frames")
    check_balance(stats(text, "sized"), "sized")
    big = nums(text, "pressure")[1]
    small, freed = nums(text, "after-pressure")[1], nums(text,
                                                          "after-pressure")[3]
    check(big >= 2000, "the cache grew to %d frames only" % big)
    check(freed > 0 and small < big,
          "memory pressure: %d frames cached before, %d after, %d by the "
          "shrinker" % (big, small, freed))
    check_balance(stats(text, "pressed"), "pressed")
    check_unload(r.dmesg.decode(errors="replace"))
    check_memory(text, "native", "unloaded", "sizes and pressure")


main(test)

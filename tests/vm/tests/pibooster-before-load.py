#!/usr/bin/env python3
# runtests: cores 1
"""Tables from before pibooster.ko loaded, linked by a stock 6.1 kernel
under tables it pinned, against the real host module (level 2 under KVM
in a TCG level 1, kvm_amd npt=0, kvm_pagetype.ko, -device pagetype).
Three processes map and touch memory before the load and wait; after it
(PiBooster mode, the host backend), one at a time:

- thp: mremap moves a 2 MiB huge page to new tables (move_huge_pmd takes
  its deposited PTE table along, unlinked) and unmapping a 4 KiB page
  splits it, linking that PTE table under the pinned PMD table;
- pud: mremap moves 1 GiB (aligned, PUD_SPANS spans touched) to a new PUD
  table, and move_normal_pud() links the PMD table with its PTE tables;
- share: a fork's child faults MAP_SHARED hugetlb memory spanning a PUD
  entry, and huge_pmd_share() links the parent's PMD table under the
  child's pinned PUD table.

The host validates each such table by reference (docs/pagetype.md, "Types
by reference"), as Xen's get_page_type() does.  Level 1 copies the host's
counters at each checkpoint level 2 names, then lets it on: each path
validates exactly the tables it links, no table so validated outlives its
process, nothing is killed or refused, every byte is right, and after
the unload the module's counts are the host's and nothing is pinned or
validated any more.

A level 1 that dies or hangs is tried again, twice at most
(docs/testing.md, "Level-2 Linux guests")."""

from vmtest import builddir, check, main
from pibooster import (run_nested, stats, check_unload, host_counters,
                       check_host_agrees, ACK_PORT, CHECKPOINT_L1,
                       CHECKPOINT_L2)
from pagetype import pagetype_device

# tests/vm/guest/pt-before.c: PUD_SPANS, SHARE_PAGES
PUD_SPANS = 4
SHARE_PAGES = 2
PATHS = ("thp", "pud", "share")
# What each path validates by reference: the deposited PTE table; the PMD
# table and its PTE tables; the shared PMD table.
REF = {"thp": 1, "pud": 1 + PUD_SPANS, "share": 1}
CHECKPOINTS = ("loaded",) + PATHS + ("unloaded",)

L2_SCRIPT = CHECKPOINT_L2 + r"""
echo madvise >/sys/kernel/mm/transparent_hugepage/enabled
echo %(huge)d >/proc/sys/vm/nr_hugepages
# (a sysctl reads only from offset 0: read, a byte at a time, sees EOF)
n=$(cat /proc/sys/vm/nr_hugepages)
test "$n" -eq %(huge)d || { echo "$n huge pages, not %(huge)d"; exit 1; }
for m in %(paths)s; do
	pt-before $m >/tmp/$m 2>&1 &
	eval "pid_$m=\$!"
	i=0
	until grep -q "ready" /tmp/$m; do
		i=$((i + 1))
		test $i -lt 100 || { cat /tmp/$m; exit 1; }
		pause 0.1
	done
done
pib_load
checkpoint loaded
for m in %(paths)s; do
	eval "p=\$pid_$m"
	kill -USR1 $p
	wait $p || { cat /tmp/$m; exit 1; }
	cat /tmp/$m
	checkpoint $m
done
read b <$P/backend/name; echo "backend $b"
stats
read h <$P/stats/held; echo "stat held $h"
pib_unload
checkpoint unloaded
""" % {"paths": " ".join(PATHS), "huge": SHARE_PAGES + 2}

L1_SCRIPT = CHECKPOINT_L1 + r"""
start_l2 pibooster-before
for c in %s; do
	checkpoint pibooster-before $c || break
done
wait_l2
cp /sys/kernel/debug/kvm_pagetype/global /tmp/host
""" % " ".join(CHECKPOINTS)


def test():
    # 4-level paging: roots are L4 tables, pinned at the host
    r1, r2 = run_nested(
        "pibooster-before", L2_SCRIPT, L1_SCRIPT,
        pagetype_device() + ACK_PORT,
        l2_programs=[builddir("tests", "vm", "guest", "pt-before")],
        l2_collect=["/tmp/host"] + ["/tmp/host-" + c for c in CHECKPOINTS],
        l2_cmdline="no5lvl")
    text = r2.text()
    check("backend host doorbell" in text, "not the host backend: " + text)
    for m in PATHS:
        check("pt-before: %s ok" % m in text, "%s did not pass" % m)
    s = stats(text)
    check(s["errors"] == 0 and s["held"] == 0,
          "the module: %d ops refused, %d tables held"
          % (s["errors"], s["held"]))
    host = {c: host_counters(r1.files["host-" + c].decode())
            for c in CHECKPOINTS}
    check(host["loaded"]["ref_validations"] == 0,
          "tables validated by reference before any path ran: %s"
          % host["loaded"])
    prev = host["loaded"]
    for m in PATHS:
        h = host[m]
        got = h["ref_validations"] - prev["ref_validations"]
        check(got == REF[m], "%s: %d tables validated by reference, not %d"
              % (m, got, REF[m]))
        for lv in (1, 2, 3, 4):
            check(h["tables_l%d" % lv] == h["pinned_l%d" % lv],
                  "after %s: %d L%d tables validated, %d pinned: one "
                  "validated by reference outlived its process"
                  % (m, h["tables_l%d" % lv], lv, h["pinned_l%d" % lv]))
        prev = h
    end = host["unloaded"]
    for lv in (1, 2, 3, 4):
        check(end["tables_l%d" % lv] == 0 and end["pinned_l%d" % lv] == 0,
              "unloaded: %d L%d tables validated, %d pinned"
              % (end["tables_l%d" % lv], lv, end["pinned_l%d" % lv]))
    dmesg = r2.dmesg.decode(errors="replace")
    check_unload(dmesg)
    final = host_counters(r1.files["host"].decode())
    pins, unpins, _, _ = check_host_agrees(dmesg, final, s["mode_retries"])
    print("tables from before the load linked under pinned ones, no kill: "
          "validated by reference %s; %d pins and %d unpins, the host "
          "agrees" % (", ".join("%s %d" % (m, REF[m]) for m in PATHS),
                      pins, unpins))


main(test)

#!/usr/bin/env python3
# runtests: cores 1
"""pibooster.ko with pin=roots against the real host module (level 2
under KVM in a TCG level 1, kvm_amd npt=0, kvm_pagetype.ko, -device
pagetype; 4-level paging, so roots are L4 tables): only roots are
pinned, and the host validates every table linked below one by
reference (docs/pibooster.md, "Modes").

Level 2 loads the module with pin=roots (the cache cannot be turned on),
runs fork storms, a multithreaded one and one of short-lived processes;
a process that mapped more tables before the load than the host
validates in one op then maps a page in a new PGD slot, whose root pin
the host refuses for its size (R_LIMIT): nothing killed, the root left
to the kernel.  The module unloads while a process holds tables below
a pinned root.  Level 1 copies the host's counters at each checkpoint:
the module pinned roots and nothing else, the host validated tables by
reference for every process, refused only that one pin, killed nothing,
and after the unload has no table validated, every one it validated,
by pin or by reference, having gone again.

A level 1 that dies or hangs is tried again, twice at most
(docs/testing.md, "Level-2 Linux guests")."""

from vmtest import builddir, check, main
from pibooster import (run_nested, stats, check_unload, host_counters,
                       ACK_PORT, CHECKPOINT_L1, CHECKPOINT_L2)
from pagetype import pagetype_device

# Processes the storms run: two fork storms at once, threads, and
# fork+exit.
FORKS, THREADS, EXITS = 4, 2, 40
CHECKPOINTS = ("loaded", "stormed", "wide", "unloaded")

L2_SCRIPT = CHECKPOINT_L2 + r"""
pt-before wide >/tmp/wide 2>&1 & w=$!
i=0
until grep -q "ready" /tmp/wide; do
	i=$((i + 1))
	test $i -lt 100 || { cat /tmp/wide; exit 1; }
	pause 0.1
done
pib_load pin=roots
read b <$P/backend/name; echo "backend $b"
read p </sys/module/pibooster/parameters/pin; echo "pin $p"
if echo 1 >$P/enable 2>/dev/null; then echo "the cache went on"; fi
read e <$P/enable; echo "enable $e"
checkpoint loaded
storm2 -n %(forks)d
pt-storm -m threads -n %(threads)d
pt-storm -m exit -n %(exits)d
echo "== stormed"; stats
checkpoint stormed
kill -USR1 $w
wait $w || { cat /tmp/wide; exit 1; }
cat /tmp/wide
echo "== wide"; stats
checkpoint wide
# unloaded while a process holds tables below its pinned root
pt-storm -n 1 -w 64 -S 8 >/tmp/hold 2>&1 & h=$!
held /tmp/hold
pib_unload
kill -0 $h 2>/dev/null && echo "the holder outlived the unload"
wait $h || { cat /tmp/hold; exit 1; }
cat /tmp/hold
checkpoint unloaded
""" % {"forks": FORKS, "threads": THREADS, "exits": EXITS}

L1_SCRIPT = CHECKPOINT_L1 + r"""
start_l2 pibooster-byref
for c in %s; do
	checkpoint pibooster-byref $c || break
done
wait_l2
""" % " ".join(CHECKPOINTS)


def test():
    r1, r2 = run_nested(
        "pibooster-byref", L2_SCRIPT, L1_SCRIPT,
        pagetype_device() + ACK_PORT,
        l2_programs=[builddir("tests", "vm", "guest", "pt-before")],
        l2_collect=["/tmp/host-" + c for c in CHECKPOINTS],
        l2_cmdline="no5lvl")
    text = r2.text()
    check("backend host doorbell" in text, "not the host backend: " + text)
    check("pin roots" in text, "the module is not in pin=roots mode")
    check("the cache went on" not in text and "enable 0" in text,
          "the cache could be turned on in pin=roots mode")
    # two fork storms, threads, fork+exit, the holder
    check(text.count(", 0 failures") == 5, "not every storm came back clean")
    check("pt-before: wide ok" in text, "the wide process failed")
    check("the holder outlived the unload" in text,
          "the holder let its tables go before the unload")
    dmesg = r2.dmesg.decode(errors="replace")
    check("roots pinned at L4, the tables below them validated by the host "
          "by reference (pin=roots)" in dmesg, "no pin=roots load message")
    s, w = stats(text, "stormed"), stats(text, "wide")
    check(s["errors"] == 0 and s["limited"] == 0 and s["hits"] == 0,
          "stormed: %d ops refused, %d roots past the bound, %d cache hits"
          % (s["errors"], s["limited"], s["hits"]))
    check(s["pins"] == s["roots"] > 0 and s["by_ref"] > 0,
          "stormed: %d pins, %d of them roots, %d tables left unpinned"
          % (s["pins"], s["roots"], s["by_ref"]))
    for lv in (1, 2, 3):
        check(s["tables_l%d" % lv] == 0, "the module pinned %d L%d tables"
              % (s["tables_l%d" % lv], lv))
    host = {c: host_counters(r1.files["host-" + c].decode())
            for c in CHECKPOINTS}
    a, b = host["loaded"], host["stormed"]
    procs = 2 * FORKS + THREADS + EXITS
    ref = b["ref_validations"] - a["ref_validations"]
    # a process has an L3, an L2 and an L1 table at least
    check(ref >= 3 * procs, "%d tables validated by reference for %d "
          "processes" % (ref, procs))
    for lv in (1, 2, 3):
        got = b["op_pin_l%d" % lv]
        check(got == 0, "the host was asked to pin %d L%d tables" % (got, lv))
    check(b["op_pin_l4"] == s["roots"] and b["op_errors"] == 0,
          "stormed: the host ran %d L4 pins and refused %d, level 2 pinned "
          "%d roots" % (b["op_pin_l4"], b["op_errors"], s["roots"]))
    # the wide process's root, past the bound: refused, nothing killed
    c = host["wide"]
    check(w["limited"] == 1 and w["errors"] == 0,
          "wide: %d roots past the bound, %d ops refused"
          % (w["limited"], w["errors"]))
    check(c["op_errors"] - b["op_errors"] == 1,
          "wide: the host refused %d ops, not 1"
          % (c["op_errors"] - b["op_errors"]))
    end = host["unloaded"]
    check(end["kills"] == 0 and end["violations"] == 0,
          "the host killed a VM: %s" % end)
    check(end["op_errors"] == w["limited"],
          "the host refused %d ops, %d of them roots past the bound"
          % (end["op_errors"], w["limited"]))
    for lv in (1, 2, 3, 4):
        check(end["tables_l%d" % lv] == 0 and end["pinned_l%d" % lv] == 0,
              "unloaded: %d L%d tables validated, %d pinned"
              % (end["tables_l%d" % lv], lv, end["pinned_l%d" % lv]))
    check_unload(dmesg)
    # every table validated, by a root's pin or by reference, went again
    pins = end["op_pin_l4"] - end["op_errors"]
    check(end["devalidations"] == end["ref_validations"] + pins,
          "unloaded: %d tables devalidated, %d validated by reference and "
          "%d roots pinned" % (end["devalidations"], end["ref_validations"],
                               pins))
    print("pin=roots: %d processes, %d roots pinned, %d tables validated by "
          "reference (%.1f a process), one root past the bound refused, no "
          "kill; after the unload nothing validated"
          % (procs, s["roots"], ref, ref / procs))


main(test)

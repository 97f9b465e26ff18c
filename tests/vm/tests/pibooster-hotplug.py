#!/usr/bin/env python3
# runtests: cores 1
"""Memory hot-added to a level-2 guest after pibooster.ko loaded, with the
host backend (level 2 under KVM in a TCG level 1, kvm_amd npt=0,
kvm_pagetype.ko, -device pagetype).  Level 2 boots with 256 MiB and room
for DIMMs; after the load, level 1 plugs HOTPLUG_MIB more through level
2's monitor (object_add, device_add pc-dimm), level 2 onlines it for the
kernel's own allocations, and a program touching more memory than level
2 had at boot makes the kernel take page tables from it.  Those frames
lie beyond the frames the module covers (fixed at load): they go out
unpinned (stats/stock) and the host, which follows the memslot added
after the attach (its frames grow), validates each by reference when it
is linked under a pinned table.  Storms before and after run clean,
nothing is killed or refused, and the counts agree on both sides.

A level 1 that dies or hangs is tried again, twice at most
(docs/testing.md, "Level-2 Linux guests")."""

from vmtest import check, main
from pibooster import (run_nested, stats, check_unload, host_counters,
                       check_host_agrees, ACK_PORT, CHECKPOINT_L1,
                       CHECKPOINT_L2)
from pagetype import pagetype_device

HOTPLUG_MIB = 256
# level 2 boots with 256 MiB (run_nested): more than that is hot memory
HOG_MIB = 320

L2_SCRIPT = CHECKPOINT_L2 + r"""
blocks() {
	n=0
	for m in /sys/devices/system/memory/memory*; do n=$((n + 1)); done
	echo $n
}
b0=$(blocks)
pib_load
read b <$P/backend/name; echo "backend $b"
storm2 -n 2
checkpoint loaded
i=0
until test "$(blocks)" -gt "$b0"; do
	i=$((i + 1))
	test $i -lt 100 || { echo "no memory came"; exit 1; }
	pause 0.1
done
for m in /sys/devices/system/memory/memory*; do
	read -r s <$m/state
	test "$s" = offline && echo online_kernel >$m/state
done
echo "memory blocks $b0 -> $(blocks), MemTotal $(meminfo MemTotal) kB"
pt-storm -H %(hog)d
storm2 -n 2
pause 1.5; echo "== hot"; stats
checkpoint stormed
pib_unload
""" % {"hog": HOG_MIB}

L1_SCRIPT = CHECKPOINT_L1 + r"""
# level 2's monitor: commands in through a FIFO, its answers to a file
mkfifo /tmp/mon.in
: >/tmp/mon.out
exec 4<>/tmp/mon.in
start_l2 pibooster-hotplug
checkpoint_seen pibooster-hotplug loaded &&
echo "object_add memory-backend-ram,id=hot0,size=%(mib)dM" >&4 &&
echo "device_add pc-dimm,id=dimm0,memdev=hot0" >&4 &&
checkpoint_go &&
checkpoint pibooster-hotplug stormed
wait_l2
cp /sys/kernel/debug/kvm_pagetype/global /tmp/host
""" % {"mib": HOTPLUG_MIB}


def test():
    r1, r2 = run_nested(
        "pibooster-hotplug", L2_SCRIPT, L1_SCRIPT,
        pagetype_device() + ["-m", "slots=2,maxmem=1G",
         "-chardev", "pipe,id=mon,path=/tmp/mon",
         "-mon", "chardev=mon,mode=readline"] + ACK_PORT,
        l2_collect=["/tmp/host", "/tmp/host-loaded", "/tmp/host-stormed",
                    "/tmp/mon.out"])
    text = r2.text()
    check("backend host doorbell" in text, "not the host backend: " + text)
    check("pt-storm: touched %d MiB" % HOG_MIB in text,
          "the program touching hot memory did not finish")
    check(text.count(", 0 failures") == 4, "not every storm came back clean")
    s = stats(text, "hot")
    check(s["stock"] > 0,
          "no page table came from the hot-added memory (stats/stock 0); "
          "monitor: %s" % r1.files["mon.out"].decode(errors="replace"))
    loaded = host_counters(r1.files["host-loaded"].decode())
    hot = host_counters(r1.files["host-stormed"].decode())
    check(hot["grown"] > loaded["grown"] and hot["frames"] > loaded["frames"],
          "the host's frames did not follow the DIMM: %d -> %d frames, "
          "grown %d -> %d" % (loaded["frames"], hot["frames"],
                              loaded["grown"], hot["grown"]))
    refs = hot["ref_validations"] - loaded["ref_validations"]
    check(refs >= s["stock"],
          "%d tables went out unpinned from hot memory, %d validated by "
          "reference" % (s["stock"], refs))
    dmesg = r2.dmesg.decode(errors="replace")
    check_unload(dmesg)
    final = host_counters(r1.files["host"].decode())
    pins, unpins, _, _ = check_host_agrees(dmesg, final, s["mode_retries"])
    print("%d MiB hot-added after the load: %d tables from it went out "
          "unpinned, the host grew from %d to %d frames and validated %d "
          "tables by reference; %d pins and %d unpins, the host agrees, "
          "no kill" % (HOTPLUG_MIB, s["stock"], loaded["frames"],
                       hot["frames"], refs, pins, unpins))


main(test)

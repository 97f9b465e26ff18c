#!/usr/bin/env python3
# runtests: cores 1
"""kexec -e out of a level-2 guest that runs pibooster.ko with the host
backend (level 2 under KVM in a TCG level 1, kvm_amd npt=0,
kvm_pagetype.ko, -device pagetype), into the same kernel, which loads
the module again.  The first kernel pins tables in a storm and leaves a
process holding 32 pinned L1 tables and the tables above them, then
reboots into the second with kexec_file_load and LINUX_REBOOT_CMD_KEXEC
(tests/vm/guest/pt-kexec.c: no firmware, no device reset by a reboot);
the module's PCI shutdown method has the host drop every table and the
doorbell first (RESET), so the second kernel's stores to those frames
are plain stores, and its pibooster.ko finds the device as new.  The
second kernel runs a storm and unloads clean; the host killed nothing,
refused nothing, and has nothing pinned at the end.

A level 1 that dies or hangs is tried again, twice at most
(docs/testing.md, "Level-2 Linux guests")."""

from vmtest import builddir, check, main
from pibooster import (run_nested, stats, check_unload, host_counters,
                       ACK_PORT, CHECKPOINT_L1, CHECKPOINT_L2)
from pagetype import pagetype_device

L2_SCRIPT = CHECKPOINT_L2 + r"""
if grep -q vmtest.kexec /proc/cmdline; then
	echo "== second kernel"
	cat /phase1.out
	pib_load
	read b <$P/backend/name; echo "backend $b"
	storm2 -n 2
	pause 1.5; echo "== again"; stats
	pib_unload
	checkpoint unloaded
	exit 0
fi
pib_load
storm2 -n 2 >/tmp/storm
pt-storm -n 1 -w 32 -S 600 >/tmp/held 2>&1 &
held /tmp/held
# what the first kernel says goes with the second's root
{ cat /tmp/storm; echo "== first"; stats; } >/phase1.out
cat /phase1.out
(cd / && find . -xdev ! -path ./boot/vmlinuz | cpio -o -H newc) \
	>/tmp/again.cpio 2>/dev/null
read -r cmdline </proc/cmdline
pt-kexec /boot/vmlinuz /tmp/again.cpio "$cmdline vmtest.kexec=1"
echo "pt-kexec returned"
exit 1
"""

L1_SCRIPT = CHECKPOINT_L1 + r"""
start_l2 pibooster-kexec
checkpoint pibooster-kexec unloaded
wait_l2
cp /sys/kernel/debug/kvm_pagetype/global /tmp/host
"""


def test():
    r1, r2 = run_nested(
        "pibooster-kexec", L2_SCRIPT, L1_SCRIPT,
        pagetype_device() + ACK_PORT,
        l2_programs=[builddir("tests", "vm", "guest", "pt-kexec")],
        l2_files=lambda kernel: {"/boot/vmlinuz": kernel.vmlinuz},
        l2_collect=["/tmp/host", "/tmp/host-unloaded"], l2_cmdline="no5lvl")
    text = r2.text()
    check("== second kernel" in text, "the second kernel did not run the "
          "test: " + text)
    first, again = stats(text, "first"), stats(text, "again")
    check(first["tables_l1"] >= 32 and first["roots"] > 0,
          "the first kernel held %d L1 tables, pinned %d roots at kexec"
          % (first["tables_l1"], first["roots"]))
    check("backend host doorbell" in text,
          "the second kernel's module did not take the doorbell: " + text)
    check(again["pins"] > 0 and again["errors"] == 0,
          "the second kernel: %d pins, %d ops refused"
          % (again["pins"], again["errors"]))
    # two storms in each kernel (the first's lines ride in /phase1.out)
    check(text.count(", 0 failures") == 4, "not every storm came back clean")
    check_unload(r2.dmesg.decode(errors="replace"))
    host = host_counters(r1.files["host"].decode())
    check(host["kills"] == 0, "the host killed a VM: %s" % host)
    check(host["op_errors"] == first["mode_retries"] + again["mode_retries"],
          "the host refused %d ops" % host["op_errors"])
    end = host_counters(r1.files["host-unloaded"].decode())
    check(end["vms"] == 1, "level 2 was not attached at its unload: %s" % end)
    for lv in (1, 2, 3, 4):
        check(end["pinned_l%d" % lv] == 0 and end["tables_l%d" % lv] == 0,
              "L%d after the second unload: %d pinned, %d validated" % (
                  lv, end["pinned_l%d" % lv], end["tables_l%d" % lv]))
    print("kexec with %d L1 tables and %d roots pinned: the host reset, the "
          "second kernel pinned %d tables again and unloaded clean, no "
          "kill" % (first["tables_l1"], first["roots"], again["pins"]))


main(test)

#!/usr/bin/env python3
# runtests: cores 1
"""kvm_pagetype with a real level-2 Linux under KVM.

Level 1 (kvm_amd npt=0) loads kvm_pagetype.ko and runs our QEMU with the
pagetype device.  First, realize refuses clearly without the module,
without KVM, and with vCPUs that offer a feature through which KVM writes
guest memory unseen by the module (kvmclock, steal time, SVM, Hyper-V) or
without kvm-pv-enforce-cpuid.  Then a level-2 test module (tests/vm/modules/pagetype_l2.c)
pins a live page table of its own guest (the PTE page mapping its loader's
stack) through the device's registers, checks its type, unpins it and runs
a batch through the doorbell page, then pins it again and writes the
device's RESET register as a kernel about to kexec does: the host forgets
the table and the doorbell.  The host module's counters, read in level 1,
must match the ops level 2 counted.  Last, the same module with
violate=1 maps its pinned table writable: that VM is killed (its QEMU
reports KVM_RUN failed), level 1 logs why and goes on (pagetype-ops shows
that new VMs then run).

Level 1 once froze at random with a level-2 Linux attached to
kvm_pagetype; a level 1 that dies or hangs is tried again, twice at most
(docs/testing.md, "Level-2 Linux guests")."""

import re
from vmtest import (Guest, boot, builddir, check, main, nested,  # noqa
                    nested_result)
from pagetype import PAGETYPE_CPU, pagetype_device

L1_SCRIPT = r"""
qemu() {
	qemu-system-x86_64 -nodefaults -display none -L /usr/share/qemu \
		-machine q35 "$@" -device pagetype
}
# vCPUs through whose features KVM writes guest memory unseen: refused,
# one feature at a time, each named
refused() {
	if qemu -accel kvm -cpu "$1" 2> /tmp/cpu.err; then exit 1; fi
	cat /tmp/cpu.err
	grep -q "pagetype: vCPU 0 $2" /tmp/cpu.err &&
		grep -q "The device needs -cpu" /tmp/cpu.err
}
refused qemu64 "offers kvmclock"
refused "qemu64,$GOOD,kvm-steal-time=on" "offers kvm-steal-time"
refused "qemu64,$GOOD,svm=on" "offers svm"
refused "qemu64,$GOOD,kvm-pv-enforce-cpuid=off" "has kvm-pv-enforce-cpuid off"
refused "qemu64,$GOOD,hv-relaxed=on" "has hv-relaxed=on"
refused "qemu64,$GOOD,hv-spinlocks=0x1fff" "has hv-spinlocks set"
if qemu -accel kvm -cpu "qemu64,$GOOD" 2> /tmp/nomod.err; then exit 1; fi
cat /tmp/nomod.err
grep -q "pagetype: cannot open /dev/kvm-pagetype (is kvm_pagetype.ko loaded?)" /tmp/nomod.err
mount -t debugfs none /sys/kernel/debug
insmod /lib/modules/extra/kvm_pagetype.ko
if qemu -accel tcg -cpu "qemu64,$GOOD" 2> /tmp/tcg.err; then exit 1; fi
cat /tmp/tcg.err
grep -q "pagetype: needs KVM" /tmp/tcg.err
# neither removed nor added at run time (an eject drops every table),
# even on a bus that takes hotplug (pc's pci.0): two refusals (device_add's
# reads "Parameter 'driver' expects a pluggable device type" in QEMU 7.2,
# device_del's words in 10.0) and the one device still there
printf 'device_del pt\ndevice_add pagetype,id=pt2\ninfo qtree\nquit\n' |
	qemu-system-x86_64 -nodefaults -display none -L /usr/share/qemu \
		-machine pc -accel kvm -cpu "qemu64,$GOOD" -S -monitor stdio \
		-device pagetype,id=pt 2>&1 | tr -d '\033\r' >/tmp/plug.out || true
refusals=$(grep -c -E "^Error: (Device 'pagetype' does not support hotplugging|Parameter 'driver' expects a pluggable device type)" /tmp/plug.out || true)
if [ "$refusals" -eq 2 ] &&
   [ "$(grep -c 'dev: pagetype, id "pt"$' /tmp/plug.out)" -eq 1 ] &&
   ! grep -q 'id "pt2"' /tmp/plug.out
then echo "pagetype: no device_del, no device_add"
else grep -v '^(qemu) .*\[D' /tmp/plug.out; exit 1
fi
run_l2 pagetype-l2
cp /sys/kernel/debug/kvm_pagetype/global /tmp/after-ops
run_l2 pagetype-kill
cp /sys/kernel/debug/kvm_pagetype/global /tmp/after-kill
"""


# Level 2 has no hotplug slot for the device: nothing to eject it through.
NO_SLOT = r"""
for d in /sys/bus/pci/devices/*; do
	read -r v <$d/vendor; read -r i <$d/device
	test "$v $i" = "0x1234 0x5054" && pt=${d##*/}
done
test -n "$pt" || { echo "no pagetype device"; exit 1; }
for a in /sys/bus/pci/slots/*/address; do
	test -e "$a" || continue
	read -r s <$a
	test "$s" = "${pt%.*}" && { echo "pagetype in ejectable slot $a"; exit 1; }
done
echo "pagetype $pt: in no hotplug slot"
"""


def stats(text):
    return {k: int(v) for k, v in (line.split() for line in
                                   text.decode().splitlines())}


def test():
    ko = builddir("tests", "vm", "modules", "pagetype_l2.ko")
    args = pagetype_device() + ["-trace", "enable=pagetype_*"]
    l2 = [Guest(name, NO_SLOT + "insmod /lib/modules/extra/pagetype_l2.ko "
                "%s\n" % opt,
                modules=[ko], qemu_args=args, memory=256, smp=1)
          for name, opt in (("pagetype-l2", ""),
                            ("pagetype-kill", "violate=1"))]
    l1 = nested("GOOD=%s\n" % PAGETYPE_CPU + L1_SCRIPT, l2, smp=1, kmod_opts={"kvm_amd": "npt=0"},
                modules=[builddir("kvm-pagetype", "kvm_pagetype.ko")],
                l2_collect=["/tmp/after-ops", "/tmp/after-kill"],
                l2_timeout=70)
    # two level-2 boots of 70 s at most inside; three attempts in 600 s
    r1 = boot(l1, timeout=180, emulator_retries=2)
    check(r1.outcome == "pass", "level 1: %s\n%s" % (r1.describe(),
                                                     r1.text()))

    r2 = nested_result(r1, "pagetype-l2")
    check(r2.outcome == "pass", "pagetype-l2: %s" % r2.describe())
    check("in no hotplug slot" in r2.text(), "level 2 can eject the device")
    log = r2.dmesg.decode(errors="replace")
    check("Hypervisor detected: KVM" in r2.console, "level 2 not under KVM")
    check(re.search(r"pin_l1 of the PTE page \S+ .*: result 0", log),
          "the pin failed:\n" + log)
    check(re.search(r"query: result 0 word 0x1c000001", log),
          "the PTE page is not a pinned L1:\n" + log)
    check("pin_l1 again: result 5" in log and "unpin: result 0" in log,
          "duplicate pin or unpin:\n" + log)
    check("reset: query result 0 word 0x0, doorbell done 0xdead" in log,
          "RESET left a table or the doorbell:\n" + log)
    ops = dict(re.findall(r"(\w+)=(\d+)", re.search(r"ops (.*)", log)[1]))
    host = stats(r1.files["after-ops"])
    for op in ("null", "pin_l1", "unpin", "query"):
        check(int(ops[op]) == host["op_" + op],
              "%s: level 2 issued %s, the host counted %d"
              % (op, ops[op], host["op_" + op]))
    check(int(ops["doorbells"]) == host["doorbells"] == 1, "doorbells")
    check(host["kills"] == 0 and host["pinned_l1"] == 0, str(host))
    check("pagetype_batch" in r2.stderr and "pagetype_doorbell" in r2.stderr,
          "no trace from the level-2 QEMU:\n" + r2.stderr)
    print("level 2 pinned its own PTE page and unpinned it; host counted "
          + ", ".join("%s %s" % (k, ops[k]) for k in sorted(ops)))

    k = nested_result(r1, "pagetype-kill")
    check(k.outcome == "killed", "pagetype-kill: %s" % k.describe())
    host = stats(r1.files["after-kill"])
    check(host["kills"] == 1 and host["last_kill"] == 1, str(host))
    check("killed: a trapped write broke a rule" in
          r1.dmesg.decode(errors="replace"), "no kill logged in level 1")
    print("the violating VM was killed: " + k.describe())


main(test)

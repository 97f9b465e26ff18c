#!/usr/bin/env python3
# runtests: cores 1
"""pibooster.ko against the real host module: a level-2 Debian kernel under
KVM in level 1 (kvm_amd npt=0, kvm_pagetype.ko, our QEMU with the pagetype
device) loads pibooster.ko in the middle of a fork storm (no table is pinned
before every task runs the hooks: a table pinned earlier could receive
an unpinned one from a task still on the stock allocators, and the host
would kill the guest), which takes the host backend through the
doorbell page, and runs fork storms in coarse mode and in PiBooster mode;
a process maps, through sysfs, a 64-bit BAR that the firmware put above
4 GiB (an ivshmem-plain device with a 4 GiB region: a memslot beyond
every one the host attached with, which its frames follow); then it
unloads while a process still holds pinned tables and four threads
of another allocate and free tables under shared ones (the walk at
pre_unpatch unpins every live table while the hooks still run; docs/
pibooster.md, "Livepatch transitions and unloading").  No VM is
killed, every child's bytes are right, and the counts agree on both
sides: every pin, unpin and conversion level 2 counted is one the host
ran, and the host refused nothing.

A level 1 that dies or hangs is tried again, twice at most
(docs/testing.md, "Level-2 Linux guests")."""

import re
from vmtest import builddir, check, main
from pibooster import (run_nested, stats, check_unload, host_counters,
                       check_host_agrees)
from pagetype import pagetype_device

# The most the multithreaded storm runs: it is stopped (SIGTERM) once the
# unload is done, and the test checks that it was still running then.
MT_SECONDS = 150
# ivshmem-plain's BAR 2: too large for the 32-bit PCI window, so placed
# above 4 GiB; a sparse file in level 1's tmpfs, one page of it touched
BAR_SIZE = 4 << 30

L2_SCRIPT = r"""
pt-storm -n 3 >/tmp/early 2>&1 & e=$!
pause 0.5
pib_load enable=0
wait $e || { cat /tmp/early; exit 1; }
cat /tmp/early
read b <$P/backend/name; echo "backend $b"
storm2 -n 3
pause 1.5; echo "== coarse"; stats
echo 1 >$P/enable
storm2 -n 3
pause 1.5; echo "== fine"; stats
mmio-map 1af4 1110 2
# unloaded while a process holds tables the module pinned (they are
# referenced by pinned tables above them, so the host lets them go only
# top level first) and a multithreaded storm runs on
pt-storm -n 1 -w 64 -S 8 >/tmp/hold 2>&1 & h=$!
pt-storm -m threads -s %(mt)d >/tmp/mt 2>&1 & m=$!
held /tmp/hold
pib_unload
kill -0 $m 2>/dev/null && echo "storm outlived the unload"
kill -TERM $m 2>/dev/null
wait $h || { cat /tmp/hold; exit 1; }
cat /tmp/hold
wait $m || { cat /tmp/mt; exit 1; }
cat /tmp/mt
""" % {"mt": MT_SECONDS}

L1_SCRIPT = r"""
mount -t debugfs none /sys/kernel/debug
insmod /lib/modules/extra/kvm_pagetype.ko
run_l2 pibooster-l2
cp /sys/kernel/debug/kvm_pagetype/global /tmp/host
"""


def test():
    # 4-level paging in level 2: its roots are L4 tables, pinned at the host
    r1, r2 = run_nested("pibooster-l2", L2_SCRIPT, L1_SCRIPT,
                        pagetype_device() + [
                         "-object", "memory-backend-file,id=bar,share=on,"
                         "mem-path=/dev/shm/bar,size=%d" % BAR_SIZE,
                         "-device", "ivshmem-plain,memdev=bar"],
                        l2_programs=[builddir("tests", "vm", "guest",
                                              "mmio-map")],
                        l2_collect=["/tmp/host"], l2_cmdline="no5lvl")
    text = r2.text()
    check("backend host doorbell" in text, "not the host backend: " + text)
    coarse, fine = stats(text, "coarse"), stats(text, "fine")
    check(coarse["pins"] > 0 and coarse["hits"] == 0 and fine["hits"] > 0,
          "coarse pinned nothing, or the cache was not used")
    check(coarse["roots"] > 0 and fine["roots"] > coarse["roots"] and
          fine["roots_freed"] > 0,
          "roots: %d pinned in coarse mode, %d in all, %d came back"
          % (coarse["roots"], fine["roots"], fine["roots_freed"]))
    check(text.count(", 0 failures") == 7, "not every storm came back clean")
    bar = re.search(r"^mmio-map: bar at (0x[0-9a-f]+)", text, re.M)
    check(bar and int(bar.group(1), 16) >= 1 << 32,
          "the BAR was not mapped above 4 GiB: %s"
          % (bar.group(1) if bar else "no mmio-map line"))
    check("storm outlived the unload" in text,
          "the multithreaded storm ended before the unload did")
    dmesg = r2.dmesg.decode(errors="replace")
    check("every task on the hooks: new tables pinned" in dmesg,
          "the patch never completed its transition")
    check_unload(dmesg)
    host = host_counters(r1.files["host"].decode())
    pins, unpins, semi, _ = check_host_agrees(dmesg, host,
                                              fine["mode_retries"])
    print("level 2 through the doorbell: %d pins, %d unpins, %d frames made "
          "semi-writable and back; the host agrees, no kill; %d roots "
          "pinned at L4; %d tables left to the kernel while the patch "
          "switched" % (pins, unpins, semi, host["op_pin_l4"],
                        coarse["early"]))


main(test)

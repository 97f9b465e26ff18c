#!/usr/bin/env python3
# runtests: cores 1.5
"""pibooster.ko unloaded while a fork storm runs on both vCPUs: the
livepatch transition completes, the module undoes every pin and every
conversion (the tables the storm still uses stay the kernel's), the storm
finishes with every child's result right, no splat, and page-table pages
and free memory are back where they were."""

from vmtest import boot, check, main
from pibooster import guest, check_memory, check_unload

SCRIPT = r"""
storm2 -n 10
mem native
pib_load
storm2 -s 20 >/tmp/bg 2>&1 & s=$!
pause 4
pib_unload
echo "unloaded mid-storm"
wait $s || { cat /tmp/bg; exit 1; }
cat /tmp/bg
storm2 -n 10
mem unloaded
"""


def test():
    # 4-level paging: live roots are pinned when the module goes
    # A stale int3 (vmtest.stale_int3()) is tried again.
    r = boot(guest("pibooster-unload", SCRIPT, cmdline="no5lvl"),
             timeout=300, emulator_retries=1)
    check(r.outcome == "pass", r.describe())
    text = r.text()
    check("unloaded mid-storm" in text, "the module did not unload")
    check(text.count(", 0 failures") == 6, "not every storm came back clean")
    check_unload(r.dmesg.decode(errors="replace"))
    check_memory(text, "native", "unloaded", "unload mid-storm")


main(test)

#!/usr/bin/env python3
# runtests: cores 1
"""An out-of-tree module built against the fetched headers loads into the
fetched kernel, takes its parameter, prints it, and unloads."""

from vmtest import Guest, boot, builddir, check, main


def test():
    ko = builddir("tests", "vm", "modules", "vmtest_hello.ko")
    r = boot(Guest("module-load", """
insmod /lib/modules/extra/vmtest_hello.ko answer=42
test "$(cat /sys/module/vmtest_hello/parameters/answer)" = 42
rmmod vmtest_hello
echo module cycle done
""", modules=[ko]), timeout=120)
    check(r.outcome == "pass", r.describe())
    dmesg = r.dmesg.decode(errors="replace")
    check("vmtest_hello: loaded, answer=42" in dmesg,
          "the module's load line is not in the guest's kernel log")
    check("vmtest_hello: unloaded" in dmesg,
          "the module's unload line is not in the guest's kernel log")
    check("module cycle done" in r.text(), "guest output did not come back")


main(test)

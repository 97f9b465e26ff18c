"""Shared pieces of the pibooster.ko tests: the guest, shell helpers for
the module's sysfs and the livepatch life cycle, and the checks of what
comes back."""

import os
import re
import runpy
from vmtest import (Guest, Kernel, boot, builddir, check, guest_sh, nested,
                    nested_result)

KO = ("guest-modules", "pibooster", "pibooster.ko")
# The module built for bookworm-backports' kernel (make
# guest-modules-backports).
KO_BACKPORTS = ("guest-modules", "backports", "pibooster", "pibooster.ko")
STORM = ("tests", "vm", "guest", "pt-storm")

# The kernel the module's guest runs (level 2 in a nested test) and the
# module built for it: the fetched default kernel (Kernel()), or the one
# on_kernel() names.
_kernel = None
_ko = KO


def on_kernel(test, env, ko, kver_prefix):
    """Run the test tests/vm/tests/@test.py with the module's guest (level 2
    of a nested test; level 1 keeps the default kernel, for which
    kvm_pagetype.ko is built) on the fetched kernel in $@env, whose release
    must start with @kver_prefix, and the module @ko (a builddir path)
    built for it.  The test's checks are its own."""
    global _kernel, _ko
    _kernel = Kernel(os.environ[env])
    check(_kernel.kver.startswith(kver_prefix),
          "not a %s kernel: %s" % (kver_prefix, _kernel.kver))
    _ko = ko
    print("%s with the module's guest on %s" % (test, _kernel.kver),
          flush=True)
    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "tests", test + ".py"), run_name="__main__")


def on_6_12(test):
    """on_kernel() with bookworm-backports' 6.12 (Debian 13's series)."""
    on_kernel(test, "SIVSHM_KERNEL_BACKPORTS", KO_BACKPORTS, "6.12.")

# Shell functions the guest scripts share (meminfo, st, pause, settle, mem,
# pib_load, pib_unload, storm2, stats): a guest script sources it first.
HELPERS = guest_sh("pibooster.sh")


def guest(name, script, memory=512, programs=(), **kw):
    """A plain guest (2 vCPUs) with pibooster.ko, pt-storm and @programs,
    running @script with HELPERS."""
    return Guest(name, script, shell_libs=[HELPERS], modules=[builddir(*_ko)],
                 programs=[builddir(*STORM)] + list(programs),
                 memory=memory, smp=2, kernel=_kernel, **kw)


def stats(text, tag=None):
    """The `stat name value` lines after the line `== tag` (up to the next
    such line), or the last of them all."""
    if tag is not None:
        check("== %s\n" % tag in text, "no statistics for %s" % tag)
        text = text.split("== %s\n" % tag, 1)[1].split("\n== ", 1)[0]
    out = {}
    for m in re.finditer(r"^stat (\w+) (-?\d+)$", text, re.M):
        out[m.group(1)] = int(m.group(2))
    return out


def mem(text, tag):
    """(page tables, free memory) in kB at the guest's `mem tag` line; the
    tables deposited for anonymous huge pages (4 kB per 2 MiB) are left
    out: they come and go with the huge pages, whoever allocates them."""
    m = re.search(r"^mem %s (\d+) (\d+) (\d+)$" % re.escape(tag), text,
                  re.M)
    check(m, "no memory figures for %s" % tag)
    pt, free, thp = map(int, m.groups())
    return pt - thp // 2048 * 4, free


def check_balance(s, what):
    """The module's counts agree with themselves and with the backend's:
    pins = unpins + live tables, the backend has the same tables pinned per
    level, every frame made semi-writable is cached, a semi-writable table
    or made writable again, and the rules refused nothing but the pins
    that raced a switch to fine-grained mode (retried at once)."""
    check(s["errors"] == 0, "%s: %d ops refused by the rules"
          % (what, s["errors"]))
    check(s["backend_op_errors"] == s["mode_retries"],
          "%s: the backend refused %d ops, %d of them pins that raced a "
          "mode switch" % (what, s["backend_op_errors"], s["mode_retries"]))
    live = 0
    for lv in ("l1", "l2", "l3", "l4"):
        live += s["tables_" + lv]
        check(s["tables_" + lv] == s["backend_tables_" + lv],
              "%s: %d %s tables here, %d at the backend"
              % (what, s["tables_" + lv], lv, s["backend_tables_" + lv]))
    check(s["pins"] == s["unpins"] + live,
          "%s: %d pins, %d unpins, %d live tables"
          % (what, s["pins"], s["unpins"], live))
    semi = s["to_semi"] - s["to_writable"]
    check(s["backend_semi"] == semi and semi >= s["cached"],
          "%s: %d frames made semi-writable and not back, %d semi at the "
          "backend, %d cached" % (what, semi, s["backend_semi"], s["cached"]))


def check_memory(text, before, after, what):
    """Page tables and free memory back where they were (free memory within
    2 MiB: slabs move a little)."""
    pt0, free0 = mem(text, before)
    pt1, free1 = mem(text, after)
    check(pt1 <= pt0 + 8, "%s: page tables %d kB before, %d kB after"
          % (what, pt0, pt1))
    check(free1 >= free0 - 2048, "%s: %d kB free before, %d kB after"
          % (what, free0, free1))


def check_unload(dmesg):
    """The module's last line: every pin undone, every conversion undone,
    no refusal."""
    m = re.search(r"pibooster: unloaded: (\d+) pins, (\d+) unpins, "
                  r"(\d+) errors; (\d+) frames made semi-writable, "
                  r"(\d+) back", dmesg)
    check(m, "the module's unload line is missing")
    pins, unpins, errors, semi, back = map(int, m.groups())
    check(pins > 0 and pins == unpins and errors == 0 and semi == back,
          "unload: %d pins, %d unpins, %d errors, %d frames made "
          "semi-writable, %d back" % (pins, unpins, errors, semi, back))


# Level 1 on q35 with an emulated VT-d and edu at a known address, for
# the level-2 QEMU's -device pagetype,dma-device=EDU.
EDU = "0000:00:04.0"
IOMMU_L1 = dict(l1_machine="q35,kernel-irqchip=split",
                l1_args=["-device", "intel-iommu,intremap=on,caching-mode=on",
                         "-device", "edu,addr=04.0"],
                cmdline="intel_iommu=on")


# Checkpoints of a nested test: at `checkpoint NAME` level 2 prints
# "vmtest: checkpoint NAME" and waits on its virtio port "ack" (ACK_PORT,
# among its QEMU arguments); level 1's `checkpoint GUEST NAME` waits for
# that line, copies the host's counters to /tmp/host-NAME (for
# l2_collect), does what the script put between the two, and answers.
ACK_PORT = ["-chardev", "pipe,id=ack,path=/tmp/ack",
            "-device", "virtserialport,bus=vmtest-serial.0,chardev=ack,"
            "name=ack"]

CHECKPOINT_L2 = r"""
ack=
for d in /sys/class/virtio-ports/*; do
	read -r n <"$d/name" && test "$n" = ack && ack=/dev/${d##*/}
done
test -c "$ack" || { echo "no ack port"; exit 1; }
checkpoint() { echo "vmtest: checkpoint $1"; read -r _ <"$ack"; }
"""

CHECKPOINT_L1 = r"""
mount -t debugfs none /sys/kernel/debug
insmod /lib/modules/extra/kvm_pagetype.ko
mkfifo /tmp/ack.in /tmp/ack.out
# held open here, so that a write never waits for a reader
exec 3<>/tmp/ack.in
checkpoint_seen() {
	wait_l2_console "$1" "vmtest: checkpoint $2" &&
	cp /sys/kernel/debug/kvm_pagetype/global /tmp/host-$2
}
checkpoint_go() { echo go >&3; }
checkpoint() { checkpoint_seen "$1" "$2" && checkpoint_go; }
"""


# The bounds of a nested pibooster test, one attempt of level 1 and its
# level 2 (level 1's clock), sized from the slowest passes measured
# (docs/testing.md, "Bounds, and how they are sized"): three attempts fit
# in the runner's VM tier bound.
NESTED_TIMEOUT = 240
NESTED_L2_TIMEOUT = 200


def run_nested(name, l2_script, l1_script, qemu_args, l2_programs=(),
               l2_collect=(), timeout=NESTED_TIMEOUT,
               l2_timeout=NESTED_L2_TIMEOUT, l2_cmdline="",
               l2_files=None, **l1_opts):
    """Level 2 @name (1 vCPU, 256 MiB, pibooster.ko, pt-storm and
    @l2_programs, @l2_files (Guest's files, or a function of the level-2
    kernel that returns them), -device pagetype..., @l2_cmdline) under a
    TCG level 1 with
    kvm_amd npt=0 and kvm_pagetype.ko running @l1_script; a level 1 that
    dies or hangs is tried again twice.  Both must pass; returns their
    Results (level 1, level 2)."""
    l2 = Guest(name, l2_script, shell_libs=[HELPERS],
               modules=[builddir(*_ko)],
               programs=[builddir(*STORM)] + list(l2_programs),
               memory=256, smp=1, qemu_args=qemu_args, cmdline=l2_cmdline,
               kernel=_kernel)
    if callable(l2_files):
        l2_files = l2_files(l2.kernel)
    l2.files.update(l2_files or {})
    l1 = nested(l1_script, l2, smp=1, kmod_opts={"kvm_amd": "npt=0"},
                modules=[builddir("kvm-pagetype", "kvm_pagetype.ko")],
                l2_collect=list(l2_collect), l2_timeout=l2_timeout,
                **l1_opts)
    r1 = boot(l1, timeout=timeout, emulator_retries=2)
    check(r1.outcome == "pass", "level 1: %s\n%s" % (r1.describe(),
                                                     r1.text()))
    r2 = nested_result(r1, name)
    # a kill's reason, gpa and result code are in level 1's log
    kills = [l for l in r1.dmesg.decode(errors="replace").splitlines()
             if "kvm_pagetype" in l and "killed" in l]
    check(r2.outcome == "pass", "level 2: %s\n%s%s" % (
        r2.describe(), r2.text(), "".join("\nlevel 1: " + l for l in kills)))
    return r1, r2


def host_counters(text):
    """kvm_pagetype's debugfs `global` file as a dict."""
    return {k: int(v) for k, v in (l.split() for l in text.splitlines())}


def check_host_agrees(dmesg, host, mode_retries):
    """Every pin, unpin and conversion pibooster.ko counted at its unload
    (its last log line) is one the host ran, and the host refused nothing
    but the pins that raced a mode switch, and killed nothing.  Returns
    the module's (pins, unpins, frames made semi-writable, back)."""
    check(host["kills"] == 0, "the host killed a VM: %s" % host)
    check(host["op_errors"] == mode_retries,
          "the host refused %d ops" % host["op_errors"])
    m = re.search(r"pibooster: unloaded: (\d+) pins, (\d+) unpins, "
                  r"(\d+) errors; (\d+) frames made semi-writable, "
                  r"(\d+) back", dmesg)
    check(m, "the module's unload line is missing")
    pins, unpins, _, semi, back = map(int, m.groups())
    host_pins = sum(host["op_pin_l%d" % lv] for lv in (1, 2, 3, 4))
    for what, guest, h in (("pins", pins, host_pins),
                           ("unpins", unpins, host["op_unpin"]),
                           ("to_semi", semi, host["op_to_semi"]),
                           ("to_writable", back, host["op_to_writable"])):
        check(guest == h, "%s: level 2 counted %d, the host %d"
              % (what, guest, h))
    return pins, unpins, semi, back

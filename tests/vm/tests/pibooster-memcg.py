#!/usr/bin/env python3
"""pibooster.ko and a cgroup v2 memory controller in a plain guest (4-level
paging, so every process's root is pinned at L4): PROCS short-lived
processes (each forks, copies the tables of a small program and exits)
run in a cgroup limited to LIMIT_MIB, in coarse mode, then in PiBooster
mode.  No OOM and no failure; each root pinned is unpinned when its mm
lets go of it; memory.current comes back to within SLACK_KIB of its start
in coarse mode, and in PiBooster mode to within that plus the frames the
cache holds (they keep the charge of the cgroup whose process freed them
last: docs/pibooster.md, "Memory cgroups"); after the unload, to within
SLACK_KIB.  A root held past pgd_free() would split its order-1 block and
leave a page of charge behind per process: PROCS pages, far past both."""

from vmtest import boot, check, main
from pibooster import guest, stats, check_unload

PROCS = 20000
LIMIT_MIB = 64
# The memory controller's per-CPU charge stock: 64 pages a CPU, 2 vCPUs
# (mm/memcontrol.c, MEMCG_CHARGE_BATCH), and a page of objects a CPU.
SLACK_KIB = 2 * (64 + 1) * 4

SCRIPT = r"""
mount -t cgroup2 none /sys/fs/cgroup
echo +memory >/sys/fs/cgroup/cgroup.subtree_control
C=/sys/fs/cgroup/pib
mkdir $C
echo %(limit)dM >$C/memory.max
# half the processes from each of two parents in the cgroup, at once
in_cgroup() {
	sh -c "echo \$\$ >$C/cgroup.procs && exec pt-storm $*" >/tmp/c1 2>&1 &
	a=$!
	sh -c "echo \$\$ >$C/cgroup.procs && exec pt-storm $*" >/tmp/c2 2>&1 &
	b=$!
	wait $a || { cat /tmp/c1; return 1; }
	wait $b || { cat /tmp/c2; return 1; }
	cat /tmp/c1 /tmp/c2
}
charge() { read -r c <$C/memory.current; echo "charge $1 $((c / 1024))"; }
pib_load enable=0
charge start
in_cgroup -m exit -n %(half)d
pause 1.5
charge coarse
echo 1 >$P/enable
in_cgroup -m exit -n %(half)d
pause 1.5
charge fine
read -r n <$P/cached; echo "cached $n"
while read -r k v; do echo "event $k $v"; done <$C/memory.events
echo "== end"; stats
pib_unload
charge unloaded
""" % {"limit": LIMIT_MIB, "half": PROCS // 2}


def kib(text, tag):
    for line in text.splitlines():
        f = line.split()
        if f[:2] == ["charge", tag]:
            return int(f[2])
    check(False, "no charge line for %s" % tag)
    return 0


def test():
    r = boot(guest("pibooster-memcg", SCRIPT, cmdline="no5lvl"),
             timeout=600)
    check(r.outcome == "pass", r.describe())
    text = r.text()
    check(text.count(", 0 failures") == 4 and
          text.count("pt-storm: %d iterations" % (PROCS // 2)) == 4,
          "not every process came back clean")
    events = dict(l.split()[1:3] for l in text.splitlines()
                  if l.startswith("event "))
    check(events.get("oom") == "0" and events.get("oom_kill") == "0",
          "memory.events: %s" % events)
    s = stats(text, "end")
    check(s["roots"] >= PROCS and s["roots_freed"] == s["roots"],
          "%d roots pinned, %d unpinned" % (s["roots"], s["roots_freed"]))
    start, coarse, fine = kib(text, "start"), kib(text, "coarse"), \
        kib(text, "fine")
    cached = int(text.split("\ncached ", 1)[1].split()[0])
    check(coarse <= start + SLACK_KIB,
          "coarse: memory.current %d KiB at the start, %d KiB after %d "
          "processes" % (start, coarse, PROCS // 2))
    check(fine <= start + SLACK_KIB + 4 * cached,
          "PiBooster: memory.current %d KiB at the start, %d KiB after, "
          "%d frames cached" % (start, fine, cached))
    end = kib(text, "unloaded")
    check(end <= start + SLACK_KIB,
          "unloaded: memory.current %d KiB at the start, %d KiB after"
          % (start, end))
    check_unload(r.dmesg.decode(errors="replace"))
    print("%d processes in a %d MiB cgroup, no OOM: memory.current %d KiB "
          "at the start, %d after coarse mode, %d after PiBooster mode "
          "(%d frames cached), %d after the unload; %d roots pinned and "
          "unpinned" % (PROCS, LIMIT_MIB, start, coarse, fine, cached, end,
                        s["roots"]))


main(test)

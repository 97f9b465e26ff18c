#!/usr/bin/env python3
# runtests: cores 1.5
"""pibooster.ko and a cgroup v2 memory controller in a plain guest (4-level
paging, so every process's root is pinned at L4): PROCS short-lived
processes (each forks, copies the tables of a small program and exits)
run in cgroup A, limited to LIMIT_MIB, in coarse mode, then in PiBooster
mode; then OTHER in cgroup B.  No OOM and no failure; each root pinned is
unpinned when its mm lets go of it.  memory.current of A comes back to
within SLACK_KIB of its start in coarse mode.  In PiBooster mode the
frames cached for A (debugfs pibooster/memcg_cached, read from inside A)
are charged to A and to no one else: A's charge is its start plus those
frames, within SLACK_KIB either way.  B's processes take none of A's
frames (A's count is the same after them), and A's reclaim
(memory.reclaim) gives every one back through the shrinker, leaving A
within SLACK_KIB of its start.  A root held past pgd_free() would split
its order-1 block and leave a page of charge behind per process: PROCS
pages, far past every bound."""

from vmtest import boot, check, main
from pibooster import guest, stats, check_unload

PROCS = 20000
OTHER = 2000
LIMIT_MIB = 64
# The memory controller's per-CPU charge stock: 64 pages a CPU, 2 vCPUs
# (mm/memcontrol.c, MEMCG_CHARGE_BATCH), and a page of objects a CPU.
SLACK_KIB = 2 * (64 + 1) * 4
# A cached frame's descriptor (cache.c: struct pib_cached), charged with
# it: at most this many bytes.
DESC_BYTES = 64

SCRIPT = r"""
mount -t cgroup2 none /sys/fs/cgroup
mount -t debugfs none /sys/kernel/debug
echo +memory >/sys/fs/cgroup/cgroup.subtree_control
C=/sys/fs/cgroup/pib
O=/sys/fs/cgroup/other
mkdir $C $O
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
# the frames cached for cgroup $1, read by a shell in it that forks nothing
cached_in() {
	sh -c "echo \$\$ >$1/cgroup.procs &&
		while read -r l n; do echo \"memcg $2 \$l \$n\"; done \
			</sys/kernel/debug/pibooster/memcg_cached"
}
pib_load enable=0
charge start
in_cgroup -m exit -n %(half)d
pause 1.5
charge coarse
echo 1 >$P/enable
in_cgroup -m exit -n %(half)d
pause 1.5
charge fine
cached_in $C fine
sh -c "echo \$\$ >$O/cgroup.procs && exec pt-storm -m exit -n %(other)d"
pause 1.5
cached_in $C other
cached_in $O other-self
# it fails (EAGAIN) short of 1G, having reclaimed what it could
echo 1G >$C/memory.reclaim 2>/dev/null || true
cached_in $C reclaimed
# what the reader leaves to an RCU grace period (its task_struct among
# them) stays charged to C until then: read the charge after it, as
# after the storms above
pause 1.5
charge reclaimed
while read -r k v; do echo "event $k $v"; done <$C/memory.events
echo "== end"; stats
pib_unload
charge unloaded
""" % {"limit": LIMIT_MIB, "half": PROCS // 2, "other": OTHER}


def kib(text, tag):
    for line in text.splitlines():
        f = line.split()
        if f[:2] == ["charge", tag]:
            return int(f[2])
    check(False, "no charge line for %s" % tag)
    return 0


def memcg_cached(text, tag):
    """Frames cached for a cgroup at its `memcg tag` lines, all levels."""
    n = [int(l.split()[3]) for l in text.splitlines()
         if l.startswith("memcg %s l" % tag)]
    check(len(n) == 4, "no memcg_cached lines for %s" % tag)
    return sum(n)


def test():
    # A stale int3 (vmtest.stale_int3()) is tried again.
    r = boot(guest("pibooster-memcg", SCRIPT, cmdline="no5lvl"),
             timeout=400, emulator_retries=1)
    check(r.outcome == "pass", r.describe())
    text = r.text()
    check(text.count(", 0 failures") == 5 and
          text.count("pt-storm: %d iterations" % (PROCS // 2)) == 4 and
          text.count("pt-storm: %d iterations" % OTHER) == 1,
          "not every process came back clean")
    events = dict(l.split()[1:3] for l in text.splitlines()
                  if l.startswith("event "))
    check(events.get("oom") == "0" and events.get("oom_kill") == "0",
          "memory.events: %s" % events)
    s = stats(text, "end")
    check(s["roots"] >= PROCS + OTHER and s["roots_freed"] == s["roots"],
          "%d roots pinned, %d unpinned" % (s["roots"], s["roots_freed"]))
    start, coarse, fine = kib(text, "start"), kib(text, "coarse"), \
        kib(text, "fine")
    check(coarse <= start + SLACK_KIB,
          "coarse: memory.current %d KiB at the start, %d KiB after %d "
          "processes" % (start, coarse, PROCS // 2))
    mine = memcg_cached(text, "fine")
    held = mine * (4096 + DESC_BYTES) // 1024
    check(mine > 0 and start + mine * 4 - SLACK_KIB <= fine <=
          start + held + SLACK_KIB,
          "PiBooster: memory.current %d KiB at the start, %d KiB after, "
          "%d frames cached for the cgroup" % (start, fine, mine))
    after_other, other = memcg_cached(text, "other"), \
        memcg_cached(text, "other-self")
    check(after_other == mine and other > 0,
          "another cgroup's processes: %d frames cached for the first "
          "before, %d after; %d for the other" % (mine, after_other, other))
    check(memcg_cached(text, "reclaimed") == 0 and
          kib(text, "reclaimed") <= start + SLACK_KIB,
          "memory.reclaim: %d frames still cached, memory.current %d KiB "
          "(%d at the start)" % (memcg_cached(text, "reclaimed"),
                                 kib(text, "reclaimed"), start))
    check(s["shrinker_freed"] >= mine,
          "the shrinker gave back %d frames, %d were the cgroup's"
          % (s["shrinker_freed"], mine))
    end = kib(text, "unloaded")
    check(end <= start + SLACK_KIB,
          "unloaded: memory.current %d KiB at the start, %d KiB after"
          % (start, end))
    check_unload(r.dmesg.decode(errors="replace"))
    print("%d processes in a %d MiB cgroup, no OOM: memory.current %d KiB "
          "at the start, %d after coarse mode, %d after PiBooster mode "
          "(%d frames cached for it), %d after memory.reclaim, %d after "
          "the unload; %d processes of another cgroup took none of its "
          "frames (%d cached for that one); %d roots pinned and unpinned"
          % (PROCS, LIMIT_MIB, start, coarse, fine, mine,
             kib(text, "reclaimed"), end, OTHER, other, s["roots"]))


main(test)

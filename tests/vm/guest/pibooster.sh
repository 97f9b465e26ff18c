# shellcheck shell=sh
# Sourced by the pibooster.ko tests' guest scripts (tests/vm/pibooster.py):
# helpers for the module's sysfs and the livepatch life cycle.  meminfo
# prints a field in kB; st reads one of the module's statistics; pib_unload
# disables the livepatch, waits for its transition and removes the module.
# busybox's sh, which runs this, has local and read -t.
# shellcheck disable=SC3043,SC3045
set -e
P=/sys/kernel/pibooster
meminfo() { awk -v f="$1:" '$1 == f { print $2 }' /proc/meminfo; }
st() { cat "$P/stats/$1"; }
mkfifo /tmp/pause
# A pause that forks nothing, so it frees no page table of its own.
pause() { read -r -t "$1" _ <>/tmp/pause || true; }
settle() { sync; echo 3 >/proc/sys/vm/drop_caches; pause 1.5; }
# held FILE: wait until the pt-storm -S whose output goes to FILE holds
# its tables (its first line), at most HELD_WAIT_S; builtins only, so
# the wait maps and frees no tables of its own.
HELD_WAIT_S=120
held() {
	local n=0 line
	while :; do
		line=
		read -r line <"$1" || true
		case "$line" in "pt-storm: holding"*) return 0 ;; esac
		n=$((n + 1))
		if [ "$n" -gt $((HELD_WAIT_S * 2)) ]; then
			echo "held: no holder in $1 after $HELD_WAIT_S s"
			return 1
		fi
		pause 0.5
	done
}
# Page tables and free memory in kB, once nothing runs but this shell:
# free pages are MemFree and the pages on the per-CPU free lists
# (/proc/zoneinfo's pageset counts), which MemFree leaves out.  Then the
# anonymous huge pages in kB: each one mapped holds a deposited page
# table, counted in PageTables for as long as it lives.  stat_refresh
# folds the per-CPU counter deltas in first: unfolded, PageTables alone
# was seen 20 kB off.  Read with the shell's builtins only: a reader of
# its own (awk) has 4 or 5 page tables, which PageTables shows or not
# depending on whether its CPU's delta crossed the fold threshold (96
# and 116 kB seen in two runs of the same script).
mem() {
	local k v pt free thp pcp=0
	settle
	echo 1 >/proc/sys/vm/stat_refresh
	while read -r k v _; do
		case $k in
		PageTables:) pt=$v;;
		MemFree:) free=$v;;
		AnonHugePages:) thp=$v;;
		esac
	done </proc/meminfo
	while read -r k v _; do
		case $k in count:) pcp=$((pcp + v));; esac
	done </proc/zoneinfo
	echo "mem $1 $pt $((free + pcp * 4)) $thp"
}
# Loaded once every task runs the hooks: nothing is pinned before that
# (docs/pibooster.md, "Livepatch transitions and unloading").
pib_load() {
	insmod /lib/modules/extra/pibooster.ko "$@" || return 1
	i=0
	until read -r t </sys/kernel/livepatch/pibooster/transition &&
	      test "$t" = 0; do
		i=$((i + 1)); test $i -lt 600 || { echo "patch stuck"; return 1; }
		sleep 0.1
	done
}
pib_unload() {
	echo 0 >/sys/kernel/livepatch/pibooster/enabled
	i=0
	while test -d /sys/kernel/livepatch/pibooster; do
		i=$((i + 1)); test $i -lt 600 || { echo "unpatch stuck"; return 1; }
		sleep 0.1
	done
	rmmod pibooster
}
# Both vCPUs: two storms at once; fails if either does.
storm2() {
	pt-storm "$@" >/tmp/s1 2>&1 & a=$!
	pt-storm "$@" >/tmp/s2 2>&1 & b=$!
	wait $a || { cat /tmp/s1; return 1; }
	wait $b || { cat /tmp/s2; return 1; }
	cat /tmp/s1 /tmp/s2
}
# The module's counts, read with the shell's builtins only: a forked cat
# would allocate and free page tables between two reads.
stats() {
	for f in hits misses pins unpins to_semi to_writable batches errors \
		 mode_retries freed_by_hook freed_inline released \
		 shrinker_freed stock roots roots_freed by_ref limited early; do
		read -r v <$P/stats/$f; echo "stat $f $v"
	done
	for f in cached cached_l1 cached_l2 cached_l3 cached_l4 tables_l1 \
		 tables_l2 tables_l3 tables_l4; do
		read -r v <$P/$f; echo "stat $f $v"
	done
	# the local backend's counts (with a host, they are the host's)
	for f in tables_l1 tables_l2 tables_l3 tables_l4 semi op_errors; do
		test -e $P/backend/$f || continue
		read -r v <$P/backend/$f; echo "stat backend_$f $v"
	done
}

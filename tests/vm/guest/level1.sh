# shellcheck shell=sh
# Sourced by a nested test's level-1 script (tests/vm/vmtest/nested.py):
# boot the level-2 guests with our QEMU, each by its /l2/NAME.sh.
#   run_l2 [NAME]     boot NAME (default: the first) and wait for it
#   start_l2 NAME     boot NAME in the background
#   wait_l2           wait for every guest start_l2 booted
#   wait_l2_console NAME PATTERN
#                     wait until NAME's console shows PATTERN; fails when
#                     NAME ended without it
# Each is bounded by VMTEST_L2_TIMEOUT seconds of level 1's clock.  From
# /etc/vmtest/env: VMTEST_L2_FIRST, the first level-2 guest's name,
# VMTEST_KVM_RUN_FAILED, what QEMU prints when KVM_RUN fails, and
# VMTEST_L2_BOOT_STALL, what to say of a level 2 lost before its script
# ran, killed at its bound or ended (the harness then tries level 1
# again).
# busybox's sh, which runs this, has local.
# shellcheck disable=SC3043

# Seconds since level 1 booted, from the clock: a loop's own ticks
# under TCG run slower than they say.
now() { local t _; read -r t _ </proc/uptime; echo "${t%.*}"; }

# Level 2's TSC ticks at level 1's rate (KVM offsets it, never scales
# it here).  A level 2 without kvmclock would have to calibrate it, and
# under TCG its PIT, HPET and PM timer reads are too slow for that: it
# marks the TSC unstable and keeps time with the PM timer, an exit per
# read.  Each /l2/NAME.sh passes this to level 2 as tsc_early_khz.
tsc_khz() {
	dmesg | sed -n "s/.*tsc: $1 \\([0-9]*\\)\\.\\([0-9]\\{3\\}\\) MHz.*/\\1\\2/p" |
		tail -n 1
}
VMTEST_TSC_KHZ=$(tsc_khz "Refined TSC clocksource calibration:")
[ -n "$VMTEST_TSC_KHZ" ] || VMTEST_TSC_KHZ=$(tsc_khz Detected)
if [ -z "$VMTEST_TSC_KHZ" ]; then
	echo "level1: no TSC frequency in dmesg" >&2
	exit 1
fi
export VMTEST_TSC_KHZ

run_l2() {
	n=${1:-$VMTEST_L2_FIRST}
	sh "/l2/$n.sh" 2> "/tmp/$n.stderr" &
	pid=$!
	echo "vmtest: level 2 $n started" >/dev/kmsg
	local end
	end=$(($(now) + VMTEST_L2_TIMEOUT))
	while kill -0 "$pid" 2>/dev/null; do
		# A guest KVM refuses to run is stopped, not ended, by QEMU.
		if grep -q "$VMTEST_KVM_RUN_FAILED" "/tmp/$n.stderr"; then
			echo "vmtest: level 2 $n: KVM_RUN failed"
			kill -9 "$pid" 2>/dev/null || true
			break
		fi
		if [ "$(now)" -ge "$end" ]; then
			echo "vmtest: level 2 $n: no end within $VMTEST_L2_TIMEOUT s"
			kill -9 "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	status=0
	wait "$pid" || status=$?
	# Killed at its bound or ended (-no-reboot ends a triple fault with
	# status 0) before its script ran, and not refused by KVM: lost in
	# its boot.
	grep -q "vmtest: running $n" "/tmp/$n.console" ||
		grep -q "$VMTEST_KVM_RUN_FAILED" "/tmp/$n.stderr" ||
		echo "vmtest: level 2 $n: $VMTEST_L2_BOOT_STALL"
	echo "$status" > "/tmp/$n.status"
	echo "vmtest: level 2 $n ended: $status" >/dev/kmsg
	[ "$status" -eq 0 ] || echo "vmtest: level 2 $n QEMU exited with $status"
	cat "/tmp/$n.stderr"
}
l2_pids=
start_l2() {
	run_l2 "$1" &
	l2_pids="$l2_pids $!"
}
wait_l2() {
	for p in $l2_pids; do wait "$p"; done
	l2_pids=
}
wait_l2_console() {
	local end
	end=$(($(now) + VMTEST_L2_TIMEOUT))
	until grep -q "$2" "/tmp/$1.console" 2>/dev/null; do
		if [ -e "/tmp/$1.status" ] || [ "$(now)" -ge "$end" ]; then
			grep -q "$2" "/tmp/$1.console" && return 0
			echo "vmtest: level 2 $1: no '$2' on its console"
			return 1
		fi
		sleep 0.2
	done
}

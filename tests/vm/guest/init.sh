#!/bin/busybox sh
# /init of every test guest (tests/vm/vmtest/guest.py puts it in the
# initramfs): load the in-tree modules, find the result port, run the
# test's script and send back, as frames (docs/testing.md), what it
# printed, the kernel log, the files it asked for and, last, its exit
# status; then power off.  /etc/vmtest/env sets
#   VMTEST_NAME   the guest's name
#   VMTEST_PORT   the name of the virtio-serial port results go to
#   VMTEST_HOLD   non-empty: a shell on the console after the test, for a
#                 developer (SIVSHM_VM_HOLD)
# and what the harness passes the test's script (exported to it).
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm /tmp /run
mount -t tmpfs tmp /tmp
mount -t tmpfs shm /dev/shm
set -a
# Written by the harness for each guest: nothing to follow here.
# shellcheck source=/dev/null
. /etc/vmtest/env
set +a
while read -r m opts; do
	# $opts is a list of param=value words, one argument each.
	# shellcheck disable=SC2086
	insmod "/lib/modules/$(uname -r)/$m" $opts ||
		echo "vmtest: insmod $m failed"
done < /etc/vmtest/kmods

port=
i=0
while [ -z "$port" ] && [ $i -lt 100 ]; do
	for d in /sys/class/virtio-ports/*; do
		[ "$(cat "$d/name" 2>/dev/null)" = "$VMTEST_PORT" ] &&
			port=/dev/${d##*/}
	done
	if [ -z "$port" ] || [ ! -c "$port" ]; then
		port=
		sleep 0.1
	fi
	i=$((i + 1))
done
if [ -z "$port" ]; then
	echo "vmtest: no result port $VMTEST_PORT"
	poweroff -f
fi

frame() {
	printf 'SVT1 %s %d\n' "$1" "$(wc -c < "$2")"
	cat "$2"
	printf '\n'
}

echo "vmtest: running $VMTEST_NAME"
cd /tmp || poweroff -f
{ sh -e /etc/vmtest/test.sh; echo $? > /tmp/vmtest.status; } 2>&1 |
	tee /tmp/vmtest.out
status=$(cat /tmp/vmtest.status)
echo "vmtest: $VMTEST_NAME exited with $status"
dmesg > /tmp/vmtest.dmesg
echo "$status" > /tmp/vmtest.exit
{
	frame out /tmp/vmtest.out
	frame dmesg /tmp/vmtest.dmesg
	while read -r f; do
		[ -f "$f" ] && frame "file:${f##*/}" "$f"
	done < /etc/vmtest/collect
	printf 'SVT1 exit %d\n%s\n' "${#status}" "$status"
} > "$port"
if [ -n "$VMTEST_HOLD" ]; then
	exec sh </dev/console >/dev/console 2>&1
fi
poweroff -f

#!/bin/sh
# Every kernel module source file passes the kernel's checkpatch.pl --strict,
# and every C file of the QEMU overlay passes QEMU's own checkpatch.pl.
# The kernel's comes from Debian's linux-source (scripts/kernel-checkpatch.sh
# extracts it once into the cache).
# QEMU's comes with our QEMU build (qemu-sivshm/build.sh copies it).
# One checkpatch.pl process at a time:
# runtests: cores 1
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
checkpatch=$("$top/scripts/kernel-checkpatch.sh") || exit $?

# guest-modules/backports is a build directory (make
# guest-modules-backports), its sources copies.
files=$(cd "$top" && find tests/vm/modules guest-modules kvm-pagetype \
	-path guest-modules/backports -prune -o \
	\( -name '*.c' -o -name '*.h' \) -print 2>/dev/null | grep -v '\.mod\.c$' | sort)
[ -n "$files" ] || { echo "no module sources found"; exit 1; }

# Out-of-tree modules build for more than one kernel (Debian 12's 6.1 and
# the 6.12 of bookworm-backports), so the few LINUX_VERSION_CODE blocks
# they need are not an in-tree mistake.
status=0
for f in $files; do
	if ! out=$(cd "$top" && perl "$checkpatch" --no-tree --strict \
		--quiet --show-types --ignore LINUX_VERSION_CODE -f "$f"); then
		echo "$out"
		status=1
	else
		echo "checkpatch clean: $f"
	fi
done

qemu_checkpatch=$(dirname "${SIVSHM_QEMU:-$top/qemu-sivshm/out/bin/x}")/../checkpatch.pl
if [ ! -e "$qemu_checkpatch" ]; then
	echo "no QEMU checkpatch.pl beside our QEMU (make qemu)"
	exit 1
fi
for f in $(cd "$top" && find qemu-sivshm/overlay \( -name '*.c' -o -name '*.h' \) | sort); do
	if ! out=$(cd "$top" && perl "$qemu_checkpatch" --no-tree -f "$f" 2>&1); then
		echo "$out"
		status=1
	elif echo "$out" | grep -q '^WARNING'; then
		echo "$out"
		status=1
	else
		echo "QEMU checkpatch clean: $f"
	fi
done
exit $status

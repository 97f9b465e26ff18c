#!/bin/sh
# The shell the VM harness runs in guests (tests/vm/guest/*.sh: /init, the
# level-1 functions, the pibooster helpers, the kvm_pagetype hosts'
# preamble) passes shellcheck.  busybox's sh runs it: POSIX sh, and what
# busybox adds beyond it is allowed only where a file says so, with its
# reason.
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v shellcheck >/dev/null; then
	echo "SKIP: no shellcheck (apt-get install shellcheck)"
	[ -n "${CI:-}" ] && exit 1
	exit 77
fi
files=$(cd "$top" && ls tests/vm/guest/*.sh)
[ -n "$files" ] || { echo "no guest shell files found"; exit 1; }
status=0
for f in $files; do
	if (cd "$top" && shellcheck -s sh "$f"); then
		echo "shellcheck clean: $f"
	else
		status=1
	fi
done
exit $status

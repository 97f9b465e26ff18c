#!/bin/sh
# Print the path of the kernel's checkpatch.pl, extracted once from
# Debian's linux-source tarball (the newest installed) with the two files
# it reads beside it, into $cache/checkpatch/<package version>.  One
# extraction at a time: the tests that use it may start together.
# Without a linux-source it says so on stderr, as a test's SKIP line, and
# exits 77 (1 under CI, which installs it).
set -eu

. "$(dirname "$0")/cache-dir.sh"

tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1)
if [ -z "$tarball" ]; then
	echo "SKIP: no /usr/src/linux-source-*.tar.xz (apt-get install linux-source-6.1)" >&2
	[ -n "${CI:-}" ] && exit 1
	exit 77
fi
pkg=$(basename "$tarball" .tar.xz)
version=$(dpkg-query -W -f '${Version}' "$pkg" 2>/dev/null || echo unknown)
dir=$cache/checkpatch/$version

mkdir -p "$cache/checkpatch"
exec 9>"$cache/checkpatch/.lock"
flock 9
if [ ! -e "$dir/.complete" ]; then
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -xJf "$tarball" -C "$dir" --strip-components=2 \
		"$pkg/scripts/checkpatch.pl" "$pkg/scripts/spelling.txt" \
		"$pkg/scripts/const_structs.checkpatch" >&2
	touch "$dir/.complete"
fi
echo "$dir/checkpatch.pl"

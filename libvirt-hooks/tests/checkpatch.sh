#!/bin/sh
# Every C file of libvirt-hooks/ passes the kernel's checkpatch.pl --strict,
# less the checks that are about the kernel's own API and have no meaning
# in user space: its u32/BIT()/__printf() (PREFER_KERNEL_TYPES, BIT_MACRO,
# PREFER_DEFINED_ATTRIBUTE_MACRO), its strscpy() in place of strcpy()
# (STRCPY, in 6.12's checkpatch.pl: glibc has no strscpy), libxml2's and inttypes.h's CamelCase
# names, and user-visible strings kept on one line (LONG_LINE_STRING).
# checkpatch.pl is the one scripts/kernel-checkpatch.sh extracts from
# Debian's linux-source into the cache.  Installed by make as
# tests/unit/test-libvirt-checkpatch.
# One checkpatch.pl process at a time:
# runtests: cores 1
set -eu

src='%SRCDIR%'
checkpatch=$("$src/scripts/kernel-checkpatch.sh") || exit $?

# Run in a directory of our own, as the root of an empty tree: in the git
# tree checkpatch.pl would leave its CamelCase cache file there.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/include"
status=0
for f in $(cd "$src" && find libvirt-hooks -name '*.[ch]' | sort); do
	if ! out=$(cd "$work" && perl "$checkpatch" --no-tree --root="$work" --strict --quiet \
		--show-types --ignore PREFER_KERNEL_TYPES,BIT_MACRO,CAMELCASE,PREFER_DEFINED_ATTRIBUTE_MACRO,LONG_LINE_STRING,STRCPY \
		-f "$src/$f"); then
		echo "$out"
		status=1
	elif [ -n "$out" ]; then
		echo "$out"
		status=1
	else
		echo "checkpatch clean: $f"
	fi
done
exit $status

#!/bin/sh
# The README's first steps on a fresh Debian release, in a root made with
# debootstrap: a clone of this tree's HEAD inside the root, then, chrooted
# there as root,
#	./scripts/setup.sh && ./autogen.sh && ./configure && make && make check-unit
# Usage (as root): root-check.sh SUITE   (trixie: Debian 13, bookworm: 12)
#
# The root as debootstrap (minbase) and setup.sh left it is cached
# (root.sh, keyed by setup.sh among the rest); each run works on an overlay
# of it and runs setup.sh again there, as the README says is safe.
set -eu

suite=${1:-}
[ -n "$suite" ] || { echo "usage: root-check.sh SUITE (trixie, bookworm)" >&2; exit 1; }
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/release/root.sh
. "$(dirname "$0")/root.sh"

start=$(date +%s)
root_setup "$suite"

root_overlay
# The clone: HEAD of this tree, as a fresh machine's user would have it.
mkdir -p "$root_scratch/upper/root"
git clone -q "$top" "$root_scratch/upper/root/sivshm-kvm" ||
	root_die "git clone of $top failed"
echo "root-check: in the $suite root: setup.sh, autogen, configure, make, make check-unit"
# shellcheck disable=SC2016 # expanded in the root
root_run "" /bin/sh -ec '
	cd /root/sivshm-kvm
	t0=$(date +%s)
	./scripts/setup.sh >/root/setup.log 2>&1 ||
		{ tail -n 20 /root/setup.log; echo "setup.sh failed"; exit 1; }
	echo "root-check: setup.sh again: $(($(date +%s) - t0)) s"
	./autogen.sh >/dev/null 2>&1
	./configure -q
	make -s -j"$(nproc)" >/root/make.log 2>&1 ||
		{ tail -n 30 /root/make.log; echo "make failed"; exit 1; }
	echo "root-check: and autogen, configure, make: $(($(date +%s) - t0)) s"
	make -s check-unit
	echo "root-check: and make check-unit: $(($(date +%s) - t0)) s"
' || root_die "the $suite root check failed ($(($(date +%s) - start)) s)"
echo "root-check: $suite passed in $(($(date +%s) - start)) s"

#!/bin/sh
# Debian roots made with debootstrap, cached, and commands run chrooted in
# them.  Sourced by the scripts beside it (as root); run by them, with
# --inside, as the first process of a root's namespaces.
#
# root_make SUITE NAME PREP [INPUT...]: the root $root_lower, made once:
# debootstrap (minbase) of SUITE, then PREP (a shell script, run chrooted
# in the fresh root as /tmp/prep.sh).  It is cached in
#	$SIVSHM_CACHE/root/<NAME>-<hash>/
# <hash> covering the suite, the mirror, debootstrap's version, this file,
# PREP and the INPUT files' names and contents (they are copied into the
# root's /tmp before PREP runs), not where they are: every clone of the
# tree finds the same root;
# a root is used only once its .complete marker exists, SIVSHM_REBUILD=1
# makes it again, and making one removes NAME's older ones.
#
# root_setup SUITE: root_make of the root the README's first steps make:
# debootstrap, then scripts/setup.sh (every package the project builds,
# tests and benchmarks with, libvirt's daemons among them).  One root per
# suite, shared by root-check.sh and root-run.sh.
#
# root_run BINDS CMD...: CMD chrooted in an overlay of $root_lower (see
# root_overlay), thrown away when the script ends; BINDS holds one
# directory a line (a path may hold spaces), each mounted at the same path
# inside.  The root's own $SIVSHM_CACHE (/var/cache/sivshm-kvm inside it)
# is <NAME>-cache/ beside it, apart from this machine's: what it holds is
# built against the root's libraries.  A bind of /var/cache/sivshm-kvm
# itself (this machine's cache) hides it.
#
# Every mount (the overlay, /proc, /sys, /dev, the binds) is made in a
# mount and PID namespace of the command's own, which the kernel undoes
# when the namespace's first process exits, whichever way it exits, killing
# every process left in the root with it.  That first process is a shell
# that waits for CMD: as the namespace's init it reaps the processes a
# daemon there leaves to it (libvirtd's QEMUs, which libvirt watches until
# they are gone).

if [ "${1:-}" = --inside ]; then
	set -eu
	shift
	root=$rc_root
	if [ -n "$rc_lower" ]; then
		mount -t overlay overlay \
			-o "lowerdir=$rc_lower,upperdir=$rc_scratch/upper,workdir=$rc_scratch/work" \
			"$root"
	fi
	mount -t proc proc "$root/proc"
	mount -t sysfs sysfs "$root/sys"
	mount --rbind /dev "$root/dev"
	mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
	mount -t tmpfs -o mode=0755 tmpfs "$root/run"
	mkdir -p "$root/var/cache/sivshm-kvm"
	mount --bind "$rc_cache" "$root/var/cache/sivshm-kvm"
	printf '%s\n' "$rc_binds" | while IFS= read -r d; do
		[ -n "$d" ] || continue
		mkdir -p "$root$d"
		mount --bind "$d" "$root$d"
	done
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	# Not exec: this shell stays the namespace's init (see the top).
	rc=0
	chroot "$root" /usr/bin/env -i \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 ${CI:+CI="$CI"} "$@" || rc=$?
	exit $rc
fi

root_die() { echo "$root_me: $*" >&2; exit 1; }

root_lib=$(cd "$(dirname "$0")" && pwd)/root.sh
root_me=$(basename "$0" .sh)
root_top=$(cd "$(dirname "$root_lib")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || root_die "needs root (debootstrap, chroot, mounts)"
command -v debootstrap >/dev/null ||
	root_die "debootstrap not found (apt-get install debootstrap)"
root_mirror=${SIVSHM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# shellcheck source=scripts/cache-dir.sh
. "$(dirname "$root_lib")/../../scripts/cache-dir.sh"
case $cache in /*) ;; *) cache=$(pwd)/$cache ;; esac
root_base=$cache/root

# in_ns CMD...: CMD in a mount and PID namespace of its own, which end when
# it exits or when this script ends, however it ends: unshare gets SIGKILL
# when this shell dies (--pdeathsig) and its child, the namespace's first
# process, when unshare dies (--kill-child).  unshare ignores SIGTERM and
# SIGINT; only SIGKILL ends it.  debootstrap runs in one too: it mounts
# /proc and /sys in the root it makes.
root_child=
in_ns() {
	setpriv --pdeathsig KILL \
		unshare --mount --pid --kill-child --propagation private "$@" &
	root_child=$!
	rc=0
	wait $root_child || rc=$?
	root_child=
	return $rc
}

# in_root ROOT LOWER BINDS CMD...: CMD chrooted in ROOT; with LOWER, ROOT
# is an overlay of LOWER over $root_scratch.
in_root() {
	rc_root=$1 rc_lower=$2 rc_binds=$3 rc_scratch=${root_scratch:-}
	rc_cache=$root_base/$root_name-cache
	export rc_root rc_lower rc_binds rc_scratch rc_cache
	shift 3
	in_ns /bin/sh "$root_lib" --inside "$@"
}

# A signal reaches this shell only between commands: each step runs in the
# background and the trap kills it, which ends its namespaces.
root_scratch=
root_cleanup() {
	if [ -n "$root_child" ]; then kill -KILL "$root_child" 2>/dev/null || true; fi
	wait 2>/dev/null || true
	if [ -n "$root_scratch" ]; then rm -rf "$root_scratch"; fi
}
trap root_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

root_make() {
	root_suite=$1 root_name=$2 root_prep=$3
	shift 3
	[ -e /usr/share/debootstrap/scripts/"$root_suite" ] ||
		root_die "this debootstrap does not know $root_suite"
	hash=$( {
		echo "$root_suite $root_mirror"
		dpkg-query -W -f '${Version}\n' debootstrap
		cat "$root_lib"
		echo "$root_prep"
		# By name: what the root holds, wherever the clone is.
		for f in "$@"; do basename "$f"; cat "$f"; done
	} | sha256sum | cut -c1-16)
	root_lower=$root_base/$root_name-$hash
	mkdir -p "$root_base" "$root_base/$root_name-cache"

	# One maker at a time; a second run waits and finds the first's root.
	exec 9>"$root_base/.lock"
	flock 9
	if [ -e "$root_lower/.complete" ] && [ -z "${SIVSHM_REBUILD:-}" ]; then
		echo "$root_me: cached root $root_lower"
	else
		t0=$(date +%s)
		echo "$root_me: debootstrap $root_suite into $root_lower"
		rm -rf "$root_lower"
		in_ns debootstrap --variant=minbase "$root_suite" "$root_lower" \
			"$root_mirror" >"$root_base/$root_name-debootstrap.log" 2>&1 ||
			{ tail -n 20 "$root_base/$root_name-debootstrap.log" >&2
			  root_die "debootstrap failed"; }
		echo "$root_me: debootstrap: $(($(date +%s) - t0)) s"
		for f in "$@"; do cp "$f" "$root_lower/tmp/"; done
		printf '%s\n' "$root_prep" >"$root_lower/tmp/prep.sh"
		in_root "$root_lower" "" "" /bin/sh -eu /tmp/prep.sh ||
			root_die "preparing the $root_suite root failed"
		(cd "$root_lower/tmp" && rm -f prep.sh && for f in "$@"; do
			rm -f "$(basename "$f")"; done)
		touch "$root_lower/.complete"
		for old in "$root_base/$root_name"-*; do
			case $old in
			"$root_lower" | "$root_base/$root_name-cache" | *.log) ;;
			*) rm -rf "$old" ;;
			esac
		done
		echo "$root_me: root ready: $(($(date +%s) - t0)) s"
	fi
	flock -u 9
	exec 9>&-
}

root_setup() {
	root_make "$1" "$1" '/bin/sh /tmp/setup.sh && apt-get clean' \
		"$root_top/scripts/setup.sh"
}

# root_overlay: a fresh overlay for root_run, its upper directory (what
# the run adds to the root) $root_scratch/upper.
root_overlay() {
	# A run's overlay is run.<its pid>; a killed run's is removed here.
	for d in "$root_base"/run.*; do
		[ -d "$d" ] || continue
		kill -0 "${d##*.}" 2>/dev/null || rm -rf "$d"
	done
	root_scratch=$root_base/run.$$
	rm -rf "$root_scratch"
	mkdir "$root_scratch" "$root_scratch/upper" "$root_scratch/work" \
		"$root_scratch/root"
}

root_run() {
	binds=$1
	shift
	[ -n "$root_scratch" ] || root_overlay
	in_root "$root_scratch/root" "$root_lower" "$binds" "$@"
}

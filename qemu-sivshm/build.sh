#!/bin/sh
# Build this project's QEMU from Debian's QEMU source ('apt-get source
# qemu', Debian's patches applied), with qemu-sivshm/overlay/ copied over
# it and the patches of that QEMU version applied in order, configured as a
# minimal x86_64-softmmu with only the devices of overlay/.../sivshm.mak.
#
# Two QEMU versions are built, each from the newest Debian source of its
# upstream release:
#   10.0  Debian 13's (deb-src trixie, which scripts/setup.sh adds)
#   7.2   Debian 12's (deb-src bookworm)
# One overlay serves both; what differs between their APIs is in
# overlay/hw/misc/overlay-compat.h, behind QEMU_VERSION_MAJOR.  The patches
# to QEMU's own files differ by tree: patches/<version>/ (patches/README).
#
# overlay/ is the one home of our QEMU code: both devices (sivshm,
# pagetype) and their specs.  The sivshm device compiles libsivshm's
# protocol (the handshake, the geometry, the region) and its remote-reducer
# backend (RDMA), copied into hw/misc/sivshm-lib/, with the list of them in
# libsivshm/meson.build: one implementation, shared with the library, and
# a change to those files is a change to the device.  The headers both devices share with the
# kernel modules and the guest go beside them (sivshm-lib/, pagetype-lib/).
#
# The result is cached outside the clone, under
#   $SIVSHM_CACHE/qemu/<hash>/bin
# where <hash> covers the source version, the overlay, that version's
# patches, the shared libsivshm sources and this script (which holds the
# configure line): the two versions are two cache entries, and a patch to
# one leaves the other's build cached.
# A directory is used only once its .complete marker exists, so an
# interrupted build is redone, never reused.  SIVSHM_REBUILD=1 ignores the
# cache.
#
# For development only, SIVSHM_QEMU_INCREMENTAL=1 keeps the configured
# source tree (keyed by source version, patches and this script) and
# rebuilds it with ninja after copying the overlay again; files removed
# from the overlay stay in that tree.  The default is always a clean build.
#
# Usage: build.sh VERSION [OUTLINK]
#   VERSION  10.0 or 7.2 (a directory of patches/)
#   OUTLINK  a symlink to point at the result
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$top/scripts/cache-dir.sh"
# Absolute: the lists below are used from $top.
case $cache in /*) ;; *) cache=$(pwd)/$cache ;; esac
jobs=${JOBS:-$(nproc)}

die() { echo "qemu-sivshm: $*" >&2; exit 1; }

# The releases built here: the directories of patches/.
releases=$(cd "$here/patches" && for d in */; do printf "%s " "${d%/}"; done)
release=${1:-}
outlink=${2:-}
case " $releases" in
*" $release "*) [ -n "$release" ] ;;
*) false ;;
esac || die "usage: build.sh VERSION [OUTLINK], VERSION one of: $releases"

command -v apt-get >/dev/null || die "apt-get not found (Debian 12 is required)"
# The newest source of that release: 1:7.2+dfsg-..., 1:10.0.13+ds-...
release_re=$(echo "$release" | sed 's/\./\\./g')
version=$(apt-cache showsrc qemu 2>/dev/null | sed -n 's/^Version: //p' |
	grep -E "^([0-9]+:)?${release_re}[.+~]" | sort -V | tail -n 1)
[ -n "$version" ] ||
	die "no source package for QEMU $release: run scripts/setup.sh (adds the deb-src lines)"

# The sivshm device compiles libsivshm's protocol folder and its
# remote-reducer backend (libsivshm/meson.build, the list QEMU has of them)
# with the two headers they need from outside libsivshm.  The lists are of
# paths relative to $top, split into words and globbed where used, in
# $top: the checkout's own path may hold spaces.  lib_flat goes to
# hw/misc/sivshm-lib/ flat, lib_rdma to its rdma/.
lib=libsivshm
lib_flat="$lib/protocol/*.c $lib/protocol/*.h $lib/meson.build
	$lib/sivshm.c $lib/mbox.c $lib/log.c $lib/remote.c
	$lib/handle.h $lib/log.h $lib/remote.h
	$lib/include/sivshm.h include/sivshm-regs.h"
lib_rdma="$lib/rdma/conn.c $lib/rdma/conn.h $lib/rdma/wire.c $lib/rdma/wire.h"

# The headers the pagetype device shares with the host module and the
# guest.
pagetype_shared="include/uapi/linux/kvm_pagetype.h include/pagetype-regs.h"

# Hash of this script, the QEMU version and the files in or under $@,
# named relative to $top (run there).
key() {
	{
		echo "$version"
		cat "$here/build.sh"
		for d in "$@"; do
			find "$d" -type f | LC_ALL=C sort |
				while read -r f; do echo "$f"; cat "$f"; done
		done
	} | sha256sum | cut -c1-16
}

# shellcheck disable=SC2086 # the lists split into words on purpose
hash=$(cd "$top" && key qemu-sivshm/overlay "qemu-sivshm/patches/$release" \
	$lib_flat $lib_rdma $pagetype_shared)
out=$cache/qemu/$hash

# Copy the overlay, the libsivshm sources and the shared headers over the
# tree at $1 (an absolute path).
overlay() {
	cp -R "$here/overlay/." "$1/"
	mkdir -p "$1/hw/misc/sivshm-lib/rdma" "$1/hw/misc/pagetype-lib"
	# shellcheck disable=SC2086 # the lists split into words on purpose
	(cd "$top" && cp $lib_flat "$1/hw/misc/sivshm-lib/" &&
		cp $lib_rdma "$1/hw/misc/sivshm-lib/rdma/" &&
		cp $pagetype_shared "$1/hw/misc/pagetype-lib/")
}

# One build at a time: a second make (another build tree, a second
# terminal) waits here and then finds the first one's result, instead of
# removing the work directory (or the incremental tree) under its compiler.
mkdir -p "$cache/qemu"
exec 9>"$cache/qemu/.lock"
flock 9

if [ -e "$out/.complete" ] && [ -z "${SIVSHM_REBUILD:-}" ]; then
	echo "qemu-sivshm: cached build $out (source $version)"
else
	echo "qemu-sivshm: building QEMU $version into $out"
	rm -rf "$out"
	if [ -n "${SIVSHM_QEMU_INCREMENTAL:-}" ]; then
		work=$cache/qemu/tree-$(cd "$top" && key "qemu-sivshm/patches/$release")
	else
		work=$cache/qemu/work-$hash
		rm -rf "$work"
	fi
	src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'qemu-*' \
		2>/dev/null | head -n 1)
	if [ -z "$src" ] || [ ! -e "$work/.configured" ]; then
		rm -rf "$work"
		mkdir -p "$work"
		(cd "$work" && apt-get source -q qemu="$version" >apt-source.log 2>&1) ||
			{ tail -n 20 "$work/apt-source.log" >&2; die "apt-get source qemu failed"; }
		src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'qemu-*' | head -n 1)
		[ -d "$src" ] || die "apt-get source left no qemu-* directory in $work"

		overlay "$src"
		for p in "$here/patches/$release"/*.patch; do
			[ -e "$p" ] || continue
			echo "qemu-sivshm: applying $(basename "$p")"
			patch -d "$src" -p1 --forward --quiet <"$p" ||
				die "patch $(basename "$p") does not apply to QEMU $version"
		done

		mkdir -p "$src/build"
		# Debian's firmware (seabios, qemu-system-data) is found without
		# -L: libvirt runs QEMU with no -L of its own.  PYTHON: QEMU
		# 10.0's configure looks for meson among Debian's python3's
		# packages (Debian's source carries no meson of its own), which
		# another python3 earlier on PATH does not see.  (7.2 takes no
		# --python without a meson of its own: the variable is honoured
		# by both.)
		(cd "$src/build" && PYTHON=/usr/bin/python3 ../configure \
			--prefix=/nonexistent \
			--firmwarepath=/usr/share/qemu:/usr/share/seabios \
			--target-list=x86_64-softmmu \
			--without-default-features \
			--without-default-devices \
			--with-devices-x86_64=sivshm \
			--enable-kvm --enable-tcg --enable-tools \
			--disable-docs --disable-install-blobs \
			--disable-werror) >"$work/configure.log" 2>&1 ||
			{ tail -n 30 "$work/configure.log" >&2; die "configure failed (log: $work/configure.log)"; }
		touch "$work/.configured"
	else
		echo "qemu-sivshm: incremental build in $src"
		overlay "$src"
	fi
	ninja -C "$src/build" -j "$jobs" qemu-system-x86_64 \
		contrib/ivshmem-server/ivshmem-server >"$work/build.log" 2>&1 ||
		{ grep -E 'error|Error' "$work/build.log" | head -n 30 >&2; die "build failed (log: $work/build.log)"; }

	mkdir -p "$out/bin"
	cp "$src/build/qemu-system-x86_64" \
		"$src/build/contrib/ivshmem-server/ivshmem-server" "$out/bin/"
	# QEMU's own style checker, for the overlay (tests/unit/checkpatch.sh).
	cp "$src/scripts/checkpatch.pl" "$out/"
	echo "$version" >"$out/VERSION"
	[ -n "${SIVSHM_QEMU_INCREMENTAL:-}" ] || rm -rf "$work"
	touch "$out/.complete"
	echo "qemu-sivshm: built $out"
fi

if [ -n "$outlink" ]; then
	mkdir -p "$(dirname "$outlink")"
	ln -sfn "$out" "$outlink"
fi

#!/bin/sh
# Build this project's QEMU: Debian 12's QEMU source ('apt-get source qemu',
# Debian's patches applied), with qemu-sivshm/overlay/ copied over it and
# qemu-sivshm/patches/*.patch applied in order, configured as a minimal
# x86_64-softmmu with only the devices of overlay/.../sivshm.mak.
#
# The result is cached outside the clone, under
#   $SIVSHM_CACHE/qemu/<hash>/{bin,share}
# where <hash> covers the source version, the overlay, the patches and this
# script (which holds the configure line).  A directory is used only once its
# .complete marker exists, so an interrupted build is redone, never reused.
# SIVSHM_REBUILD=1 ignores the cache.
#
# Usage: build.sh [OUTLINK]   (OUTLINK: a symlink to point at the result)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${SIVSHM_CACHE:-}" ]; then
	cache=$SIVSHM_CACHE
elif [ "$(id -u)" -eq 0 ]; then
	cache=/var/cache/sivshm-kvm
else
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/sivshm-kvm
fi
jobs=${JOBS:-$(nproc)}
outlink=${1:-}

die() { echo "qemu-sivshm: $*" >&2; exit 1; }

command -v apt-get >/dev/null || die "apt-get not found (Debian 12 is required)"
version=$(apt-cache showsrc qemu 2>/dev/null | sed -n 's/^Version: //p' |
	sort -V | tail -n 1)
[ -n "$version" ] ||
	die "no source package for qemu: run scripts/setup.sh (adds the deb-src line)"

hash=$( {
	echo "$version"
	cat "$0"
	cd "$here" && find overlay patches -type f | LC_ALL=C sort |
		while read -r f; do echo "$f"; cat "$f"; done
} | sha256sum | cut -c1-16)
out=$cache/qemu/$hash

if [ -e "$out/.complete" ] && [ -z "${SIVSHM_REBUILD:-}" ]; then
	echo "qemu-sivshm: cached build $out (source $version)"
else
	echo "qemu-sivshm: building QEMU $version into $out"
	work=$cache/qemu/work-$hash
	rm -rf "$work" "$out"
	mkdir -p "$work"
	(cd "$work" && apt-get source -q qemu="$version" >apt-source.log 2>&1) ||
		{ tail -n 20 "$work/apt-source.log" >&2; die "apt-get source qemu failed"; }
	src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'qemu-*' | head -n 1)
	[ -d "$src" ] || die "apt-get source left no qemu-* directory in $work"

	cp -R "$here/overlay/." "$src/"
	for p in "$here"/patches/*.patch; do
		[ -e "$p" ] || continue
		echo "qemu-sivshm: applying $(basename "$p")"
		patch -d "$src" -p1 --forward --quiet <"$p" ||
			die "patch $(basename "$p") does not apply to QEMU $version"
	done

	mkdir -p "$src/build"
	(cd "$src/build" && ../configure \
		--prefix="$out" \
		--target-list=x86_64-softmmu \
		--without-default-features \
		--without-default-devices \
		--with-devices-x86_64=sivshm \
		--enable-kvm --enable-tcg --enable-tools \
		--disable-docs --disable-install-blobs \
		--disable-werror) >"$work/configure.log" 2>&1 ||
		{ tail -n 30 "$work/configure.log" >&2; die "configure failed (log: $work/configure.log)"; }
	ninja -C "$src/build" -j "$jobs" qemu-system-x86_64 \
		contrib/ivshmem-server/ivshmem-server >"$work/build.log" 2>&1 ||
		{ grep -E 'error|Error' "$work/build.log" | head -n 30 >&2; die "build failed (log: $work/build.log)"; }

	mkdir -p "$out/bin"
	cp "$src/build/qemu-system-x86_64" \
		"$src/build/contrib/ivshmem-server/ivshmem-server" "$out/bin/"
	echo "$version" >"$out/VERSION"
	rm -rf "$work"
	touch "$out/.complete"
	echo "qemu-sivshm: built $out"
fi

if [ -n "$outlink" ]; then
	ln -sfn "$out" "$outlink"
fi

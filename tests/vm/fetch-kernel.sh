#!/bin/sh
# Fetch the Debian 12 kernel that linux-image-amd64 depends on right now,
# with its headers, into a cache; never install it on this machine.  With
# SUITE (bookworm-backports: the 6.12 kernel), that suite's linux-image-amd64
# instead of the default candidate.
#
#   $SIVSHM_CACHE/kernel/<key>/root/      dpkg -x of image, headers, kbuild
#   $SIVSHM_CACHE/kernel/<key>/KVER       the kernel release (uname -r)
#   $SIVSHM_CACHE/kernel/<key>/KDIR       the headers directory for kbuild
#
# <key> is a hash of the four package versions and this script; a directory
# counts only once its .complete marker exists.  SIVSHM_REFETCH=1 ignores the
# cache.  Usage: fetch-kernel.sh [OUTLINK [SUITE]]
set -eu

. "$(dirname "$0")/../../scripts/cache-dir.sh"
outlink=${1:-}
suite=${2:-}

die() { echo "fetch-kernel: $*" >&2; exit 1; }

dep() {
	apt-cache depends "$1" 2>/dev/null |
		sed -n "s/^ *Depends: \($2\)\$/\1/p" | head -n 1
}

meta=linux-image-amd64
if [ -n "$suite" ]; then
	version=$(apt-cache madison linux-image-amd64 |
		awk -v s="$suite/" 'index($0, s) { print $3; exit }')
	[ -n "$version" ] || die "no linux-image-amd64 in $suite (scripts/setup.sh adds it)"
	meta=linux-image-amd64=$version
fi
image=$(dep "$meta" 'linux-image-[0-9].*')
[ -n "$image" ] || die "cannot resolve $meta (run apt-get update, or scripts/setup.sh)"
kver=${image#linux-image-}
headers=linux-headers-$kver
common=$(dep "$headers" 'linux-headers-.*-common')
kbuild=$(dep "$headers" 'linux-kbuild-.*')
[ -n "$common" ] && [ -n "$kbuild" ] || die "cannot resolve the dependencies of $headers"

pkgs="$image $headers $common $kbuild"
key=$( {
	for p in $pkgs; do
		echo "$p $(apt-cache policy "$p" | sed -n 's/^ *Candidate: //p')"
	done
	cat "$0"
} | sha256sum | cut -c1-16)
out=$cache/kernel/$kver-$key

if [ -e "$out/.complete" ] && [ -z "${SIVSHM_REFETCH:-}" ]; then
	echo "fetch-kernel: cached $kver in $out"
else
	echo "fetch-kernel: fetching $pkgs"
	rm -rf "$out"
	mkdir -p "$out/debs"
	# apt's _apt user cannot write to a root-owned cache; download as root.
	(cd "$out/debs" && apt-get download -q -o APT::Sandbox::User=root $pkgs) ||
		die "apt-get download failed"
	for deb in "$out"/debs/*.deb; do
		dpkg -x "$deb" "$out/root" || die "dpkg -x $deb failed"
	done
	kdir=$out/root/usr/src/$headers
	[ -f "$kdir/Makefile" ] || die "$headers has no Makefile"
	# The arch headers include the common ones by absolute path.
	sed -i "s|^include /usr/src/|include $out/root/usr/src/|" "$kdir/Makefile"
	[ -f "$out/root/boot/vmlinuz-$kver" ] || die "$image has no vmlinuz"
	# The package's postinst would run depmod; the harness needs modules.dep.
	depmod -b "$out/root" -F "$out/root/boot/System.map-$kver" "$kver" ||
		die "depmod failed"
	echo "$kver" >"$out/KVER"
	echo "$kdir" >"$out/KDIR"
	rm -rf "$out/debs"
	touch "$out/.complete"
	echo "fetch-kernel: $kver in $out"
fi

if [ -n "$outlink" ]; then
	mkdir -p "$(dirname "$outlink")"
	ln -sfn "$out" "$outlink"
fi

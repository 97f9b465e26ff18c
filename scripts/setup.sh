#!/bin/sh
# Install, as root on Debian 12, every package the project needs to build,
# test and benchmark.  Safe to run again: apt-get only adds what is missing
# and the deb-src entry is written once.
set -eu

if [ "$(id -u)" -ne 0 ]; then
	echo "setup.sh: must run as root (it calls apt-get)" >&2
	exit 1
fi

. /etc/os-release
if [ "${VERSION_CODENAME:-}" != bookworm ]; then
	echo "setup.sh: written for Debian 12 (bookworm), this is ${PRETTY_NAME:-unknown}" >&2
	exit 1
fi

# 'apt-get source qemu' needs a deb-src entry for bookworm.  Debian 12 ships
# either a deb822 debian.sources or a one-line sources.list; add our own file
# rather than edit either.
srcfile=/etc/apt/sources.list.d/sivshm-kvm-src.sources
if ! apt-get indextargets --format '$(TARGET_OF) $(CODENAME)' 2>/dev/null |
	grep -q '^deb-src bookworm$'; then
	mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources \
		2>/dev/null | head -n 1)
	[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" { print $2; exit }' \
		/etc/apt/sources.list 2>/dev/null)
	[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
	cat > "$srcfile" <<SRC
Types: deb-src
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

# The 6.12 kernel the modules must also build and load on (Debian 12 users
# get it from bookworm-backports; Debian 13 ships it).  Packages from it are
# pinned low by apt itself: nothing is upgraded to it.
bpofile=/etc/apt/sources.list.d/sivshm-kvm-backports.sources
if ! apt-get indextargets --format '$(TARGET_OF) $(CODENAME)' 2>/dev/null |
	grep -q '^deb bookworm-backports$'; then
	mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources \
		2>/dev/null | head -n 1)
	[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" { print $2; exit }' \
		/etc/apt/sources.list 2>/dev/null)
	[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
	cat > "$bpofile" <<BPO
Types: deb
URIs: $mirror
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
BPO
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -q

# build: the autotools top level, user space and the kernel modules
pkgs="build-essential autoconf automake libtool pkg-config dpkg-dev git
	bc libelf-dev xz-utils zstd"
# our QEMU (a minimal x86_64-softmmu build from Debian's source)
pkgs="$pkgs ninja-build meson python3 libglib2.0-dev libpixman-1-dev
	zlib1g-dev libfdt-dev"
# unit tests: the fuzz harnesses (libFuzzer) and sanitizer builds
pkgs="$pkgs clang libclang-rt-14-dev"
# the VM test harness: initramfs, guest firmware, in-tree module handling;
# linux-source for checkpatch.pl
pkgs="$pkgs busybox-static cpio kmod seabios qemu-system-data ipxe-qemu dkms openssl
	linux-source-6.1"
# modules for the 6.12 kernel: its kbuild adds BTF to every module (pahole)
pkgs="$pkgs dwarves"

# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $pkgs

#!/bin/sh
# Install, as root on Debian 12 (bookworm) or Debian 13 (trixie), every
# package the project needs to build, test and benchmark.  Safe to run
# again: apt-get only adds what is missing and each apt entry is written
# once.
set -eu

if [ "$(id -u)" -ne 0 ]; then
	echo "setup.sh: must run as root (it calls apt-get)" >&2
	exit 1
fi

. /etc/os-release
release=${VERSION_CODENAME:-}
case $release in
bookworm | trixie) ;;
*)
	echo "setup.sh: written for Debian 12 (bookworm) and 13 (trixie), this is ${PRETTY_NAME:-unknown}" >&2
	exit 1
	;;
esac

# The apt entries this project needs beside the release's defaults.  Both
# releases ship either a deb822 debian.sources or a one-line sources.list;
# add our own files rather than edit either, on the mirror those use.
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources \
	2>/dev/null | head -n 1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" { print $2; exit }' \
	/etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian

# add_suites TYPE "SUITES" FILE: unless apt knows TYPE for the first suite
add_suites() {
	apt-get indextargets --format '$(TARGET_OF) $(CODENAME)' 2>/dev/null |
		grep -q "^$1 ${2%% *}\$" && return 0
	cat > "$3" <<ENTRY
Types: $1
URIs: $mirror
Suites: $2
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
ENTRY
}

# 'apt-get source qemu' needs a deb-src entry for the release: our QEMU is
# built from its QEMU source (qemu-sivshm/build.sh).  Debian 12 gets
# trixie's as well, for the second QEMU it can build (10.0; sources only,
# nothing of trixie is installed).
add_suites deb-src "$release $release-updates" \
	/etc/apt/sources.list.d/sivshm-kvm-src.sources
if [ "$release" = bookworm ]; then
	add_suites deb-src "trixie trixie-updates" \
		/etc/apt/sources.list.d/sivshm-kvm-src-trixie.sources
fi
# On Debian 12, bookworm-backports: the 6.12 kernel the modules must also
# build and load on (Debian 13 ships it), and the meson QEMU 10.0 needs
# (1.5 or later; bookworm has 1.0, trixie 1.7).  apt pins that suite low by
# itself: nothing is upgraded to it but what is named below.
meson=meson
if [ "$release" = bookworm ]; then
	add_suites deb bookworm-backports \
		/etc/apt/sources.list.d/sivshm-kvm-backports.sources
	meson=meson/bookworm-backports
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -q

# The package names are the same on both releases: the unversioned ones
# (clang, libclang-rt-dev, linux-source) follow each release's version.
# build: the autotools top level, user space and the kernel modules
pkgs="build-essential autoconf automake libtool pkg-config dpkg-dev git
	bc libelf-dev xz-utils zstd"
# our QEMU (a minimal x86_64-softmmu build from Debian's source).  QEMU
# 10.0's configure runs meson in a venv of python3 (python3-venv: its
# ensurepip), and wants meson 1.5 or later (see $meson above); QEMU 7.2
# builds with that one too.
pkgs="$pkgs ninja-build $meson python3 python3-venv
	libglib2.0-dev libpixman-1-dev zlib1g-dev libfdt-dev"
# unit tests: the fuzz harnesses (libFuzzer) and sanitizer builds
pkgs="$pkgs clang libclang-rt-dev"
# the VM test harness: initramfs, guest firmware, in-tree module handling;
# linux-source (6.1 on Debian 12, 6.12 on 13) for checkpatch.pl; and the
# checker of the shell the guests run, shellcheck
pkgs="$pkgs busybox-static cpio kmod seabios qemu-system-data ipxe-qemu dkms openssl
	linux-source shellcheck"
# modules for the 6.12 kernel: its kbuild adds BTF to every module (pahole)
pkgs="$pkgs dwarves"
# the Debian 13 root that libvirt-domains-11 and make check-debian13 run in
pkgs="$pkgs debootstrap"
# Remote reducers: rdma-core (verbs, RDMA CM, the Soft-RoCE provider) and
# libsodium, shared (libsivshm, and our QEMU, whose sivshm device joins a
# mapper over RDMA) and static: the guests' programs are static
# (libibverbs-dev has librxe-rdmav34.a; libnl, which libibverbs asks
# netlink with, is named for its static libraries)
pkgs="$pkgs libibverbs-dev librdmacm-dev ibverbs-providers libsodium-dev
	libnl-3-dev libnl-route-3-dev"
# make bench's plot of pibooster's flush rate
pkgs="$pkgs gnuplot-nox"
# the libvirt hook and generator: libxml2; virt-xml-validate (and the
# xmllint it runs) for the generator's test
pkgs="$pkgs libxml2-dev libvirt-clients libxml2-utils"
# the libvirt-domains test: libvirtd and virtlogd, which it starts itself.
# Name -sysv: without it apt picks libvirt-daemon-system-systemd, which
# pulls in systemd-sysv and systemd-container.
pkgs="$pkgs libvirt-daemon-system libvirt-daemon-system-sysv
	libvirt-daemon-driver-qemu"

# Installing a daemon starts it unless policy-rc.d says no (this image's
# does).  Say no for this install where nothing does: the tests start the
# daemons they need themselves, and a libvirtd left running would be
# somebody else's to them.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 0755 /usr/sbin/policy-rc.d
	trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $pkgs

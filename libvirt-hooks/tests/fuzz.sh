#!/bin/sh
# Fuzz the libvirt hook's parsers (domain XML with its metadata and -device
# string, and qemu.conf) for a bounded time (SIVSHM_FUZZ_SECONDS, default
# 20), from a seed corpus of the checked-in example domains and a qemu.conf;
# any crash, leak, assertion or sanitizer report fails.  The corpus and
# crash inputs are kept in the log directory.  Installed by make as
# tests/unit/test-libvirt-fuzz.
# One libFuzzer process (no -jobs, no -fork):
# runtests: cores 1
set -eu

build=${SIVSHM_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
src='%SRCDIR%'
secs=${SIVSHM_FUZZ_SECONDS:-20}
out=${SIVSHM_LOGDIR:-$(mktemp -d)}
fuzzer=$build/libvirt-hooks/tests/fuzz-meta
if [ ! -x "$fuzzer" ]; then
	echo "SKIP: $fuzzer not built (make libvirt-hooks/tests/fuzz-meta; needs clang)"
	[ -n "${CI:-}" ] && exit 1
	exit 77
fi
mkdir -p "$out/corpus"
# The first byte chooses the parser: 0 the domain XML, 1 qemu.conf.  The
# examples get the <uuid> libvirt would add, so that the hook accepts them.
for f in "$src"/libvirt-hooks/examples/*.xml; do
	{ printf '\000'; sed 's|</name>|&<uuid>0f0e0d0c-0b0a-0908-0706-050403020100</uuid>|' "$f"; } \
		>"$out/corpus/$(basename "$f")"
done
{ printf '\001'; cat <<'CONF'
# qemu.conf
user = "libvirt-qemu"   # a name
group = "+64055"
namespaces = [ "mount" ]
cgroup_controllers = [ "cpu", # comment
    "memory" ]
security_driver = "none"; dynamic_ownership = 1
CONF
} >"$out/corpus/qemu.conf"
exec sh "$src/tests/fuzz/run-fuzzer.sh" fuzz-meta "$fuzzer" "$out" "$secs" \
	-max_len=8192 -dict="$src/libvirt-hooks/tests/fuzz-meta.dict"

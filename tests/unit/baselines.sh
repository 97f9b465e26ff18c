#!/bin/sh
# The baselines, through sivshm-run: charcount over TCP loopback, and over
# plain ivshmem (QEMU's ivshmem-server) in polling and interrupt mode.  Each
# must match its own direct count, and its total must equal sivshm
# charcount's for the same input (same --size, --random and --seed, so the
# same chunks).  The ivshmem runs need ivshmem-server: $SIVSHM_IVSHMEM_SERVER,
# our QEMU build's, or one on $PATH; without it they are skipped.
set -eu

builddir=${SIVSHM_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=$builddir/examples
for p in sivshm-run charcount-tcp-mapper charcount-ivshmem-mapper; do
	[ -x "$bin/$p" ] || { echo "SKIP: $p not built"; [ -n "${CI:-}" ] && exit 1; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

server=${SIVSHM_IVSHMEM_SERVER:-}
if [ -z "$server" ] && [ -x "$builddir/qemu-sivshm/out/bin/ivshmem-server" ]; then
	server=$builddir/qemu-sivshm/out/bin/ivshmem-server
fi
if [ -z "$server" ]; then
	server=$(command -v ivshmem-server || true)
fi

size=64M
random=128M
seed=5

# run NAME ARGS...: one job, its result line in $tmp/NAME.result.
run() {
	name=$1
	shift
	rc=0
	"$bin/sivshm-run" "$@" --reducers 3 --size $size --random $random \
		--seed $seed >"$tmp/$name.out" 2>&1 || rc=$?
	[ $rc -eq 0 ] ||
		{ cat "$tmp/$name.out"; echo "FAIL: $name exited $rc"; exit 1; }
	grep -q ': match)' "$tmp/$name.out" ||
		{ cat "$tmp/$name.out"; echo "FAIL: $name: no match"; exit 1; }
	grep '^result ' "$tmp/$name.out" >"$tmp/$name.result" ||
		{ cat "$tmp/$name.out"; echo "FAIL: $name: no result line"; exit 1; }
}

count() {
	sed -n 's/.* count=\([0-9]*\) .*/\1/p' "$tmp/$1.result"
}

# check NAME MODE: the mode it reports, and sivshm's count.
check() {
	grep -q " mode=$2 " "$tmp/$1.result" ||
		{ cat "$tmp/$1.result"; echo "FAIL: $1: not mode=$2"; exit 1; }
	[ "$(count "$1")" = "$want" ] ||
		{ echo "FAIL: $1 counted $(count "$1"), sivshm $want"; exit 1; }
	echo "$1: $(grep occurs "$tmp/$1.out")"
}

run sivshm charcount --mode poll
want=$(count sivshm)
[ -n "$want" ] || { cat "$tmp/sivshm.out"; echo "FAIL: no sivshm count"; exit 1; }
echo "sivshm: $(grep occurs "$tmp/sivshm.out")"

run tcp charcount-tcp
check tcp tcp

if [ -z "$server" ] || [ ! -x "$server" ]; then
	echo "SKIP: ivshmem-server not found (the TCP baseline passed)"
	[ -n "${CI:-}" ] && exit 1
	exit 77
fi
export SIVSHM_IVSHMEM_SERVER="$server"
for mode in poll irq; do
	run ivshmem-$mode charcount-ivshmem --mode $mode
	check ivshmem-$mode $mode
done

#!/bin/sh
# Run each libFuzzer harness for a bounded time (SIVSHM_FUZZ_SECONDS, default
# 20) from a seed corpus of valid messages; any crash, assertion or sanitizer
# report fails.  The corpus and crash inputs are kept in the log directory.
set -eu

build=${SIVSHM_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
secs=${SIVSHM_FUZZ_SECONDS:-20}
out=${SIVSHM_LOGDIR:-$(mktemp -d)}
for f in fuzz-proto fuzz-rdma-wire; do
	if [ ! -x "$build/tests/fuzz/$f" ]; then
		echo "SKIP: $f not built (make tests/fuzz/$f; needs clang)"
		[ -n "${CI:-}" ] && exit 1
		exit 77
	fi
done
mkdir -p "$out/proto/corpus" "$out/rdma-wire/corpus"
"$build/tests/fuzz/seed-proto" "$out/proto/corpus"
"$build/tests/fuzz/seed-rdma-wire" "$out/rdma-wire/corpus"
run=$(dirname "$0")/../fuzz/run-fuzzer.sh
# The two at once, a core each; the test fails if either does.
sh "$run" fuzz-proto "$build/tests/fuzz/fuzz-proto" "$out/proto" "$secs" \
	-max_len=300 >"$out/proto.out" 2>&1 &
proto=$!
rc=0
sh "$run" fuzz-rdma-wire "$build/tests/fuzz/fuzz-rdma-wire" \
	"$out/rdma-wire" "$secs" -max_len=200 || rc=1
wait $proto || rc=1
cat "$out/proto.out"
exit $rc

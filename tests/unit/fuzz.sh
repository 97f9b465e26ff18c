#!/bin/sh
# Run each libFuzzer harness for a bounded time (SIVSHM_FUZZ_SECONDS, default
# 20) from a seed corpus of valid messages; any crash, assertion or sanitizer
# report fails.  The corpus and crash inputs are kept in the log directory.
set -eu

build=${SIVSHM_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
secs=${SIVSHM_FUZZ_SECONDS:-20}
out=${SIVSHM_LOGDIR:-$(mktemp -d)}
fuzzer=$build/tests/fuzz/fuzz-proto
if [ ! -x "$fuzzer" ]; then
	echo "SKIP: $fuzzer not built (make tests/fuzz/fuzz-proto; needs clang)"
	[ -n "${CI:-}" ] && exit 1
	exit 77
fi
mkdir -p "$out/corpus" "$out/crashes"
"$build/tests/fuzz/seed-proto" "$out/corpus"
"$fuzzer" -max_total_time="$secs" -max_len=300 -timeout=5 \
	-artifact_prefix="$out/crashes/" "$out/corpus" >"$out/fuzz.log" 2>&1 || {
	tail -n 40 "$out/fuzz.log"
	echo "FAIL: fuzz-proto found a crash (inputs in $out/crashes)"
	exit 1
}
grep -E '^#[0-9]+.*DONE' "$out/fuzz.log" || tail -n 2 "$out/fuzz.log"
echo "fuzz-proto: no crash in $secs s"

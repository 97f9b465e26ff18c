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
mkdir -p "$out/corpus"
"$build/tests/fuzz/seed-proto" "$out/corpus"
exec sh "$(dirname "$0")/../fuzz/run-fuzzer.sh" fuzz-proto "$fuzzer" "$out" \
	"$secs" -max_len=300

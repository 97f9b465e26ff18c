#!/bin/sh
# Run one libFuzzer harness for a bounded time from a corpus; any crash,
# leak, assertion or sanitizer report fails.
#
#   run-fuzzer.sh NAME FUZZER OUTDIR SECONDS [libFuzzer options...]
#
# OUTDIR/corpus holds the seeds (the caller's); OUTDIR/crashes gets the
# inputs that crashed and OUTDIR/fuzz.log the fuzzer's output.
set -eu

name=$1 fuzzer=$2 out=$3 secs=$4
shift 4
mkdir -p "$out/crashes"
"$fuzzer" -max_total_time="$secs" -timeout=5 "$@" \
	-artifact_prefix="$out/crashes/" "$out/corpus" >"$out/fuzz.log" 2>&1 || {
	tail -n 40 "$out/fuzz.log"
	echo "FAIL: $name found a crash (inputs in $out/crashes)"
	exit 1
}
grep -E '^#[0-9]+.*DONE' "$out/fuzz.log" || tail -n 2 "$out/fuzz.log"
echo "$name: no crash in $secs s"

#!/bin/sh
# charcount on host processes, through sivshm-run, in polling and interrupt
# mode: the reducers' total must match the mapper's direct count.  Then the
# restart case: reducer 2 is killed with SIGKILL in the middle of a job and
# started again with the same id; the job must still end with the correct
# total (the restarted reducer answers the request pending in its slot).
set -eu

bin=${SIVSHM_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/examples
[ -x "$bin/sivshm-run" ] || { echo "SKIP: examples not built"; [ -n "${CI:-}" ] && exit 1; exit 77; }
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT

for mode in poll irq; do
	for n in 1 3 7; do
		"$bin/sivshm-run" charcount --reducers $n --size 32M \
			--random 96M --seed $n --mode $mode >"$tmp/out" 2>&1 ||
			{ cat "$tmp/out"; echo "FAIL: $mode, $n reducers"; exit 1; }
		grep -q ': match)' "$tmp/out" ||
			{ cat "$tmp/out"; echo "FAIL: no match"; exit 1; }
		echo "$mode mode, $n reducers: $(grep occurs "$tmp/out")"
	done
done

# Restart: reducer 2 is killed as soon as the mapper says the job has
# started.  Some 10000 rounds take seconds on any machine this runs on, so
# the kill lands mid-job however fast the host is (a fixed sleep did not:
# a fast host finished the whole job first).
sock=$tmp/restart.sock
"$bin/charcount-mapper" --socket "$sock" --reducers 3 --size 1M \
	--random 8G --mode irq --timeout 20000 >"$tmp/mapper" 2>&1 &
mapper=$!
for j in 1 2 3; do
	"$bin/charcount-reducer" --socket "$sock" --id $j --mode irq \
		>"$tmp/r$j.out" 2>&1 &
	eval "r$j=\$!"
done
waited=0
until grep -q 'reducers ready' "$tmp/mapper"; do
	kill -0 $mapper 2>/dev/null ||
		{ cat "$tmp/mapper"; echo "FAIL: the mapper ended before the job started"; exit 1; }
	[ $waited -lt 300 ] ||
		{ cat "$tmp/mapper"; echo "FAIL: the job did not start in 30 s"; exit 1; }
	sleep 0.1
	waited=$((waited + 1))
done
# shellcheck disable=SC2154
kill -9 "$r2" 2>/dev/null ||
	{ cat "$tmp/mapper" "$tmp/r2.out"; echo "FAIL: reducer 2 ended before the kill"; exit 1; }
wait "$r2" 2>/dev/null || true
sleep 0.5
kill -0 $mapper || { cat "$tmp/mapper"; echo "FAIL: the mapper died with reducer 2"; exit 1; }
"$bin/charcount-reducer" --socket "$sock" --id 2 --mode irq >"$tmp/r2b" 2>&1 &
wait $mapper || { cat "$tmp/mapper" "$tmp/r2b"; echo "FAIL: job failed after the restart"; exit 1; }
grep -q ': match)' "$tmp/mapper" || { cat "$tmp/mapper"; exit 1; }
echo "restart: reducer 2 killed mid-job and restarted; $(grep occurs "$tmp/mapper")"
wait

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

# Restart: many rounds, so the kill lands mid-job.
sock=$tmp/restart.sock
"$bin/charcount-mapper" --socket "$sock" --reducers 3 --size 1M \
	--random 2G --mode irq --timeout 20000 >"$tmp/mapper" 2>&1 &
mapper=$!
for j in 1 2 3; do
	"$bin/charcount-reducer" --socket "$sock" --id $j --mode irq 2>"$tmp/r$j" &
	eval "r$j=\$!"
done
sleep 1
kill -0 $mapper || { cat "$tmp/mapper"; echo "FAIL: the job ended before the kill"; exit 1; }
# shellcheck disable=SC2154
kill -9 "$r2"
wait "$r2" 2>/dev/null || true
sleep 0.5
kill -0 $mapper || { cat "$tmp/mapper"; echo "FAIL: the mapper died with reducer 2"; exit 1; }
"$bin/charcount-reducer" --socket "$sock" --id 2 --mode irq 2>"$tmp/r2b" &
wait $mapper || { cat "$tmp/mapper" "$tmp/r2b"; echo "FAIL: job failed after the restart"; exit 1; }
grep -q ': match)' "$tmp/mapper" || { cat "$tmp/mapper"; exit 1; }
echo "restart: reducer 2 killed mid-job and restarted; $(grep occurs "$tmp/mapper")"
wait

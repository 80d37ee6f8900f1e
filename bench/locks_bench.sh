#!/usr/bin/env bash
# bench/locks_bench.sh — cost of the lock profiler, measured side by side in
# one run (ratios, never pass/fail):
#  1. added ns per uncontended lock+unlock pair (thread CPU time), against
#     the same program without sonde: --locks (aggregates) and --locks=events (event stream);
#     and the events lost at that rate;
#     --locks -p (attached to the waiting program: the wrappers reached through
#     the GOT), when ptrace is allowed, and the time sonde takes to attach;
#  2. throughput of a contended program (4 threads, one mutex) with --locks.
# Each configuration runs REPS times; the best run is kept (noise only adds).
# Usage: BUILD=build bash bench/locks_bench.sh [PAIRS] [REPS]
set -u
BUILD=$(cd "${BUILD:-build}" && pwd)
SONDE="$BUILD/bin/sonde"
root=$(cd "$(dirname "$0")/.." && pwd)
PAIRS=${1:-20000000}
REPS=${2:-5}
T=$(mktemp -d /tmp/sonde-lockbench.XXXXXX)
trap 'rm -rf "$T"' EXIT
cc -O2 -pthread "$root/bench/locks_uncontended.c" -o "$T/unc" || exit 1
cc -O2 -pthread "$root/bench/locks_contended.c" -o "$T/con" || exit 1
cd "$T"
best() { # field, command... : best (min for ns, max for rates) of REPS runs
	local f=$1; shift
	local vals=()
	for _ in $(seq "$REPS"); do
		vals+=("$("$@" 2>/dev/null | sed -n "s/.*$f=\([0-9.]*\).*/\1/p")")
	done
	printf '%s\n' "${vals[@]}" | sort -g | { if [ "$f" = ns_per_pair ] || [ "$f" = attach_ms ]; then head -1; else tail -1; fi; }
}
echo "machine: $(nproc) CPUs, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "uncontended lock+unlock pairs: $PAIRS per run, best of $REPS"
p=$(best ns_per_pair ./unc "$PAIRS")
a=$(best ns_per_pair "$SONDE" record --locks -o rec.a -- ./unc "$PAIRS")
e=$(best ns_per_pair "$SONDE" record --locks=events -o rec.e -- ./unc "$PAIRS")
w=$(best pairs_per_s "$SONDE" record --locks=events -o rec.e -- ./unc "$PAIRS")
lost=$("$SONDE" locks -i rec.e --format=json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["lost_events"], d["events"]["lock_events"])')
# attached: the program waits on a FIFO, `sonde record --locks -p` attaches,
# the program runs; its end ends the recording.  Prints the program's line
# and attach_ms= (sonde started -> "recording process" seen, polled every 2 ms).
attached() {
	rm -f go att.err
	mkfifo go
	./unc "$PAIRS" go > att.out &
	local up=$! t0 t1
	t0=$(date +%s%N)
	"$SONDE" record --locks -p $up -o rec.p 2> att.err &
	local sp=$!
	until grep -q "recording process" att.err 2>/dev/null; do
		kill -0 $sp 2>/dev/null || break
		sleep 0.002
	done
	t1=$(date +%s%N)
	echo go > go
	wait $up
	wait $sp
	echo "$(cat att.out) attach_ms=$(( (t1 - t0) / 1000000 ))"
}
if [ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" = 0 ]; then
	pa=$(best ns_per_pair attached)
	am=$(best attach_ms attached | sed 's/^$/?/')
else
	pa=""
fi
awk -v p="$p" -v a="$a" -v e="$e" -v pa="$pa" 'BEGIN {
	printf "  plain                 %7.2f ns/pair\n", p
	printf "  --locks (aggregates)  %7.2f ns/pair  (+%.2f ns, x%.2f)\n", a, a - p, a / p
	if (pa != "")
		printf "  --locks -p (attached) %7.2f ns/pair  (+%.2f ns, x%.2f; x%.2f of --locks)\n", pa, pa - p, pa / p, pa / a
	printf "  --locks=events        %7.2f ns/pair  (+%.2f ns, x%.2f)\n", e, e - p, e / p
}'
[ -n "$pa" ] && echo "  --locks -p: sonde started -> recording, best of $REPS: ${am} ms (a one-thread program)"
echo "  --locks=events wall-clock rate: $(awk -v w="$w" 'BEGIN{printf "%.1fM", w/1e6}') pairs/s; lost events, lock events recorded = $lost"
echo "contended: 4 threads x 500000 operations on one mutex, best of $REPS"
cp=$(best ops_per_s ./con 4 500000)
ca=$(best ops_per_s "$SONDE" record --locks -o rec.c -- ./con 4 500000)
ce=$(best ops_per_s "$SONDE" record --locks=events -o rec.ce -- ./con 4 500000)
awk -v p="$cp" -v a="$ca" -v e="$ce" 'BEGIN {
	printf "  plain                 %12.0f ops/s\n", p
	printf "  --locks (aggregates)  %12.0f ops/s  (x%.2f)\n", a, a / p
	printf "  --locks=events        %12.0f ops/s  (x%.2f)\n", e, e / p
}'
"$SONDE" locks -i rec.c --limit 1 | head -2

#!/usr/bin/env bash
# bench/syscalls_bench.sh — what `record --syscalls` costs per system call
# (docs/SYSCALLS.md), side by side in one run: N one-byte writes to /dev/null
# from one function of a sonde-cc build,
#   plain      without sonde
#   record     under sonde record (the wrappers are there, passing through)
#   syscalls   under sonde record --syscalls (each write counted and timed)
# Per-call cost above plain: (median time - plain median) / N (record's includes
# sonde's start and end, spread over N); the counting itself: syscalls - record.
# Never fails on timing.          usage: BUILD=build bash bench/syscalls_bench.sh
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
SONDE=$BUILD/bin/sonde
REPS=${REPS:-5} N=${N:-1000000}
W=$(mktemp -d /tmp/sonde-bench.XXXXXX); cd "$W" || exit 1
trap 'rm -rf "$W"' EXIT
. "$ROOT/bench/lib.sh"
"$BUILD/bin/sonde-cc" -O2 -o sw "$ROOT/bench/syscalls_write.c" || exit 1
tp=$(median "$REPS" ./sw "$N")
tr=$(median "$REPS" "$SONDE" record -o r.data -- ./sw "$N")
ts=$(median "$REPS" "$SONDE" record --syscalls -o s.data -- ./sw "$N")
echo "write(2) cost, $N one-byte writes to /dev/null (median of $REPS, ${CLOCK:-wall} time):"
awk -v n="$N" -v p="$tp" -v r="$tr" -v s="$ts" 'BEGIN {
	printf "  %-10s %9s %12s %18s\n", "", "whole run", "per call", "per call above plain"
	printf "  %-10s %8.3fs %10.1f ns %18s\n", "plain", p, p / n * 1e9, "-"
	printf "  %-10s %8.3fs %10.1f ns %15.1f ns\n", "record", r, r / n * 1e9, (r - p) / n * 1e9
	printf "  %-10s %8.3fs %10.1f ns %15.1f ns\n", "syscalls", s, s / n * 1e9, (s - p) / n * 1e9
	printf "  counting (syscalls - record): %.1f ns per call\n", (s - r) / n * 1e9
}'

#!/usr/bin/env bash
# bench/hook_ticks_bench.sh — issue 28: what a recorded call costs in each mode
# (floor, profile, trace), in time, measured by the program itself so that
# the noise of a shared VM can be left out: a small program calls mid(),
# which calls leaf() twice, in ROUNDS rounds of N loops, reads the TSC around
# each round and prints its fastest round and its median round, in ticks a
# call.  Preemption, another VM's load and the recorder's bursts only ever
# add time to a round, so the fastest of a few hundred short rounds is the
# hooks' own cost (what bench/trace_floor_bench.sh's whole-run medians on
# Lua and SQLite cannot resolve on such a machine); the median is printed
# beside it.  Each mode runs RUNS times, modes interleaved; per mode the
# figure is the fastest of its runs' fastest rounds (and the median of
# their medians).  Ticks a call above the plain build (gcc -O2); x floor:
# over the same build's floor.  Ratios only; never fails on timing.
#   usage: BUILD=build [BUILD_OLD=build-old] [N=20000] [ROUNDS=300] [RUNS=5] bash bench/hook_ticks_bench.sh
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
abs() { case $1 in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }
BUILD=$(abs "$BUILD"); [ -n "${BUILD_OLD:-}" ] && BUILD_OLD=$(abs "$BUILD_OLD")
N=${N:-20000} ROUNDS=${ROUNDS:-300} RUNS=${RUNS:-5}
W=$(mktemp -d /tmp/sonde-hookticks.XXXXXX); cd "$W" || exit 1
cat >loop.c <<'C'
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>
volatile int sink;
__attribute__((noinline)) int leaf(int x) { sink = x; return x + 1; }
__attribute__((noinline)) int mid(int x) { return leaf(x) + leaf(x + 1); }
static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000, rounds = argc > 2 ? atoi(argv[2]) : 300, s = 0;
	double *t = malloc(sizeof *t * (size_t)rounds);
	if (!t || n <= 0 || rounds <= 0)
		return 1;
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = __rdtsc();
		for (int i = 0; i < n; i++)
			s += mid(i);
		t[r] = (double)(__rdtsc() - t0) / (3.0 * n);
	}
	sink = s;
	qsort(t, (size_t)rounds, sizeof *t, cmp);
	printf("%.3f %.3f\n", t[0], t[rounds / 2]);
	return 0;
}
C
cc -O2 loop.c -o loop-plain || exit 1
builds="new:$BUILD"; [ -n "${BUILD_OLD:-}" ] && builds="old:$BUILD_OLD $builds"
for b in $builds; do
	"${b#*:}/bin/sonde-cc" -O2 loop.c -o "loop-${b%%:*}" || exit 1
done
run() { # build-tag mode: "fastest median" ticks a call
	local t=$1 S=${2#*:} m=$3
	case $m in
	plain) ./loop-plain "$N" "$ROUNDS" ;;
	floor) SONDE_BENCH_FLOOR=1 "$S/bin/sonde" record -o f.data -- ./loop-"$t" "$N" "$ROUNDS" 2>/dev/null ;;
	profile) "$S/bin/sonde" record -o p.data -- ./loop-"$t" "$N" "$ROUNDS" 2>/dev/null ;;
	trace) "$S/bin/sonde" record --trace -o t.data -- ./loop-"$t" "$N" "$ROUNDS" 2>/dev/null ;;
	esac
}
: >all.txt
for _ in $(seq 1 "$RUNS"); do
	for b in $builds; do
		for m in plain floor profile trace; do
			echo "${b%%:*} $m $(run "${b%%:*}" "$b" $m)" >>all.txt
		done
	done
done
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); N=$N ROUNDS=$ROUNDS RUNS=$RUNS; $(date -u +%FT%TZ)"
python3 - all.txt <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    b, m, fast, med = line.split()
    rows.setdefault((b, m), []).append((float(fast), float(med)))
print(f"{'bld':4} {'row':8} {'plain':>7} {'floor':>7} {'profile':>8} {'trace':>7} {'prof/fl':>8} {'trace/fl':>9}")
for b in dict.fromkeys(k[0] for k in rows):
    for name, pick in (("fastest", lambda v: min(f for f, _ in v)), ("median", lambda v: statistics.median(m for _, m in v))):
        p, f, r, t = (pick(rows[(b, m)]) for m in ("plain", "floor", "profile", "trace"))
        print(f"{b:4} {name:8} {p:7.2f} {f - p:7.2f} {r - p:8.2f} {t - p:7.2f} {(r - p) / (f - p):7.2f}x {(t - p) / (f - p):8.2f}x")
PY
echo "# ticks a call (TSC): plain = the gcc -O2 build; floor, profile, trace: above plain; fastest: the fastest round of all runs; median: the median of the runs' median rounds"
rm -rf "$W"

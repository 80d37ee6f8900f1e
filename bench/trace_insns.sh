#!/usr/bin/env bash
# bench/trace_insns.sh — issue 28: the instructions a recorded call costs in
# each mode (floor, profile, trace), counted by valgrind's cachegrind, which
# the load of a shared machine does not change (the cycles it does change are
# trace_floor_bench.sh's).  A small program calls mid(), which calls leaf()
# twice, N and 2N times; the difference between the two runs over the 3N
# calls it adds is the count a call, the program's start and sonde's set-up
# cancelled out.  The same for the plain build; "above plain" subtracts it.
# Counted: the program's instructions (the hooks, trampolines and sleds are
# the program's), not the recorder's.  The session mapping is made small
# (SONDE_BENCH_SESSION), as valgrind maps no 256 GiB; each build's runtime
# and sonde-cc are measured under its own sonde (BUILD's if that one does not
# know SONDE_BENCH_SESSION).
#   usage: BUILD=build [BUILD_OLD=build-old] [N=100000] bash bench/trace_insns.sh
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
abs() { case $1 in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }
BUILD=$(abs "$BUILD"); [ -n "${BUILD_OLD:-}" ] && BUILD_OLD=$(abs "$BUILD_OLD")
N=${N:-100000}
command -v valgrind >/dev/null || { echo "trace_insns: no valgrind" >&2; exit 1; }
W=$(mktemp -d /tmp/sonde-tinsns.XXXXXX); cd "$W" || exit 1
cat >loop.c <<'C'
#include <stdlib.h>
volatile int sink;
__attribute__((noinline)) int leaf(int x) { sink = x; return x + 1; }
__attribute__((noinline)) int mid(int x) { return leaf(x) + leaf(x + 1); }
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000, s = 0;
	for (int i = 0; i < n; i++)
		s += mid(i);
	sink = s;
	return 0;
}
C
cc -O2 loop.c -o loop-plain || exit 1
builds="new:$BUILD"; [ -n "${BUILD_OLD:-}" ] && builds="old:$BUILD_OLD $builds"
irefs() { # command...: the program's instructions (cachegrind's I refs)
	rm -f cg.out
	"$@" >/dev/null 2>&1
	cg_annotate cg.out 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }'
}
vg="valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=cg.out"
per() { # command prefix: instructions a call (slope between N and 2N)
	local a b
	a=$(irefs "$@" ./loop-$tag "$N") b=$(irefs "$@" ./loop-$tag $((2 * N)))
	awk -v a="$a" -v b="$b" -v n="$N" 'BEGIN { printf "%.1f", (b - a) / (3 * n) }'
}
tag=plain; plain=$(per $vg)
echo "# instructions a call (cachegrind, slope between $N and $((2 * N)) loops of 3 calls); plain build: $plain"
printf '%-4s %8s %8s %8s %9s %9s\n' bld floor profile trace prof/fl trace/fl
for b in $builds; do
	# each build's runtime under its own sonde when that one knows
	# SONDE_BENCH_SESSION (a runtime reads only its own session version),
	# else under BUILD's: sonde finds the runtime beside itself
	t=${b%%:*} S=$W/$t/bin/sonde own=$BUILD/bin/sonde
	grep -q SONDE_BENCH_SESSION "${b#*:}/bin/sonde" && own=${b#*:}/bin/sonde
	mkdir -p "$W/$t/bin" "$W/$t/lib/sonde"
	cp "$own" "$W/$t/bin/" && cp "${b#*:}/lib/sonde/libsonde-rt.so" "$W/$t/lib/sonde/" || continue
	"${b#*:}/bin/sonde-cc" -O2 loop.c -o "loop-$t" || continue
	tag=$t
	fl=$(per env SONDE_BENCH_SESSION=$((1 << 30)) SONDE_BENCH_FLOOR=1 "$S" record -o f.data -- $vg)
	pr=$(per env SONDE_BENCH_SESSION=$((1 << 30)) "$S" record -o p.data -- $vg)
	tr=$(per env SONDE_BENCH_SESSION=$((1 << 30)) "$S" record --trace -o t.data -- $vg)
	awk -v t="$t" -v p="$plain" -v f="$fl" -v r="$pr" -v x="$tr" 'BEGIN {
		printf "%-4s %8.1f %8.1f %8.1f %8.2fx %8.2fx\n", t, f - p, r - p, x - p, (r - p) / (f - p), (x - p) / (f - p) }'
done
echo "# floor, profile, trace: instructions a call above the plain build; prof/fl, trace/fl: over the same build's floor"
rm -rf "$W"

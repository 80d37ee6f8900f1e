#!/usr/bin/env bash
# bench/hook_ticks_bench.sh — issue 28: what a recorded call costs in each mode
# (floor, profile, trace), in time, measured by the program itself so that
# the noise of a shared VM can be left out.  The program does the same work
# in many short rounds, times each, and prints its fastest and its median
# round; preemption, another VM's load and the recorder's bursts only ever
# add time to a round, so the fastest of a few hundred rounds is the hooks'
# own cost (what bench/trace_floor_bench.sh's whole-run medians cannot
# resolve on such a machine); the median is printed beside it.  Programs:
#   loop  mid() calling leaf() twice, ROUNDS rounds of N loops, the TSC read
#         around each round: ticks
#   lua   Lua 5.4 running tests/progs/bench.lua (size LUAN) LUAROUNDS times
#         in one interpreter, a full garbage collection first in each round,
#         os.clock() around it (CPU time): ns; the calls a round makes are counted by a
#         profile of 10 and of 20 rounds (the difference over 10)
#   sqlite bench/sqlite_rounds.c linked with SQLite's amalgamation (the
#         objects of trace_floor_bench.sh's speedtest1 builds), SQROUNDS
#         rounds of an in-memory workload of SQN rows, CPU time: ns; calls
#         counted as for lua
# Each mode runs RUNS times, builds and modes interleaved; per mode the
# figure is the fastest of its runs' fastest rounds (and the median of their
# median rounds), a call, above the plain build (gcc -O2); x floor: over the
# same build's floor.  Ratios only; never fails on timing.
#   usage: BUILD=build [BUILD_OLD=build-old] [PROGS="loop lua sqlite"] [N=20000] [ROUNDS=300]
#          [LUAN=4] [LUAROUNDS=100] [SQN=2000] [SQROUNDS=100] [RUNS=5] [SONDE_TEST_CACHE=...] bash bench/hook_ticks_bench.sh
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
abs() { case $1 in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }
BUILD=$(abs "$BUILD"); [ -n "${BUILD_OLD:-}" ] && BUILD_OLD=$(abs "$BUILD_OLD")
N=${N:-20000} ROUNDS=${ROUNDS:-300} RUNS=${RUNS:-5} PROGS=${PROGS:-"loop lua sqlite"} LUAN=${LUAN:-4} LUAROUNDS=${LUAROUNDS:-100}
SQN=${SQN:-2000} SQROUNDS=${SQROUNDS:-100}
. "$ROOT/bench/lib.sh"
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
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
	printf("%.3f %.3f\n", t[0] * 3.0 * n, t[rounds / 2] * 3.0 * n); /* ticks a round */
	return 0;
}
C
cat >rounds.lua <<'L'
-- rounds.lua SCRIPT R N: SCRIPT (tests/progs/bench.lua) with arg[1] = N, run R
-- times, each round timed (os.clock, in ns), its print() kept quiet
local path, R, N = arg[1], tonumber(arg[2]) or 100, arg[3] or "4"
local env = setmetatable({ arg = { N }, print = function() end }, { __index = _G })
local body = assert(loadfile(path, "t", env))
local ts = {}
for r = 1, R do
	local c0 = os.clock()
	collectgarbage("collect") -- inside the round: every round the same work, its calls counted
	body()
	ts[r] = (os.clock() - c0) * 1e9
end
table.sort(ts)
print(string.format("%.1f %.1f", ts[1], ts[R // 2 + 1]))
L
builds="new:$BUILD"; [ -n "${BUILD_OLD:-}" ] && builds="old:$BUILD_OLD $builds"
: >all.txt
calls() { # sonde-build command...: the calls its profile counts
	"$BUILD/bin/sonde" record -o c.data -- "$@" >/dev/null 2>&1 &&
		"$BUILD/bin/sonde" report -i c.data --format=json |
		python3 -c 'import json,sys; print(sum(f["calls"] for f in json.load(sys.stdin)["functions"]))'
}
measure() { # prog unit calls-a-round plain-command sonde-command-prefix (args after --)
	local prog=$1 unit=$2 per=$3 plain=$4; shift 4
	local sb=("$@") m b t S out
	for _ in $(seq 1 "$RUNS"); do
		for b in $builds; do
			t=${b%%:*} S=${b#*:}
			for m in plain floor profile trace; do
				case $m in
				plain) out=$($plain) ;;
				floor) out=$(SONDE_BENCH_FLOOR=1 "$S/bin/sonde" record -o f.data -- "${sb[@]//@T@/$t}" 2>/dev/null) ;;
				profile) out=$("$S/bin/sonde" record -o p.data -- "${sb[@]//@T@/$t}" 2>/dev/null) ;;
				trace) out=$("$S/bin/sonde" record --trace -o t.data -- "${sb[@]//@T@/$t}" 2>/dev/null) ;;
				esac
				set -- $out
				echo "$prog $unit $per $t $m ${1:-nan} ${2:-nan}" >>all.txt
			done
		done
	done
}
for prog in $PROGS; do
case $prog in
loop)
	cc -O2 loop.c -o loop-plain || exit 1
	for b in $builds; do
		"${b#*:}/bin/sonde-cc" -O2 loop.c -o "loop-${b%%:*}" || exit 1
	done
	measure loop ticks $((3 * N)) "./loop-plain $N $ROUNDS" "./loop-@T@" "$N" "$ROUNDS" ;;
lua)
	sh "$ROOT/tools/fetch-lua.sh" "$cache" >/dev/null 2>&1 || { echo "# lua: no source" >&2; continue; }
	LUAFLAGS='-Dluai_makeseed(L)=0u -Dl_randomizePivot()=0u -DSTRCACHE_N=1 -DSTRCACHE_M=1'
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-plain cc $LUAFLAGS >/dev/null 2>&1 &&
		sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-sonde "$BUILD/bin/sonde-cc" $LUAFLAGS >/dev/null 2>&1 ||
		{ echo "# lua: build failed" >&2; continue; }
	bl=$ROOT/tests/progs/bench.lua
	c10=$(calls ./lua-sonde rounds.lua "$bl" 10 "$LUAN") c20=$(calls ./lua-sonde rounds.lua "$bl" 20 "$LUAN")
	per=$(( (c20 - c10) / 10 ))
	measure "lua-$LUAN" ns "$per" "./lua-plain rounds.lua $bl $LUAROUNDS $LUAN" ./lua-sonde rounds.lua "$bl" "$LUAROUNDS" "$LUAN" ;;
sqlite)
	sqlite_builds "$cache" "$BUILD/bin/sonde-cc" || { echo "# sqlite: no source" >&2; continue; }
	am=$cache/src/sqlite3.amalg
	cc -O2 -I"$am" "$ROOT/bench/sqlite_rounds.c" "$cache/sqlite-b-plain/sqlite3.o" -lm -o sq-plain &&
		"$BUILD/bin/sonde-cc" -O2 -I"$am" "$ROOT/bench/sqlite_rounds.c" "$cache/sqlite-b-sonde/sqlite3.o" -lm -o sq-sonde ||
		{ echo "# sqlite: build failed" >&2; continue; }
	c10=$(calls ./sq-sonde 10 "$SQN") c20=$(calls ./sq-sonde 20 "$SQN")
	per=$(( (c20 - c10) / 10 ))
	measure "sqlite-$SQN" ns "$per" "./sq-plain $SQROUNDS $SQN" ./sq-sonde "$SQROUNDS" "$SQN" ;;
esac
done
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); RUNS=$RUNS, loop N=$N ROUNDS=$ROUNDS, lua LUAN=$LUAN LUAROUNDS=$LUAROUNDS, sqlite SQN=$SQN SQROUNDS=$SQROUNDS; $(date -u +%FT%TZ)"
python3 - all.txt <<'PY'
import sys, statistics
rows, meta = {}, {}
for line in open(sys.argv[1]):
    prog, unit, per, b, m, fast, med = line.split()
    meta[prog] = (unit, int(per))
    rows.setdefault((prog, b, m), []).append((float(fast), float(med)))
print(f"{'program':11} {'unit':5} {'calls/round':>11} {'bld':4} {'row':8} {'plain':>7} {'floor':>7} {'profile':>8} {'trace':>7} {'prof/fl':>8} {'trace/fl':>9}")
for prog in dict.fromkeys(k[0] for k in rows):
    unit, per = meta[prog]
    for b in dict.fromkeys(k[1] for k in rows if k[0] == prog):
        for name, pick in (("fastest", lambda v: min(f for f, _ in v)), ("median", lambda v: statistics.median(m for _, m in v))):
            p, f, r, t = (pick(rows[(prog, b, m)]) / per for m in ("plain", "floor", "profile", "trace"))
            print(f"{prog:11} {unit:5} {per:11} {b:4} {name:8} {p:7.2f} {f - p:7.2f} {r - p:8.2f} {t - p:7.2f} {(r - p) / (f - p):7.2f}x {(t - p) / (f - p):8.2f}x")
PY
echo "# a call: plain = the gcc -O2 build; floor, profile, trace: above plain; fastest: the fastest round of all runs; median: the median of the runs' median rounds"
rm -rf "$W"

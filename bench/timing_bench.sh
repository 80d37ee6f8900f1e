#!/usr/bin/env bash
# bench/timing_bench.sh — record --timing (issue 39): the cost of a call
# counted only beside a timed one and none, side by side in one run:
#   plain   the program without sonde
#   all     sonde record --timing=all (every patched function timed: the default)
#   none    sonde record --timing=none (every patched function counted only)
#   auto    sonde record --timing=auto (small leaves counted only)
# on bench/timing_loop.c (a tight loop calling a 7-byte leaf, plain cc -O2,
# patched without a rebuild; and built with sonde-cc, through its sleds), on Lua's real calls (a plain build of
# Debian's source, tests/lib.sh's lua-plain in the test cache, bench.lua)
# and on SQLite's (speedtest1 of Debian's source, sqlite-plain there).
# Per call: the difference of two sizes of the same work, so that sonde's
# fixed cost (start, planning, writing) cancels:
#   ((t(big) - t(small)) - (plain(big) - plain(small))) / (calls(big) - calls(small))
# with the calls counted by sonde --timing=all.  Medians of REPS runs (CLOCK=cpu:
# user + sys).  Never fails on timing.   usage: BUILD=build bash bench/timing_bench.sh
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
SONDE=$BUILD/bin/sonde
REPS=${REPS:-5} N1=${N1:-2000000} N2=${N2:-20000000} LUA1=${LUA1:-8} LUA2=${LUA2:-16} SQL1=${SQL1:-5} SQL2=${SQL2:-15}
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
W=$(mktemp -d /tmp/sonde-bench.XXXXXX); cd "$W" || exit 1
. "$ROOT/bench/lib.sh"
cc -O2 -g -o loop "$ROOT/bench/timing_loop.c" || exit 1
"$BUILD/bin/sonde-cc" -O2 -g -o loop-sonde "$ROOT/bench/timing_loop.c" || exit 1

calls() { "$SONDE" report -i "$1" --format=json | python3 -c "import json,sys; print(sum(f['calls'] for f in json.load(sys.stdin)['functions']))"; }

# row NAME SMALL-ARGS -- BIG-ARGS -- PROGRAM: one line of ns per call
row() {
	local name=$1 prog=$2 a1=$3 a2=$4 t
	declare -A T
	for t in plain all none auto; do
		for s in 1 2; do
			local a; [ $s = 1 ] && a=$a1 || a=$a2
			if [ $t = plain ]; then T[$t$s]=$(median "$REPS" $prog $a)
			else T[$t$s]=$(median "$REPS" "$SONDE" record --timing=$t -o $t$s.data -- $prog $a); fi
		done
	done
	local c1 c2
	c1=$(calls all1.data) c2=$(calls all2.data)
	python3 - "$name" "$c1" "$c2" "${T[plain1]}" "${T[plain2]}" "${T[all1]}" "${T[all2]}" "${T[none1]}" "${T[none2]}" \
		"${T[auto1]}" "${T[auto2]}" <<'PY'
import sys
name = sys.argv[1]; c1, c2 = int(sys.argv[2]), int(sys.argv[3])
v = [float(x) for x in sys.argv[4:]]
dp = v[1] - v[0]
per = lambda a, b: ((b - a) - dp) / (c2 - c1) * 1e9
print(f"{name:12} {c2 - c1:>12} calls  plain {dp / (c2 - c1) * 1e9:6.2f} ns/call   "
      f"all +{per(v[2], v[3]):6.2f}   none +{per(v[4], v[5]):6.2f}   auto +{per(v[6], v[7]):6.2f} ns/call above plain")
PY
}

grep -m1 'Model name' /proc/cpuinfo 2>/dev/null || lscpu | grep 'Model name'
echo "REPS=$REPS CLOCK=${CLOCK:-wall}"
row "tight loop" ./loop $N1 $N2
row "loop sonde-cc" ./loop-sonde $N1 $N2 # its sleds: counted under none, timed under auto
if [ -x "$cache/lua-plain" ]; then
	row "lua" "$cache/lua-plain $ROOT/tests/progs/bench.lua" $LUA1 $LUA2
else
	echo "lua: no $cache/lua-plain (make check T=profile_timing builds it)"
fi
if [ -x "$cache/sqlite-plain/speedtest1" ]; then
	row "sqlite" "$cache/sqlite-plain/speedtest1 --testset main --size" $SQL1 $SQL2
else
	echo "sqlite: no $cache/sqlite-plain/speedtest1 (make check T=profile_timing builds it)"
fi
rm -rf "$W"

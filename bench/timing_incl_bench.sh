#!/usr/bin/env bash
# bench/timing_incl_bench.sh — record --timing=auto (issue 39): how far a
# timed function's inclusive time under auto is from its inclusive time under
# all, on real programs (plain builds of Debian's source from the test cache:
# Lua running bench.lua, SQLite's speedtest1, zstd compressing generated
# text).  Under auto a counted callee no longer runs the hook's two clock
# reads, so a timed function's inclusive time is expected to drop by about
# that cost times the counted calls below it; under all every call pays it.
# For each program: REPS recordings under each setting, each function's
# median inclusive time, then for the functions timed under auto (with at
# least MIN calls) the ratio auto / all: its median, 10th and 90th
# percentiles, and how many are within 5%.  Never fails on timing.
#   usage: BUILD=build bash bench/timing_incl_bench.sh
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
SONDE=$BUILD/bin/sonde
REPS=${REPS:-3} MIN=${MIN:-1000}
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
W=$(mktemp -d /tmp/sonde-incl.XXXXXX); cd "$W" || exit 1
sh "$ROOT/tools/gen-data.sh" data.txt 4

# one NAME PROGRAM ARGS...: REPS recordings under all and auto, compared
one() {
	local name=$1 t r; shift
	[ -x "$1" ] || { echo "$name: no $1 (make check T=profile_timing builds it)"; return; }
	for t in all auto; do
		for r in $(seq "$REPS"); do
			"$SONDE" record --timing=$t -o $name-$t-$r.data -- "$@" >/dev/null 2>&1
			"$SONDE" report -i $name-$t-$r.data --format=json >$name-$t-$r.json 2>/dev/null
		done
	done
	python3 - "$name" "$REPS" "$MIN" <<'PY'
import json, statistics, sys
name, reps, least = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def med(t):
    runs = [{f["name"]: f for f in json.load(open(f"{name}-{t}-{r}.json"))["functions"]} for r in range(1, reps + 1)]
    out = {}
    for k in runs[0]:
        fs = [x[k] for x in runs if k in x]
        if len(fs) == reps:
            out[k] = (statistics.median(f["inclusive_ns"] or 0 for f in fs), fs[0]["calls"], fs[0]["timed"],
                      fs[0].get("switched", False))
    return out
a, b = med("all"), med("auto")
rs = sorted(b[k][0] / a[k][0] for k in b
            if k in a and b[k][2] and not b[k][3] and b[k][1] >= least and a[k][0] > 0)
if not rs:
    print(f"{name}: no function timed under auto with {least} calls or more")
    sys.exit(0)
q = lambda p: rs[min(len(rs) - 1, int(p * len(rs)))]
within = sum(1 for x in rs if abs(x - 1) <= 0.05)
print(f"{name:10} {len(rs):4} functions timed under auto (>= {least} calls, never switched): inclusive auto/all "
      f"median {q(0.5):.3f}, p10 {q(0.1):.3f}, p90 {q(0.9):.3f}; {within} within 5%")
PY
}

grep -m1 'Model name' /proc/cpuinfo 2>/dev/null || lscpu | grep 'Model name'
echo "REPS=$REPS MIN=$MIN"
one lua "$cache/lua-plain" "$ROOT/tests/progs/bench.lua" 12
one sqlite "$cache/sqlite-plain/speedtest1" --testset main --size 10
one zstd "$cache/zstd-plain/zstd" -3 -q -c data.txt
cd / && rm -rf "$W"

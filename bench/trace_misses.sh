#!/usr/bin/env bash
# bench/trace_misses.sh — issue 28, part 3: what trace mode adds to the
# recorded program's instructions and data-cache misses a call, over the
# floor, on SQLite's speedtest1 and Lua (cachegrind's cache simulation: its D1
# is the host's L1d, its "LL" set to one core's L2, LL= to change it).
# Counts, not times: the load of a shared machine does not change them.
# Valgrind runs the program's threads one at a time and sees nothing of the
# recorder (another process): the misses the recorder's reads cause in the
# writer's caches are not here (trace_pin_bench.sh measures those).
# Prints, a call, trace minus floor: Ir (instructions), Dr and Dw (data reads
# and writes), D1mr, D1mw (L1 read and write misses), LLmr, LLmw (L2 misses).
#   usage: BUILD=build [SQSIZE=5] [LUAN=16] [LL=524288,8,64] [SONDE_TEST_CACHE=...] bash bench/trace_misses.sh
# (SQLite's sonde build is trace_floor_bench.sh's: run that once first.)
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SQSIZE=${SQSIZE:-5} LUAN=${LUAN:-16} LL=${LL:-524288,8,64}
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
command -v valgrind >/dev/null || { echo "trace_misses: no valgrind" >&2; exit 1; }
W=$(mktemp -d /tmp/sonde-tmiss.XXXXXX); cd "$W" || exit 1
S=$BUILD/bin/sonde
vg="valgrind --tool=cachegrind --cache-sim=yes --LL=$LL"
totals() { # cachegrind out file: Ir Dr Dw D1mr D1mw LLmr LLmw
	cg_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", ""); gsub(/\([0-9.]+%\)/, "");
		print $1, $4, $7, $5, $8, $6, $9; exit }'
}
measure() { # name command...
	local name=$1; shift
	"$S" record -o p.data -- "$@" >/dev/null 2>&1
	local calls
	calls=$("$S" report -i p.data --format=json | python3 -c 'import json,sys; print(sum(f["calls"] for f in json.load(sys.stdin)["functions"]))')
	local fl tr
	fl=$(env SONDE_BENCH_FLOOR=1 SONDE_BENCH_SESSION=$((1 << 30)) "$S" record -o f.data -- $vg --cachegrind-out-file=cg-f.out "$@" >/dev/null 2>&1; totals cg-f.out)
	tr=$(env SONDE_BENCH_SESSION=$((1 << 30)) "$S" record --trace -o t.data -- $vg --cachegrind-out-file=cg-t.out "$@" >/dev/null 2>&1; totals cg-t.out)
	python3 - "$name" "$calls" "$fl" "$tr" <<'PY'
import sys
name, calls = sys.argv[1], int(sys.argv[2])
fl, tr = (list(map(int, a.split())) for a in sys.argv[3:5])
print(f"{name:24} {calls:>9} " + " ".join(f"{(t - f) / calls:8.3f}" for f, t in zip(fl, tr))
      + "   floor/call: " + " ".join(f"{f / calls:.3f}" for f in fl[3:]))
PY
}
echo "# trace minus floor, a call (cachegrind --cache-sim=yes --LL=$LL); $(date -u +%FT%TZ)"
printf '%-24s %9s %8s %8s %8s %8s %8s %8s %8s\n' program calls Ir Dr Dw D1mr D1mw LLmr LLmw
if [ -x "$cache/sqlite-b-sonde/speedtest1" ]; then
	measure "speedtest1 --size $SQSIZE" "$cache/sqlite-b-sonde/speedtest1" --size "$SQSIZE"
fi
if sh "$ROOT/tools/fetch-lua.sh" "$cache" >/dev/null 2>&1; then
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-sonde "$BUILD/bin/sonde-cc" '-Dluai_makeseed(L)=0u' '-Dl_randomizePivot()=0u' \
		-DSTRCACHE_N=1 -DSTRCACHE_M=1 >/dev/null 2>&1 &&
		measure "lua bench.lua $LUAN" ./lua-sonde "$ROOT/tests/progs/bench.lua" "$LUAN"
fi
echo "# floor/call: the floor's own D1mr D1mw LLmr LLmw a call (the program's misses with the floor's hooks)"
rm -rf "$W"

#!/usr/bin/env bash
# bench/compress_bench.sh — zstd chunks in events.sonde (record --compress),
# side by side in one run, never pass/fail: for the trace of Lua (bench.lua)
# and of SQLite's speedtest1, the recording's wall and CPU time with
# --compress=none and =zstd (fastest of REPS), the file sizes and their ratio;
# then the export rates (Chrome JSON, Perfetto) in events per second and
# bytes per slice, reading the compressed recording.
# Needs the real-program builds of the tests (SONDE_TEST_CACHE, default
# BUILD/test-cache: make check builds them); a missing one is said and skipped.
# Usage: BUILD=build bash bench/compress_bench.sh
set -u
BUILD=${BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SONDE=$BUILD/bin/sonde
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
REPS=${REPS:-3}
W=$(mktemp -d /tmp/sonde-compress-bench.XXXXXX)
cd "$W" || exit 1
. "$ROOT/bench/lib.sh"
one() { # NAME, program and arguments
	local name=$1; shift
	local tn tz
	tn=$(fastest "$SONDE" record --trace --compress=none -o none.data -- "$@")
	tz=$(fastest "$SONDE" record --trace --compress=zstd -o zstd.data -- "$@")
	local bn bz calls
	bn=$(stat -c %s none.data/events.sonde); bz=$(stat -c %s zstd.data/events.sonde)
	calls=$("$SONDE" report -i zstd.data --format=json | python3 -c "import json,sys; print(sum(f['calls'] for f in json.load(sys.stdin)['functions']))")
	local tc tp
	tc=$(fastest "$SONDE" export -i zstd.data --format=chrome -o out.json)
	local sc; sc=$(stat -c %s out.json)
	tp=$(fastest "$SONDE" export -i zstd.data --format=perfetto -o out.pftrace)
	local sp; sp=$(stat -c %s out.pftrace)
	python3 - "$name" "$tn" "$tz" "$bn" "$bz" "$calls" "$tc" "$sc" "$tp" "$sp" <<'PY'
import sys
name = sys.argv[1]
tn, tz = (tuple(map(float, a.split())) for a in sys.argv[2:4])
bn, bz, calls = map(int, sys.argv[4:7])
tc = tuple(map(float, sys.argv[7].split())); sc = int(sys.argv[8])
tp = tuple(map(float, sys.argv[9].split())); sp = int(sys.argv[10])
print(f"{name}: {calls} calls traced")
print(f"  record --trace --compress=none  {tn[0]*1e3:8.1f} ms wall {tn[1]*1e3:8.1f} ms cpu   events.sonde {bn:>11} B  {bn/calls:5.2f} B/call")
print(f"  record --trace --compress=zstd  {tz[0]*1e3:8.1f} ms wall {tz[1]*1e3:8.1f} ms cpu   events.sonde {bz:>11} B  {bz/calls:5.2f} B/call")
print(f"  zstd: {bn/bz:.1f}x smaller, cost {(tz[1]-tn[1])*1e9/calls:+.1f} ns cpu and {(tz[0]-tn[0])*1e9/calls:+.1f} ns wall per call")
print(f"  export chrome   {tc[0]*1e3:8.1f} ms  {calls/tc[0]/1e6:6.1f} M slices/s  {sc/calls:6.1f} B/slice")
print(f"  export perfetto {tp[0]*1e3:8.1f} ms  {calls/tp[0]/1e6:6.1f} M slices/s  {sp/calls:6.1f} B/slice")
PY
	rm -rf none.data zstd.data out.json out.pftrace
}
lua=""
if [ -d "$cache/lua" ]; then
	LUAFLAGS='-Dluai_makeseed(L)=0u -Dl_randomizePivot()=0u -DSTRCACHE_N=1 -DSTRCACHE_M=1'
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-sonde "$BUILD/bin/sonde-cc" -O2 -g $LUAFLAGS >build.log 2>&1 && lua=./lua-sonde
fi
if [ -n "$lua" ]; then one "Lua 5.4 bench.lua 16" "$lua" "$ROOT/tests/progs/bench.lua" 16
else echo "Lua: no build (run make check first to fetch Debian's lua5.4 source into $cache)"; fi
if [ -x "$cache/sqlite-sonde/speedtest1" ]; then one "SQLite speedtest1 --size 5" "$cache/sqlite-sonde/speedtest1" --size 5 --testset main
else echo "SQLite: no build in $cache/sqlite-sonde (run make check first)"; fi
rm -rf "$W"

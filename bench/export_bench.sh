#!/usr/bin/env bash
# bench/export_bench.sh — export rates of a trace, side by side in one run,
# never pass/fail: `sonde export --format=perfetto` and `--format=chrome`
# (written to a file), events per second per core (2 events per call, its
# begin and end; per core = over the CPU time, user + sys), wall, bytes per
# event, peak RSS.  Fastest of REPS runs each.
# Usage: BUILD=build REPS=3 bash bench/export_bench.sh [SCALE]
set -u
BUILD=${BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SONDE=$BUILD/bin/sonde
SCALE=${1:-40}
REPS=${REPS:-3}
W=$(mktemp -d /tmp/sonde-export-bench.XXXXXX)
cd "$W" || exit 1
"$BUILD/bin/sonde-cc" -O2 -g "$ROOT/bench/trace_calls.c" -o prog -lpthread || exit 1
"$SONDE" record --trace -o tr -- ./prog "$SCALE" >/dev/null 2>&1 || exit 1
calls=$("$SONDE" report -i tr --format=json | python3 -c "import json,sys; print(sum(f['calls'] for f in json.load(sys.stdin)['functions']))")
run() { # FORMAT OUT: "wall cpu maxrss_kb" of the fastest (by CPU) of REPS runs
	local b="0 999999 0"
	for _ in $(seq 1 "$REPS"); do
		/usr/bin/time -f "%e %U %S %M" -o t.out "$SONDE" export -i tr --format="$1" -o "$2" >/dev/null 2>&1
		b=$(python3 -c "
w,u,s,m=map(float,open('t.out').read().split()[-4:]); bw,bc,bm=map(float,'$b'.split())
print(f'{w} {u+s} {m:.0f}' if u+s < bc else '$b')")
	done
	echo "$b"
}
tp=$(run perfetto out.pftrace)
sp=$(stat -c %s out.pftrace)
tc=$(run chrome out.json)
sc=$(stat -c %s out.json)
python3 - "$calls" "$tp" "$sp" "$tc" "$sc" <<'PY'
import sys
calls = int(sys.argv[1]); ev = 2 * calls
print(f"export benchmark: {calls} calls = {ev} events (bench/trace_calls.c, 2 threads); fastest of runs by CPU")
print(f"  {'':9} {'wall':>9} {'cpu':>9} {'events/s/core':>14} {'events/s wall':>14} {'B/event':>8} {'max RSS':>9}")
for name, t, size in (("perfetto", sys.argv[2], sys.argv[3]), ("chrome", sys.argv[4], sys.argv[5])):
    w, c, m = map(float, t.split())
    print(f"  {name:9} {w*1e3:7.0f}ms {c*1e3:7.0f}ms {ev/c/1e6:12.1f}M {ev/w/1e6:12.1f}M {int(size)/ev:8.2f} {m/1024:7.1f}MB")
PY
rm -rf "$W"

#!/usr/bin/env bash
# bench/trace_bench.sh — trace-mode cost, side by side in one run, never pass/fail:
#   ns per call (sonde record --trace vs uftrace record, each against its own
#   uninstrumented-by-the-tool run of the same build), bytes stored per call,
#   lost events; and --domain auto vs full trace.
# Usage: BUILD=build bash bench/trace_bench.sh [SCALE]
set -u
BUILD=${BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SONDE=$BUILD/bin/sonde
SCALE=${1:-40}
REPS=${REPS:-5}
W=$(mktemp -d /tmp/sonde-trace-bench.XXXXXX)
cd "$W" || exit 1
"$BUILD/bin/sonde-cc" -O2 -g "$ROOT/bench/trace_calls.c" -o prog_sonde -lpthread || exit 1
cc -O2 -g -pg "$ROOT/bench/trace_calls.c" -o prog_pg -lpthread || exit 1
cc -O2 -g "$ROOT/bench/trace_calls.c" -o prog_plain -lpthread || exit 1

. "$ROOT/bench/lib.sh"
t_plain=$(fastest ./prog_plain "$SCALE")
t_dormant=$(fastest ./prog_sonde "$SCALE")
t_pg=$(fastest ./prog_pg "$SCALE")
t_sonde=$(fastest "$SONDE" record --trace -o tr -- ./prog_sonde "$SCALE")
t_prof=$(fastest "$SONDE" record -o prof -- ./prog_sonde "$SCALE")
t_uft=$(fastest uftrace record -d uft.data ./prog_pg "$SCALE")
# domain: the functions that left records with --depth 3 (main, work, fib, loop), then --domain auto
"$SONDE" record --trace --depth 3 -o dom -- ./prog_sonde "$SCALE" >/dev/null 2>&1
t_dom=$(fastest "$SONDE" record --trace --domain auto -o dom -- ./prog_sonde "$SCALE")
calls=$("$SONDE" report -i tr --format=json | python3 -c "import json,sys; print(sum(f['calls'] for f in json.load(sys.stdin)['functions']))")
ev_bytes=$(grep -a '^event_bytes=' /dev/null; "$SONDE" info -i tr --format=json 2>/dev/null | python3 -c "
import json,sys
d=json.load(sys.stdin)
def find(o,k):
    if isinstance(o,dict):
        for a,b in o.items():
            if a==k: return b
            r=find(b,k)
            if r is not None: return r
    if isinstance(o,list):
        for b in o:
            r=find(b,k)
            if r is not None: return r
print(find(d,'event_bytes') or 0)")
file_bytes=$(stat -c %s tr/events.sonde)
lost=$("$SONDE" info -i tr --format=json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); print(d.get('lost_events', d.get('lost', '?')))" 2>/dev/null || echo "?")
uft_bytes=$(du -sb uft.data | cut -f1)
# in-process time: the recorded threads' own durations (without sonde's start-up and post-processing)
thr_ns=$("$SONDE" info -i tr --format=json | python3 -c "
import json,sys; t=json.load(sys.stdin)['threads']; print(sum(x['duration_ns'] for x in t)/len(t))")
python3 - "$t_plain" "$t_dormant" "$t_pg" "$t_sonde" "$t_prof" "$t_uft" "$t_dom" "$calls" "$file_bytes" "$uft_bytes" "$lost" "$ev_bytes" "$thr_ns" <<'PY'
import sys
def wc(a): w, c = map(float, a.split()); return w, c
tp, td, tpg, ts, tprof, tu, tdom = map(wc, sys.argv[1:8])
calls, fb, ub = int(sys.argv[8]), int(sys.argv[9]), int(sys.argv[10])
lost, evb = sys.argv[11], int(sys.argv[12] or 0)
thr = float(sys.argv[13]) / 1e9
ns = lambda t, base: (t - base) * 1e9 / calls
print(f"trace benchmark: {calls} calls in 2 threads; fastest of runs; per call = (run - baseline) / calls")
print(f"  {'':28} {'wall':>9} {'cpu':>9}   {'wall/call':>9} {'cpu/call':>9}")
def row(name, t, base):
    print(f"  {name:28} {t[0]*1e3:7.1f}ms {t[1]*1e3:7.1f}ms   " + (f"{ns(t[0], base[0]):7.1f}ns {ns(t[1], base[1]):7.1f}ns" if base else ""))
row("plain build", tp, None)
row("sonde build, hooks dormant", td, tp)
row("sonde record (profile)", tprof, tp)
row("sonde record --trace", ts, tp)
row("sonde --trace --domain auto", tdom, tp)
row("-pg build, no uftrace", tpg, None)
row("uftrace record", tu, tpg)
print(f"  in-process, trace mode: threads ran {thr*1e3:.1f} ms each (plain run {tp[0]*1e3:.1f} ms)")
print(f"  uftrace / sonde per call: wall {ns(tu[0], tpg[0]) / max(ns(ts[0], tp[0]), 1e-9):.1f}x, "
      f"cpu {ns(tu[1], tpg[1]) / max(ns(ts[1], tp[1]), 1e-9):.1f}x")
print(f"  bytes stored per call: sonde {evb/calls:.2f} (chunk payload), {fb/calls:.2f} (events.sonde file); uftrace {ub/calls:.2f} (uftrace.data)")
print(f"  lost events (sonde): {lost or 0}")
print(f"  --domain auto (domain of a --depth 3 run) saves {ns(ts[1], tdom[1]):.1f} ns cpu per call of the program")
PY
rm -rf "$W"

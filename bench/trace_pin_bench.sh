#!/usr/bin/env bash
# bench/trace_pin_bench.sh — issue 28, part 3: does trace mode pay for the
# ring's hand-off between CPUs?  The same recording (floor and trace) run
#   free    as the scheduler places it (trace_floor_bench.sh's way)
#   same    `sonde record` and the program pinned to CPU 0 (the recorder's
#           reads of the ring stay in the writer's caches: no line travels
#           between cores, but the recorder takes turns with the program)
#   split   `sonde record` on CPU 1, the program on CPU 0 (every ring line
#           the recorder reads moves between the cores' caches)
# interleaved round after round; the program's CPU time (user + sys, wait4)
# above the plain build (run free and on CPU 0), per call, medians.
# Ratios only; never fails on timing.  Needs 2 CPUs (taskset).
#   usage: BUILD=build [REPS=7] [PROGS="sqlite lua"] [SONDE_TEST_CACHE=...] bash bench/trace_pin_bench.sh
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
REPS=${REPS:-7} SQSIZE=${SQSIZE:-25} LUAN=${LUAN:-22} PROGS=${PROGS:-"sqlite lua"}
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
command -v taskset >/dev/null || { echo "trace_pin_bench: no taskset" >&2; exit 1; }
W=$(mktemp -d /tmp/sonde-pinbench.XXXXXX); cd "$W" || exit 1
cc -O2 "$ROOT/bench/cputime.c" -o cpu || exit 1
cputime() { rm -f cpu.txt; "$@" >/dev/null 2>&1; cat cpu.txt 2>/dev/null || echo nan; }
S=$BUILD/bin/sonde
run_prog() { # name plainbin sondebin args...
	local name=$1 p=$2 s=$3; shift 3
	: >times.txt
	for r in $(seq "$REPS"); do
		echo "plain.free $(cputime ./cpu "$p" "$@")" >>times.txt
		echo "plain.cpu0 $(cputime taskset -c 0 ./cpu "$p" "$@")" >>times.txt
		for m in floor trace; do
			local e=; [ $m = floor ] && e=SONDE_BENCH_FLOOR=1
			local t=; [ $m = trace ] && t=--trace
			echo "$m.free $(cputime env $e "$S" record $t -o d.data -- ./cpu "$s" "$@")" >>times.txt
			echo "$m.same $(cputime env $e taskset -c 0 "$S" record $t -o d.data -- ./cpu "$s" "$@")" >>times.txt
			echo "$m.split $(cputime env $e taskset -c 1 "$S" record $t -o d.data -- taskset -c 0 ./cpu "$s" "$@")" >>times.txt
		done
	done
	"$S" report -i d.data --format=json >/dev/null 2>&1
	"$S" record -o p.data -- "$s" "$@" >/dev/null 2>&1 && "$S" report -i p.data --format=json >calls.json
	python3 - "$name" <<'PY'
import sys, json, statistics as st
name = sys.argv[1]
C = {}
for l in open("times.txt"):
    k, c = l.split(); C.setdefault(k, []).append(float(c))
calls = sum(f["calls"] for f in json.load(open("calls.json"))["functions"])
for what, f in (("median", st.median), ("min", min)):
    m = {k: f(v) for k, v in C.items()}
    row = {}
    for pin in ("free", "same", "split"):
        pl = m["plain.free"] if pin == "free" else m["plain.cpu0"]
        fl, tr = ((m[f"{x}.{pin}"] - pl) / calls * 1e9 for x in ("floor", "trace"))
        row[pin] = (fl, tr)
    print(f"{name:24} {what:6} {calls:>10} {m['plain.free']:7.3f} " + " ".join(
        f"{row[p][0]:6.1f} {row[p][1]:6.1f} {row[p][1] / row[p][0]:5.2f}x" for p in ("free", "same", "split")))
PY
}
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); REPS=$REPS; $(date -u +%FT%TZ)"
printf '%-24s %-6s %10s %7s %s\n' program stat calls plain_s "free: floor trace t/f | same (CPU 0): floor trace t/f | split (rec 1, prog 0): floor trace t/f"
for prog in $PROGS; do
case $prog in
lua)
	sh "$ROOT/tools/fetch-lua.sh" "$cache" >/dev/null 2>&1 || continue
	LUAFLAGS='-Dluai_makeseed(L)=0u -Dl_randomizePivot()=0u -DSTRCACHE_N=1 -DSTRCACHE_M=1'
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-plain cc $LUAFLAGS >/dev/null 2>&1
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-sonde "$BUILD/bin/sonde-cc" $LUAFLAGS >/dev/null 2>&1
	run_prog "lua bench.lua $LUAN" ./lua-plain ./lua-sonde "$ROOT/tests/progs/bench.lua" "$LUAN" ;;
sqlite)
	# the builds of trace_floor_bench.sh (run it once first: it makes them)
	[ -x "$cache/sqlite-b-sonde/speedtest1" ] || { echo "no $cache/sqlite-b-sonde: run trace_floor_bench.sh first" >&2; continue; }
	run_prog "speedtest1 --size $SQSIZE" "$cache/sqlite-b-plain/speedtest1" "$cache/sqlite-b-sonde/speedtest1" --size "$SQSIZE" ;;
esac
done
echo "# floor, trace: ns a call above plain (the program's CPU time); t/f: trace over floor; load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$W"

#!/usr/bin/env bash
# bench/exitsled_bench.sh — exit sleds (issue 28) against return-address
# replacement, old build beside new in one run: Lua 5.4 (tests/progs/bench.lua)
# and fib, each built with gcc -O2 (plain), with OLD's sonde-cc (no exit sleds)
# and with BUILD's (exit sleds); run as
#   plain, dormant (the sonde-cc build without sonde), floor
#   (SONDE_BENCH_FLOOR=1: sleds, trampolines, shadow stack, two TSC reads),
#   profile (sonde record) and trace (sonde record --trace),
# each with its own build's sonde, rounds interleaved (every variant once per
# round), median of REPS rounds, wall time and CPU time (the program's, and
# for the recordings sonde's and its recorder's too: wait4).  ns per call: time
# above plain, less sonde record's fixed cost (/bin/true recorded), over the
# calls the profile counted (machine_bench.sh's method).  The dormant row is
# best read in CPU time (a few ns a call; wall time moves more on a shared
# machine).  Ratios only; never fails.
#   usage: OLD=/path/to/old/build BUILD=build bash bench/exitsled_bench.sh
#   CC=clang: every build with clang (plain, and sonde-cc's through SONDE_CC)
set -u
CC=${CC:-cc}
export SONDE_CC=${SONDE_CC:-$CC}
: "${BUILD:?}" "${OLD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPS=${REPS:-7} LUAN=${LUAN:-22} FIBN=${FIBN:-32}
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
W=$(mktemp -d /tmp/sonde-exitsled.XXXXXX); cd "$W" || exit 1
once() { # COMMAND...: its wall time and CPU time (user + sys of it and its children, wait4), seconds
	python3 -c '
import os, sys, time
t = time.monotonic(); pid = os.fork()
if pid == 0:
    fd = os.open("/dev/null", os.O_WRONLY); os.dup2(fd, 1); os.dup2(fd, 2); os.execvp(sys.argv[1], sys.argv[1:])
_, _, ru = os.wait4(pid, 0)
print(f"{time.monotonic() - t:.6f} {ru.ru_utime + ru.ru_stime:.6f}")' "$@"
}

bench() { # name calls-binary-args: runs every variant REPS times, interleaved
	local name=$1; shift
	local -a V=(plain dorm_old dorm_new floor_old floor_new prof_old prof_new trace_old trace_new true_old true_new true)
	local r v
	for r in $(seq "$REPS"); do
		for v in "${V[@]}"; do
			case $v in
			plain) once ./$name-plain "$@" ;;
			dorm_old) once ./$name-old "$@" ;;
			dorm_new) once ./$name-new "$@" ;;
			floor_old) once env SONDE_BENCH_FLOOR=1 "$OLD/bin/sonde" record -o f.data -- ./$name-old "$@" ;;
			floor_new) once env SONDE_BENCH_FLOOR=1 "$BUILD/bin/sonde" record -o f.data -- ./$name-new "$@" ;;
			prof_old) once "$OLD/bin/sonde" record -o p.data -- ./$name-old "$@" ;;
			prof_new) once "$BUILD/bin/sonde" record -o p.data -- ./$name-new "$@" ;;
			trace_old) once "$OLD/bin/sonde" record --trace -o t.data -- ./$name-old "$@" ;;
			trace_new) once "$BUILD/bin/sonde" record --trace -o t.data -- ./$name-new "$@" ;;
			true_old) once "$OLD/bin/sonde" record -o x.data -- /bin/true ;;
			true_new) once "$BUILD/bin/sonde" record -o x.data -- /bin/true ;;
			true) once /bin/true ;;
			esac | sed "s/^/$v /"
		done
	done >"$name.times"
	"$BUILD/bin/sonde" record -o c.data -- ./$name-new "$@" >/dev/null 2>&1
	"$BUILD/bin/sonde" report -i c.data --format=json >c.json
	python3 - "$name" "$name.times" c.json "$(python3 "$ROOT/bench/exitsled_count.py" ./$name-new)" <<'PY'
import sys, json, statistics as st
name, times, calls_json, sleds = sys.argv[1:5]
t = {}
for l in open(times):
    v, w, c = l.split(); t.setdefault(v, []).append((float(w), float(c)))
calls = sum(f["calls"] for f in json.load(open(calls_json))["functions"])
print(f"{name}: {calls} calls; plain {st.median(x[0] for x in t['plain'])*1e3:.1f} ms wall; {sleds}")
for col, what in ((0, "wall"), (1, "CPU")):
    m = {v: st.median(x[col] for x in xs) for v, xs in t.items()}
    tp = m["plain"]
    per = lambda v, fixed: (m[v] - tp - fixed) / calls * 1e9
    fo, fn = m["true_old"] - m["true"], m["true_new"] - m["true"]
    print(f"  {what:8} {'old (replace)':>14} {'new (sleds)':>12} {'new - old':>10}   ns a call above plain")
    print(f"  {'dormant':8} {per('dorm_old', 0):14.2f} {per('dorm_new', 0):12.2f} {per('dorm_new', 0) - per('dorm_old', 0):10.2f}"
          f"   ({m['dorm_old']/tp:.3f}x / {m['dorm_new']/tp:.3f}x plain)")
    for v in ("floor", "prof", "trace"):
        o, n = per(v + "_old", fo), per(v + "_new", fn)
        print(f"  {v:8} {o:14.2f} {n:12.2f} {n - o:10.2f}   (new/old {n/o:.3f})")
    print(f"  profile/floor: old {per('prof_old', fo)/per('floor_old', fo):.2f}, new {per('prof_new', fn)/per('floor_new', fn):.2f};"
          f" trace/floor: old {per('trace_old', fo)/per('floor_old', fo):.2f}, new {per('trace_new', fn)/per('floor_new', fn):.2f}")
PY
}

echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg); REPS=$REPS, medians, rounds interleaved"
if sh "$ROOT/tools/fetch-lua.sh" "$cache" >/dev/null 2>&1; then
	LUAFLAGS='-Dluai_makeseed(L)=0u -Dl_randomizePivot()=0u -DSTRCACHE_N=1 -DSTRCACHE_M=1'
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-plain "$CC" $LUAFLAGS >/dev/null 2>&1
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-old "$OLD/bin/sonde-cc" $LUAFLAGS >/dev/null 2>&1
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-new "$BUILD/bin/sonde-cc" $LUAFLAGS >/dev/null 2>&1
	bench lua "$ROOT/tests/progs/bench.lua" "$LUAN"
fi
"$CC" -O2 "$ROOT/bench/fib.c" -o fib-plain && "$OLD/bin/sonde-cc" -O2 "$ROOT/bench/fib.c" -o fib-old &&
	"$BUILD/bin/sonde-cc" -O2 "$ROOT/bench/fib.c" -o fib-new && bench fib "$FIBN"
rm -rf "$W"

#!/usr/bin/env bash
# bench/patch_bench.sh — programs never built for sonde (issue 24; docs/
# INSTRUMENTATION.md, "Programs never built for sonde"): Lua, SQLite's
# speedtest1 and zstd from Debian source, side by side in one run:
#   plain       the plain cc -O2 -g build, run without sonde
#   cc:floor    the sonde-cc build under SONDE_BENCH_FLOOR=1 sonde record (sleds, trampolines, shadow stack, TSC)
#   cc:prof     the sonde-cc build under sonde record
#   p:floor     the plain build, patched, under SONDE_BENCH_FLOOR=1 sonde record
#   p:prof      the plain build, patched, under sonde record
#   p:trace     the plain build, patched, under sonde record --trace
#   uftrace     uftrace record --no-libcall -P . on the plain build (it patches every function too)
# Medians of REPS runs.  Per-call figures: (time - plain - sonde's fixed cost) / calls; for the
# patched runs each run's planning (plan_ms, before the program runs, once) is taken out too;
# the whole-run ratio to uftrace keeps it.
# Ratios: p/cc of the per-call profile cost, and of the floor (target: <= 1.5 on Lua and SQLite);
# p:prof / uftrace whole run (target: <= 0.2 on SQLite).  Then the time the program is held
# while its functions are patched (sonde info's numbering time), launched and attached, per
# 10,000 functions (target: <= 50 ms), and sonde's planning before the program runs.
# CLOCK=cpu: user + sys time instead of wall time (bench/lib.sh, median).
# Never fails on timing.          usage: BUILD=build bash bench/patch_bench.sh
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
SONDE=$BUILD/bin/sonde CC_S=$BUILD/bin/sonde-cc
REPS=${REPS:-5} REPS_UF=${REPS_UF:-3}
SQSIZE=${SQSIZE:-30} ZMB=${ZMB:-20} LUAN=${LUAN:-20}
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
W=$(mktemp -d /tmp/sonde-bench.XXXXXX); cd "$W" || exit 1
. "$ROOT/bench/lib.sh"
have_uf=0; command -v uftrace >/dev/null && have_uf=1


measure() { # name plainbin sondeccbin args...
	local name=$1 p=$2 s=$3; shift 3
	local tp tcf tcp tpf tpp tpt tu=nan
	tp=$(median "$REPS" "$p" "$@")
	tcf=$(median "$REPS" env SONDE_BENCH_FLOOR=1 "$SONDE" record -o cf.data -- "$s" "$@")
	tcp=$(median "$REPS" "$SONDE" record -o cp.data -- "$s" "$@")
	tpf=$(median_run "$REPS" pf.data env SONDE_BENCH_FLOOR=1 "$SONDE" record -o pf.data -- "$p" "$@")
	tpp=$(median_run "$REPS" pp.data "$SONDE" record -o pp.data -- "$p" "$@")
	tpt=$(median_run "$REPS" pt.data "$SONDE" record --trace -o pt.data -- "$p" "$@")
	tpw=$(median "$REPS" "$SONDE" record -o pp.data -- "$p" "$@") # the whole run, planning included
	[ $have_uf = 1 ] && tu=$(median "$REPS_UF" uftrace record --no-libcall -P . -d u.data "$p" "$@")
	"$SONDE" report -i cp.data --format=json >cc.json
	"$SONDE" report -i pp.data --format=json >p.json
	"$SONDE" info -i pp.data --format=json >pi.json
	python3 - "$FIXED" "$name" "$tp" "$tcf" "$tcp" "$tpf" "$tpp" "$tpt" "$tu" "$tpw" <<'PY'
import sys, json
fixed = float(sys.argv[1]); name = sys.argv[2]
tp, tcf, tcp, tpf, tpp, tpt, tu, tpw = (float(x) for x in sys.argv[3:11])
cc = sum(f["calls"] for f in json.load(open("cc.json"))["functions"])
pc = sum(f["calls"] for f in json.load(open("p.json"))["functions"])
info = json.load(open("pi.json"))
mod = [m for m in info["modules"] if m["how"] == "patched"]
pl = info["patched"][0] if info["patched"] else {}
# per call: sonde's fixed cost out (the patched runs' planning is out already: median_run)
per = lambda t, n: (t - tp - fixed) / n * 1e9
perp = per
hold = mod[0]["numbering_ns"] / 1e6 if mod else float("nan")
nf = mod[0]["functions"] if mod else 0
print(f"{name:20} {pc:>11} {tp:7.3f} {per(tcf, cc):8.1f} {per(tcp, cc):8.1f} {perp(tpf, pc):8.1f} {perp(tpp, pc):8.1f} "
      f"{perp(tpt, pc):8.1f} {perp(tpp, pc) / per(tcp, cc):6.2f} {perp(tpf, pc) / per(tcf, cc):6.2f} "
      f"{tpw / tu if tu == tu else float('nan'):7.3f} {nf:6} {hold:8.2f} {hold / max(nf, 1) * 1e4:8.1f} {pl.get('plan_ms', 0):8.1f}")
PY
}

# median_run N DIR COMMAND...: median's figure for a patched run, each run's
# planning taken out (sonde info's plan_ms of DIR: once per program, before
# it runs, not a cost per call; it varies from run to run on a loaded machine)
median_run() {
	local n=$1 dir=$2; shift 2
	for _ in $(seq "$n"); do
		/usr/bin/time -f "%e %U %S" -o median.t "$@" >/dev/null 2>&1
		"$SONDE" info -i "$dir" --format=json >median.i 2>/dev/null
		python3 - "${CLOCK:-wall}" <<'PY'
import json, sys
w, u, s = map(float, open("median.t").read().split()[-3:])
try:
    plan = sum(p["plan_ms"] for p in json.load(open("median.i"))["patched"]) / 1e3
except Exception:
    plan = 0.0
print("%.6f" % ((u + s if sys.argv[1] == "cpu" else w) - plan))
PY
	done | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

FIXED=$(python3 -c "print($(median "$REPS" "$SONDE" record --no-patch -o x.data -- /bin/true) - $(median "$REPS" /bin/true))")
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; REPS=$REPS (uftrace $REPS_UF), medians of ${CLOCK:-wall} time; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-20s %11s %7s %8s %8s %8s %8s %8s %6s %6s %7s %6s %8s %8s %8s\n' program calls plain_s cc:floor cc:prof \
	p:floor p:prof p:trace p/cc fl:p/cc p/uf funcs hold_ms ms/10k plan_ms

LUAFLAGS='-Dluai_makeseed(L)=0u -Dl_randomizePivot()=0u -DSTRCACHE_N=1 -DSTRCACHE_M=1'
if sh "$ROOT/tools/fetch-lua.sh" "$cache" >/dev/null 2>&1; then
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-plain cc -g $LUAFLAGS >/dev/null 2>&1
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-sonde "$CC_S" -g $LUAFLAGS >/dev/null 2>&1
	measure "lua bench.lua $LUAN" ./lua-plain ./lua-sonde "$ROOT/tests/progs/bench.lua" "$LUAN"
fi
if sh "$ROOT/tools/fetch-src.sh" sqlite3 "$cache/src" >/dev/null 2>&1; then
	for v in plain:cc sonde:$CC_S; do
		n=${v%%:*} c=${v#*:}
		[ -x "$cache/sqlite-b-$n/speedtest1" ] || sh "$ROOT/tools/build-sqlite.sh" "$cache/src/sqlite3" "$cache/sqlite-b-$n" "$c" >/dev/null 2>&1
	done
	measure "speedtest1 --size $SQSIZE" "$cache/sqlite-b-plain/speedtest1" "$cache/sqlite-b-sonde/speedtest1" --size "$SQSIZE"
fi
bash "$ROOT/tools/gen-data.sh" data.txt "$ZMB"
if sh "$ROOT/tools/fetch-src.sh" zstd "$cache/src" >/dev/null 2>&1; then
	for v in plain:cc sonde:$CC_S; do
		n=${v%%:*} c=${v#*:}
		[ -x "$cache/zstd-b-$n/zstd" ] || sh "$ROOT/tools/build-zstd.sh" "$cache/src/zstd" "$cache/zstd-b-$n" "$c" >/dev/null 2>&1
	done
	measure "zstd -3 ${ZMB}MB" "$cache/zstd-b-plain/zstd" "$cache/zstd-b-sonde/zstd" -3 -q -c -f data.txt
fi
# libc, patched with --module (3,600 functions planned while the program waits) and attached
if [ -x lua-plain ]; then
	"$SONDE" record --module 'libc.so*' -o lc.data -- ./lua-plain "$ROOT/tests/progs/bench.lua" 12 >/dev/null 2>&1
	"$SONDE" info -i lc.data --format=json >lc.json
	./lua-plain "$ROOT/tests/progs/bench.lua" 33 >/dev/null 2>&1 & lp=$!
	sleep 0.3
	"$SONDE" record -p $lp --duration 0.5 -o at.data >/dev/null 2>&1
	kill $lp 2>/dev/null; wait $lp 2>/dev/null
	"$SONDE" info -i at.data --format=json >at.json
	python3 - <<'PY'
import json
for label, f in (("launched, lua + libc (--module)", "lc.json"), ("attached (record -p), lua", "at.json")):
    try:
        d = json.load(open(f))
    except Exception as e:
        print(f"# {label}: no recording ({e})"); continue
    for m in d["modules"]:
        if m["how"] == "patched":
            ms = m["numbering_ns"] / 1e6
            print(f"# patching {label}: {m['path']}: {m['functions']} functions, the program held {ms:.2f} ms "
                  f"({ms / max(m['functions'], 1) * 1e4:.1f} ms per 10,000)")
    for p in d["patched"]:
        print(f"#   planned by sonde: {p['path']}: {p['functions_found']} found, {p['plan_ms']:.1f} ms")
PY
fi
echo "# cc:floor cc:prof p:floor p:prof p:trace: ns per call above plain, sonde's fixed cost ($FIXED s) subtracted"
echo "#   (and from the p: runs sonde's planning, plan_ms: once per program, before it runs);"
echo "# p/cc: patched profile per call / sonde-cc profile per call; fl:p/cc the same for the floor (target <= 1.5);"
echo "# p/uf: patched profile whole run / uftrace -P . whole run (target <= 0.2 on SQLite);"
echo "# hold_ms: the program held while its functions were patched (in-program, sonde's stub building included)"
rm -rf "$W"

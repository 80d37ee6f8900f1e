#!/usr/bin/env bash
# bench/machine_bench.sh — issue 9's table: real programs from Debian source
# (zstd, SQLite's speedtest1, Lua) and fib, each as
#   plain         gcc -O2
#   dormant       the sonde-cc build run without sonde (sleds left as nops)
#   floor         sonde record with SONDE_BENCH_FLOOR=1: control at entry and
#                 exit (sled, trampolines, shadow stack) + one TSC read each
#   profile       sonde record
#   trace         sonde record --trace
#   uftrace       uftrace record --no-libcall on a -pg build of the same source
# side by side in one run, median of REPS runs (REPS_UF for uftrace, the
# slowest).  Per-call figures divide the time above plain by the calls sonde
# counted (equal to uftrace's: tests/e2e/profile_realprogs.sh).  Ratios only;
# never fails on timing.    usage: BUILD=build bash bench/machine_bench.sh
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SONDE=$BUILD/bin/sonde CC_S=$BUILD/bin/sonde-cc
REPS=${REPS:-5} REPS_UF=${REPS_UF:-3}
SQSIZE=${SQSIZE:-50} ZMB=${ZMB:-20} FIBN=${FIBN:-34} LUAN=${LUAN:-22}
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
W=$(mktemp -d /tmp/sonde-bench.XXXXXX); cd "$W" || exit 1
have_uf=0; command -v uftrace >/dev/null && have_uf=1

median() { # REPS command... : median wall seconds
	local n=$1; shift
	for _ in $(seq "$n"); do
		local s e
		s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N)
		awk -v e="$e" -v s="$s" 'BEGIN { printf "%.6f\n", e - s }'
	done | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

row() { # name calls-source-data t_plain t_dormant t_floor t_prof t_trace t_uf
	python3 - "$FIXED" "$@" <<'PY'
import sys, json
fixed, name, data = float(sys.argv[1]), sys.argv[2], sys.argv[3]
tp, td, tf, tr, tt, tu = (float(x) if x != "nan" else float("nan") for x in sys.argv[4:10])
calls = sum(f["calls"] for f in json.load(open(data))["functions"])
per = lambda t: (t - tp - fixed) / calls * 1e9
r = lambda a, b: a / b if b == b and b > 0 else float("nan")
print(f"{name:22} {calls:>11} {tp:8.3f} {td/tp:8.3f}x {tf/tp:7.2f}x {tr/tp:7.2f}x {tt/tp:7.2f}x {tu/tp:8.2f}x"
      f" {per(tf):8.1f} {per(tr):8.1f} {r(per(tr), per(tf)):6.2f} {r(tr, tu):8.3f}")
PY
}

measure() { # name plainbin sondebin pgbin args...
	local name=$1 p=$2 s=$3 g=$4; shift 4
	local tp td tf tr tt tu=nan
	tp=$(median "$REPS" "$p" "$@")
	td=$(median "$REPS" "$s" "$@")
	tf=$(median "$REPS" env SONDE_BENCH_FLOOR=1 "$SONDE" record -o f.data -- "$s" "$@")
	tr=$(median "$REPS" "$SONDE" record -o p.data -- "$s" "$@")
	tt=$(median "$REPS" "$SONDE" record --trace -o t.data -- "$s" "$@")
	[ $have_uf = 1 ] && [ -n "$g" ] && tu=$(median "$REPS_UF" uftrace record --no-libcall -d u.data "$g" "$@")
	"$SONDE" report -i p.data --format=json >calls.json
	row "$name" calls.json "$tp" "$td" "$tf" "$tr" "$tt" "$tu"
}

# sonde record's fixed cost (start, numbering, write-out), subtracted from the per-call figures
FIXED=$(python3 -c "print($(median "$REPS" "$SONDE" record -o x.data -- /bin/true) - $(median "$REPS" /bin/true))")
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; REPS=$REPS (uftrace $REPS_UF), medians"
printf '%-22s %11s %8s %9s %8s %8s %8s %9s %8s %8s %6s %8s\n' program calls plain_s dormant floor profile trace uftrace \
	floor_ns prof_ns /floor prof/uf

bash "$ROOT/tools/gen-data.sh" data.txt "$ZMB"
if sh "$ROOT/tools/fetch-src.sh" zstd "$cache/src" >/dev/null 2>&1; then
	for v in plain:cc sonde:$CC_S pg:cc; do
		n=${v%%:*} c=${v#*:} extra=; [ $n = pg ] && extra=-pg
		[ -x "$cache/zstd-b-$n/zstd" ] || sh "$ROOT/tools/build-zstd.sh" "$cache/src/zstd" "$cache/zstd-b-$n" "$c" $extra >/dev/null 2>&1
	done
	measure "zstd -3 ${ZMB}MB" "$cache/zstd-b-plain/zstd" "$cache/zstd-b-sonde/zstd" "$cache/zstd-b-pg/zstd" -3 -q -c -f data.txt
fi
if sh "$ROOT/tools/fetch-src.sh" sqlite3 "$cache/src" >/dev/null 2>&1; then
	for v in plain:cc sonde:$CC_S pg:cc; do
		n=${v%%:*} c=${v#*:} extra=; [ $n = pg ] && extra=-pg
		[ -x "$cache/sqlite-b-$n/speedtest1" ] || sh "$ROOT/tools/build-sqlite.sh" "$cache/src/sqlite3" "$cache/sqlite-b-$n" "$c" $extra >/dev/null 2>&1
	done
	measure "speedtest1 --size $SQSIZE" "$cache/sqlite-b-plain/speedtest1" "$cache/sqlite-b-sonde/speedtest1" \
		"$cache/sqlite-b-pg/speedtest1" --size "$SQSIZE"
fi
if sh "$ROOT/tools/fetch-lua.sh" "$cache" >/dev/null 2>&1; then
	LUAFLAGS='-Dluai_makeseed(L)=0u -Dl_randomizePivot()=0u -DSTRCACHE_N=1 -DSTRCACHE_M=1'
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-plain cc $LUAFLAGS >/dev/null 2>&1
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-sonde "$CC_S" $LUAFLAGS >/dev/null 2>&1
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-pg cc -pg $LUAFLAGS >/dev/null 2>&1
	measure "lua bench.lua $LUAN" ./lua-plain ./lua-sonde ./lua-pg "$ROOT/tests/progs/bench.lua" "$LUAN"
fi
cc -O2 "$ROOT/bench/fib.c" -o fib-plain && "$CC_S" -O2 "$ROOT/bench/fib.c" -o fib-sonde && cc -O2 -pg "$ROOT/bench/fib.c" -o fib-pg &&
	measure "fib $FIBN" ./fib-plain ./fib-sonde ./fib-pg "$FIBN"
echo "# dormant: sonde build / plain (target <= 1.05); floor, profile, trace, uftrace: whole run / plain;"
echo "# floor_ns, prof_ns: ns per call above plain, sonde record's fixed cost ($FIXED s) subtracted; /floor: profile per call / floor per call (target <= 1.25);"
echo "# prof/uf: sonde record time / uftrace record time (targets: < 1 on zstd, <= 0.2 on SQLite)"
rm -rf "$W"

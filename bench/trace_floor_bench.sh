#!/usr/bin/env bash
# bench/trace_floor_bench.sh — issue 28: trace mode's cost per call against the
# floor, on Lua 5.4 (tests/progs/bench.lua) and SQLite's speedtest1, with an
# older build beside (BUILD_OLD, optional) so that a change is measured as
# before / after in the same run:
#   plain     gcc -O2
#   floor     SONDE_BENCH_FLOOR=1 sonde record (control at entry and exit + one TSC read each)
#   profile   sonde record
#   trace     sonde record --trace (lossless, zstd-compressed: the defaults)
#   uftrace   uftrace record --no-libcall on a -pg build (UF=1; slow)
# for each build.  The variants run interleaved, round after round (REPS
# rounds), and each figure is the median of its rounds: on a shared VM the
# load drifts during a run, and interleaving spreads it over every variant.
# Per-call figures divide the time above plain by the calls the profile
# counted; "x floor" is the per-call figure over the same build's floor.
# Two measures: the wall time of `sonde record` (what a user waits for: the
# recorder's copy and compression included, which runs beside the program on
# the other CPU), and the CPU time of the recorded program alone (user + sys,
# from wait4 in a small launcher): the hot path's cost, less disturbed by the
# other jobs of a shared machine than wall time.
# Ratios only; never fails on timing.
# Also printed: the same from the fastest round of each variant (min), the
# figure least disturbed by the other jobs of a shared machine.
#   usage: BUILD=build [BUILD_OLD=build-old] [REPS=7] [UF=0] [PROGS="lua sqlite fib"]
#          bash bench/trace_floor_bench.sh
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
abs() { case $1 in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }
BUILD=$(abs "$BUILD"); [ -n "${BUILD_OLD:-}" ] && BUILD_OLD=$(abs "$BUILD_OLD")
REPS=${REPS:-7} UF=${UF:-0} SQSIZE=${SQSIZE:-25} LUAN=${LUAN:-22} FIBN=${FIBN:-30} PROGS=${PROGS:-"lua sqlite"}
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
. "$ROOT/bench/lib.sh"
W=$(mktemp -d /tmp/sonde-tfbench.XXXXXX); cd "$W" || exit 1
builds="new:$BUILD"; [ -n "${BUILD_OLD:-}" ] && builds="old:$BUILD_OLD $builds"

wall() { # command... : "wall cpu" seconds of one run (cpu: the launcher's child's, see cpu.c)
	local s e
	rm -f cpu.txt
	s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N)
	awk -v e="$e" -v s="$s" -v c="$(cat cpu.txt 2>/dev/null || echo nan)" 'BEGIN { printf "%.6f %s\n", e - s, c }'
}
cc -O2 "$ROOT/bench/cputime.c" -o cpu || exit 1

run_prog() { # name plainbin sondebin pgbin args...
	local name=$1 p=$2 s=$3 g=$4; shift 4
	: >times.txt
	for r in $(seq "$REPS"); do
		echo "plain $(wall ./cpu "$p" "$@")" >>times.txt
		for b in $builds; do
			local tag=${b%%:*} S=${b#*:}/bin/sonde
			echo "$tag.floor $(wall env SONDE_BENCH_FLOOR=1 "$S" record -o f.data -- ./cpu "$s" "$@")" >>times.txt
			echo "$tag.profile $(wall "$S" record -o p.data -- ./cpu "$s" "$@")" >>times.txt
			echo "$tag.trace $(wall "$S" record --trace -o t-$tag.data -- ./cpu "$s" "$@")" >>times.txt
			echo "$tag.fixed $(wall "$S" record -o x.data -- ./cpu /bin/true)" >>times.txt
		done
		echo "true $(wall ./cpu /bin/true)" >>times.txt
		[ "$UF" = 1 ] && [ -n "$g" ] && [ "$r" -le 3 ] && echo "uftrace $(wall uftrace record --no-libcall -d u.data "$g" "$@")" >>times.txt
		:
	done
	"$BUILD/bin/sonde" report -i p.data --format=json >calls.json
	for b in $builds; do du -sb "t-${b%%:*}.data" | cut -f1 >"bytes-${b%%:*}"; done
	python3 - "$name" "$builds" <<'PY'
import sys, json, statistics as st
name, builds = sys.argv[1], sys.argv[2].split()
W, C, rounds = {}, {}, []
for l in open("times.txt"):
    k, w, c = l.split(); W.setdefault(k, []).append(float(w)); C.setdefault(k, []).append(float(c))
    if k == "plain":
        rounds.append({})
    rounds[-1][k] = float(c)
calls = sum(f["calls"] for f in json.load(open("calls.json"))["functions"])
for what, T, f in (("wall", W, st.median), ("cpu", C, st.median), ("wall", W, min), ("cpu", C, min)):
    med = {k: f(v) for k, v in T.items()}
    what = what if f is st.median else what + "/min"
    tp = med["plain"]
    for b in builds:
        tag = b.split(":")[0]
        fixed = med[tag + ".fixed"] - med["true"]
        per = {m: (med[f"{tag}.{m}"] - tp - fixed) / calls * 1e9 for m in ("floor", "profile", "trace")}
        nbytes = int(open(f"bytes-{tag}").read())
        print(f"{name:24} {what:8} {tag:4} {calls:>10} {tp:7.3f} {per['floor']:8.1f} {per['profile']:8.1f} {per['trace']:8.1f}"
              f" {per['profile']/per['floor']:7.2f}x {per['trace']/per['floor']:7.2f}x"
              + f" {nbytes/calls:6.2f}"
              + (f" {(med['uftrace']-tp)/calls*1e9:9.1f}" if what == "wall" and "uftrace" in med and tag == "new" else ""))
# Paired: each round's own figures (its plain, its fixed cost, its floor) over
# the same round's floor, then the median of the rounds' ratios: a drift of the
# machine between rounds cancels, which the medians of each variant above do not.
for b in builds:
    tag = b.split(":")[0]
    pr = {m: [] for m in ("floor", "profile", "trace")}
    for R in rounds:
        fixed = R[tag + ".fixed"] - R["true"]
        for m in pr:
            pr[m].append((R[f"{tag}.{m}"] - R["plain"] - fixed) / calls * 1e9)
    rp = st.median([p / f for p, f in zip(pr["profile"], pr["floor"])])
    rt = st.median([t / f for t, f in zip(pr["trace"], pr["floor"])])
    print(f"{name:24} {'cpu/pair':8} {tag:4} {calls:>10} {'':7} {st.median(pr['floor']):8.1f} {st.median(pr['profile']):8.1f} {st.median(pr['trace']):8.1f}"
          f" {rp:7.2f}x {rt:7.2f}x")
PY
}

echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); REPS=$REPS, medians of interleaved rounds; $(date -u +%FT%TZ)"
printf '%-24s %-8s %-4s %10s %7s %8s %8s %8s %8s %8s %6s %9s\n' program time bld calls plain_s floor_ns prof_ns trace_ns prof/fl trace/fl B/call uf_ns
for prog in $PROGS; do
case $prog in
lua)
	sh "$ROOT/tools/fetch-lua.sh" "$cache" >/dev/null 2>&1 || continue
	LUAFLAGS='-Dluai_makeseed(L)=0u -Dl_randomizePivot()=0u -DSTRCACHE_N=1 -DSTRCACHE_M=1'
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-plain cc $LUAFLAGS >/dev/null 2>&1
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-sonde "$BUILD/bin/sonde-cc" $LUAFLAGS >/dev/null 2>&1
	pg=; [ "$UF" = 1 ] && sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-pg cc -pg $LUAFLAGS >/dev/null 2>&1 && pg=./lua-pg
	run_prog "lua bench.lua $LUAN" ./lua-plain ./lua-sonde "$pg" "$ROOT/tests/progs/bench.lua" "$LUAN" ;;
sqlite)
	sqlite_builds "$cache" "$BUILD/bin/sonde-cc" "$([ "$UF" = 1 ] && echo pg)" || continue
	pg=; [ "$UF" = 1 ] && pg=$cache/sqlite-b-pg/speedtest1
	run_prog "speedtest1 --size $SQSIZE" "$cache/sqlite-b-plain/speedtest1" "$cache/sqlite-b-sonde/speedtest1" "$pg" --size "$SQSIZE" ;;
fib)
	cc -O2 "$ROOT/bench/fib.c" -o fib-plain && "$BUILD/bin/sonde-cc" -O2 "$ROOT/bench/fib.c" -o fib-sonde || continue
	pg=; [ "$UF" = 1 ] && cc -O2 -pg "$ROOT/bench/fib.c" -o fib-pg && pg=./fib-pg
	run_prog "fib $FIBN" ./fib-plain ./fib-sonde "$pg" "$FIBN" ;;
esac
done
echo "# time: wall = sonde record's wall time, cpu = the recorded program's CPU time (user + sys); /min: from the fastest round; cpu/pair: medians of each round's own figures and ratios (the round's plain, fixed cost and floor)"
echo "# *_ns: ns per call above plain (sonde record's fixed cost on /bin/true subtracted); prof/fl, trace/fl: per call over the same build's floor (target <= 1.25); B/call: the trace's sonde.data bytes per call"
rm -rf "$W"

#!/usr/bin/env bash
# bench/profile_bench.sh — per-call overhead of sonde's profile and trace modes
# against the plain build, empty -finstrument-functions hooks, gprof (-pg) and
# uftrace, on fib (micro) and on Debian's Lua running tests/progs/bench.lua
# (real program).  All variants run side by side in one invocation; each is
# run REPS times and the fastest wall time is kept.  Prints ratios; never fails
# on timing.   usage: BUILD=build bash bench/profile_bench.sh
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SONDE=$BUILD/bin/sonde CC_S=$BUILD/bin/sonde-cc
REPS=${REPS:-5} FIBN=${FIBN:-32} LUAN=${LUAN:-22}
W=$(mktemp -d /tmp/sonde-bench.XXXXXX); cd "$W"
INSTR="-finstrument-functions -fno-omit-frame-pointer -fno-optimize-sibling-calls"
have_uftrace=0; command -v uftrace >/dev/null && have_uftrace=1

best() { # best wall seconds of REPS runs of "$@"
	local b=999999
	for _ in $(seq "$REPS"); do
		local s e
		s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N)
		b=$(python3 -c "print(min($b, $e - $s))")
	done
	echo "$b"
}

# Each variant is timed on the real run and on a tiny one (SMALL arguments);
# the difference removes the tool's fixed start-up and write-out cost, so the
# per-call figures compare the cost of a call only.
delta() { # small-args-string command... : best(big) - best(small)
	local small=$1; shift
	local n=$# big small_t
	big=$(best "$@")
	local args=("$@")
	unset "args[$((n - 1))]"
	small_t=$(best "${args[@]}" $small)
	python3 -c "print($big - $small_t)"
}

run_set() { # name calls small plain empty sondebin pgbin ufbin args... (last arg is the size)
	local name=$1 calls=$2 small=$3 plain=$4 empty=$5 sb=$6 pg=$7 uf=$8; shift 8
	local tp te td ts tt tg tu=""
	tp=$(delta "$small" ./$plain "$@")
	te=$(delta "$small" ./$empty "$@")
	td=$(delta "$small" ./$sb "$@")
	ts=$(delta "$small" "$SONDE" record -o p.data -- ./$sb "$@")
	tt=$(delta "$small" "$SONDE" record --trace -o t.data -- ./$sb "$@")
	tg=$(delta "$small" ./$pg "$@")
	[ $have_uftrace = 1 ] && tu=$(delta "$small" uftrace record -d u.data ./$uf "$@")
	"$SONDE" record --trace -o t.data -- ./$sb "$@" >/dev/null 2>&1
	local tb
	tb=$(python3 -c "import json;d=json.load(open('/dev/stdin'));print(d['event_bytes'])" < <("$SONDE" info -i t.data --format=json))
	python3 - "$name" "$calls" "$tp" "$te" "$td" "$ts" "$tt" "$tg" "${tu:-nan}" "$tb" <<'PY'
import sys
name, calls = sys.argv[1], float(sys.argv[2])
tp, te, td, ts, tt, tg, tu, tb = map(float, sys.argv[3:11])
def per(t): return (t - tp) / calls * 1e9
print(f"\n== {name}: {int(calls)} instrumented calls per run (best of runs, wall time minus the same tool's tiny run) ==")
print(f"{'variant':38} {'seconds':>9} {'ns/call':>9}")
for label, t in [("plain build", tp), ("-finstrument-functions, empty hooks", te), ("sonde-cc build, not recorded (dormant)", td),
                 ("sonde record (profile)", ts), ("sonde record --trace", tt), ("gprof (-pg build, sampling)", tg),
                 ("uftrace record", tu)]:
    print(f"{label:38} {t:9.3f} {per(t):9.1f}")
if tu == tu:
    print(f"ratio uftrace/sonde-profile per call: {per(tu)/max(per(ts),1e-9):.1f}x   uftrace/sonde-trace: {per(tu)/max(per(tt),1e-9):.1f}x")
print(f"trace bytes stored per call: {tb/calls:.2f}")
PY
}

cp "$ROOT/bench/fib.c" "$ROOT/bench/empty_hooks.c" .
cc -O2 fib.c -o fib-plain
cc -O2 $INSTR fib.c empty_hooks.c -o fib-empty
"$CC_S" -O2 fib.c -o fib-sonde
cc -O2 -pg fib.c -o fib-pg
cc -O2 $INSTR fib.c -o fib-uf
"$SONDE" record -o c.data -- ./fib-sonde "$FIBN" >/dev/null 2>&1
calls=$("$SONDE" report -i c.data --format=json | python3 -c "import json,sys;print(sum(f['calls'] for f in json.load(sys.stdin)['functions']))")
run_set "fib($FIBN)" "$calls" 1 fib-plain fib-empty fib-sonde fib-pg fib-uf "$FIBN"

cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
if sh "$ROOT/tools/fetch-lua.sh" "$cache" >/dev/null 2>&1; then
	LF='-Dluai_makeseed(L)=0u -Dl_randomizePivot()=0u -DSTRCACHE_N=1 -DSTRCACHE_M=1'
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-plain cc $LF
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-empty cc $INSTR $LF -include /dev/null
	cc -O2 -c empty_hooks.c -o eh.o && cc -o lua-empty lua-empty.obj/*.o eh.o -lm -ldl
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-sonde "$CC_S" $LF
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-pg cc -pg $LF
	sh "$ROOT/tools/build-lua.sh" "$cache/lua" lua-uf cc $INSTR $LF
	"$SONDE" record -o c.data -- ./lua-sonde "$ROOT/tests/progs/bench.lua" "$LUAN" >/dev/null 2>&1
	calls=$("$SONDE" report -i c.data --format=json | python3 -c "import json,sys;print(sum(f['calls'] for f in json.load(sys.stdin)['functions']))")
	run_set "Lua 5.4 bench.lua $LUAN" "$calls" 0 lua-plain lua-empty lua-sonde lua-pg lua-uf "$ROOT/tests/progs/bench.lua" "$LUAN"
	"$SONDE" info -i c.data --format=json | python3 -c "
import json,sys; d=json.load(sys.stdin)
print(f\"memory: {d['cct_nodes']} calling-context nodes x 32 bytes = {d['cct_nodes']*32/1024:.0f} KiB; per thread fixed: shadow stack 2048 x 48 bytes = 96 KiB + 4 bytes per function per module used\")"
else
	echo "(Lua benchmark skipped: could not fetch Debian's lua5.4 source)"
fi
rm -rf "$W"

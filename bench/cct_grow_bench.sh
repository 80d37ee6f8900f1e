#!/usr/bin/env bash
# bench/cct_grow_bench.sh — issue 41: what growing a calling-context node
# pool costs (rt/cct_grow.c).  tests/progs/contexts.c makes 12 + ... + 12^D
# distinct contexts in one thread and prints the CPU time it took
# ("cpu_ns", its own clock: the recorder's work is not in it).  Recorded with
# the default start pool (--buffer-size 16M: it grows, doubling, `steps`
# times) and with a start pool that holds every node (no growth), runs
# interleaved; the fastest of RUNS each.  The difference over the steps is a
# step's cost (a new pool taken, the nodes so far copied, the old pool given
# back); over the MiB copied, the cost of a MiB.  Figures only, never fails.
#   usage: BUILD=build [D=6] [RUNS=5] bash bench/cct_grow_bench.sh
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
D=${D:-6} RUNS=${RUNS:-5}
W=$(mktemp -d /tmp/sonde-grow.XXXXXX); cd "$W" || exit 1
trap 'rm -rf "$W"' EXIT
"$BUILD/bin/sonde-cc" -O2 -pthread -I"$ROOT/tests/progs" "$ROOT/tests/progs/contexts.c" -o contexts || exit 1
nodes=0 steps=0 grown=
big=$(awk -v d="$D" 'BEGIN { n = 0; p = 12; for (l = 0; l < d; l++) { n += p; p *= 12 } printf "%d", (n + 1000) * 32 * 2 }')
run() { # label, sonde options...: the program's cpu_ns
	local l=$1; shift
	"$BUILD/bin/sonde" record -o g.data "$@" -- ./contexts 1 "$D" >g.out 2>g.err || { echo "$l: failed: $(tail -2 g.err)" >&2; exit 1; }
	awk '$1 == "cpu_ns" {print $2}' g.out
}
best_g= best_n=
for r in $(seq "$RUNS"); do
	g=$(run grow) && [ -z "$best_g" -o "${g:-0}" -lt "${best_g:-0}" ] && best_g=$g
	[ -z "$grown" ] && grown=$("$BUILD/bin/sonde" info -i g.data --format=json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["cct_nodes"], d.get("session", {}).get("cct_grow_steps", 0))')
	n=$(run nogrow --buffer-size "$big") && [ -z "$best_n" -o "${n:-0}" -lt "${best_n:-0}" ] && best_n=$n
done
read -r nodes steps <<<"$grown"
awk -v g="$best_g" -v n="$best_n" -v s="$steps" -v nodes="$nodes" -v big="$big" 'BEGIN {
	start = int((16 * 1048576 - 102400) / 32); copied = 0; c = start
	for (i = 0; i < s; i++) { copied += c; c *= 2 }
	printf "# %d contexts in one thread; fastest of the runs, the program'\''s own CPU time\n", nodes
	printf "grows %d times (16M start): %.1f ms\n", s, g / 1e6
	printf "no growth (--buffer-size %d): %.1f ms\n", big, n / 1e6
	if (s > 0) printf "a step: %.2f ms (%.1f MiB of nodes copied in all: %.2f ms a MiB)\n", (g - n) / s / 1e6,
	    copied * 32 / 1048576, (g - n) / 1e6 / (copied * 32 / 1048576)
}'

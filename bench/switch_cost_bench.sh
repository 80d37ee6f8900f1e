#!/usr/bin/env bash
# bench/switch_cost_bench.sh — issue 38: what a recorded call that spans a
# context switch costs, the build before beside this one in one run.  Each
# hook after a switch of its thread takes the thread's off-CPU time again
# (two clock_gettime system calls) and, since the runnable / blocked split,
# reads the kernel's switch records from the thread's ring.  bench/switch_cost.c:
# two threads pinned to one CPU pass a byte over two pipes; each side's turn
# is a call that blocks in read(), so every call spans a switch.  Per build:
# plain gcc -O2 (no sonde), and `sonde record` of its sonde-cc build; RUNS
# runs interleaved, the median of each run's median batch, ns per round
# trip (two calls, four switches).  Ratios only; never fails on timing.
#   usage: BUILD=build [BUILD_OLD=build-old] [N=20000] [RUNS=7] bash bench/switch_cost_bench.sh
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
abs() { case $1 in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }
BUILD=$(abs "$BUILD"); [ -n "${BUILD_OLD:-}" ] && BUILD_OLD=$(abs "$BUILD_OLD")
N=${N:-20000} RUNS=${RUNS:-7}
W=$(mktemp -d /tmp/sonde-switchcost.XXXXXX); cd "$W" || exit 1
gcc -O2 -pthread "$ROOT/bench/switch_cost.c" -o plain || exit 1
builds="new"; "$BUILD/bin/sonde-cc" -O2 -pthread "$ROOT/bench/switch_cost.c" -o sc-new || exit 1
if [ -n "${BUILD_OLD:-}" ]; then
	"$BUILD_OLD/bin/sonde-cc" -O2 -pthread "$ROOT/bench/switch_cost.c" -o sc-old || exit 1
	builds="old new"
fi
median_of() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for r in $(seq "$RUNS"); do
	taskset -c 0 ./plain "$N" | awk '{print $4}' >> plain.ns
	for b in $builds; do
		B=$BUILD; [ "$b" = old ] && B=$BUILD_OLD
		taskset -c 0 "$B/bin/sonde" record -o "rec-$b" -- "./sc-$b" "$N" 2>/dev/null | awk '{print $4}' >> "$b.ns"
	done
done
p=$(median_of < plain.ns)
echo "round trip (2 calls, 4 switches), ns, median of $RUNS runs; N=$N"
printf "  %-28s %10.1f\n" "plain (no sonde)" "$p"
for b in $builds; do
	v=$(median_of < "$b.ns")
	printf "  %-28s %10.1f   +%.1f ns a call over plain\n" "sonde record, $b build" "$v" "$(echo "($v - $p) / 2" | bc -l)"
done
"$BUILD/bin/sonde" report -i rec-new --format=json > rep.json
python3 - <<'PY'
import json
for f in json.load(open("rep.json"))["functions"]:
    if f["name"] in ("ask", "serve"):
        run = f.get("inclusive_runnable_ns")
        print(f"  new build: {f['name']}: {f['calls']} calls, {f['inclusive_ns'] / 1e6:.1f} ms, on a CPU "
              f"{f['inclusive_cpu_ns'] / 1e6:.1f} ms, runnable {'-' if run is None else round(run / 1e6, 1)} ms")
PY
rm -rf "$W"

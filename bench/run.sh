#!/usr/bin/env bash
# bench/run.sh — every benchmark, side by side; ratios, never pass/fail.
: "${BUILD:?}"
here=$(cd "$(dirname "$0")" && pwd)
for b in machine_bench.sh trace_floor_bench.sh trace_insns.sh hook_ticks_bench.sh trace_misses.sh trace_pin_bench.sh numbering_bench.sh trace_bench.sh compress_bench.sh locks_bench.sh probe_bench.sh attach_bench.sh remote_bench.sh system_probe_bench.sh kernel_probe_bench.sh; do
	[ -f "$here/$b" ] || continue
	echo "######## $b"
	bash "$here/$b" || echo "($b failed)"
done
# issue 28's micro-benchmark: the replaced return address against an exit sled
echo "######## ret_bench.c"
w=$(mktemp -d) && cc -O2 "$here/ret_bench.c" -o "$w/ret_bench" && "$w/ret_bench" 20000000 9
rm -rf "$w"

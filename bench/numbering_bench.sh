#!/usr/bin/env bash
# bench/numbering_bench.sh — program start-up cost of numbering: a generated
# program with NF (default 100000) instrumented functions, run under sonde;
# `sonde info` reports the time the module constructor spent writing numbers
# and tags into the padding, and the whole start-up is timed against the same
# program not recorded.  usage: BUILD=build bash bench/numbering_bench.sh
set -u
: "${BUILD:?}"
NF=${NF:-100000} FILES=20
W=$(mktemp -d /tmp/sonde-numbering.XXXXXX); cd "$W"
per=$((NF / FILES))
for f in $(seq 0 $((FILES - 1))); do
	{ for i in $(seq 0 $((per - 1))); do echo "int f${f}_$i(int x) { return x + $i; }"; done; } >g$f.c
done
{ echo "#include <stdio.h>"; echo "int f0_0(int);"; echo "int main(void) { printf(\"%d\\n\", f0_0(1)); return 0; }"; } >main.c
for f in $(seq 0 $((FILES - 1))); do "$BUILD/bin/sonde-cc" -O0 -c g$f.c -o g$f.o & done; wait
"$BUILD/bin/sonde-cc" -O0 main.c g*.o -o many
s=$(date +%s.%N); ./many >/dev/null; e=$(date +%s.%N)
"$BUILD/bin/sonde" record -o n.data -- ./many >/dev/null 2>&1
"$BUILD/bin/sonde" info -i n.data --format=json | python3 -c "
import json,sys; d=json.load(sys.stdin)
print(f\"numbering {d['functions']} functions at start-up: {d['numbering_ns']/1e6:.2f} ms (target <= 50 ms for 100k); plain start-up {($e-$s)*1e3:.1f} ms\")"
rm -rf "$W"

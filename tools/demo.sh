#!/usr/bin/env bash
# tools/demo.sh — `make demo`: build the bundled example (seed 002's worked
# example: main, A, B, C, E, F, G with known amounts of work) with sonde-cc,
# record it, and show the flat profile, the attributed view of C and the tree.
set -eu
: "${BUILD:?}"
root=$(cd "$(dirname "$0")/.." && pwd)
d=$BUILD/demo
mkdir -p "$d"
cd "$d"
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
say "sonde-cc -O2 -g tests/progs/seed002.c -o seed002"
"$BUILD/bin/sonde-cc" -O2 -g "$root/tests/progs/seed002.c" -o seed002
say "sonde record -- ./seed002 10        # 1 unit of work = 10 ms"
"$BUILD/bin/sonde" record -- ./seed002 10
say "sonde report"
"$BUILD/bin/sonde" report
say "sonde callers-callees C             # seed 002: callers A 10, B 15; callees E 10, F 10; C itself 5 (units)"
"$BUILD/bin/sonde" callers-callees C
say "sonde tree"
"$BUILD/bin/sonde" tree
echo
echo "The recording is in $d/sonde.data; try 'sonde export --format=callgrind -o callgrind.out' there,"
echo "or 'sonde record --trace' then 'sonde export --format=perfetto -o trace.pftrace' (open in ui.perfetto.dev)."

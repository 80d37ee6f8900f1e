#!/usr/bin/env bash
# src_includes.sh — no include cycle among the units of src/ (a header and the
# .c file of the same name, tests/check_includes.py); and the checker itself
# finds a cycle when there is one, and passes a tree without.
source "$ROOT/tests/lib.sh"

command -v python3 > /dev/null || { skip "include cycles" "no python3"; exit 0; }
checker="$ROOT/tests/check_includes.py"

# --- the checker on small trees: a cycle through a .c file, then none
mkdir -p cyc/src/a cyc/include/sonde
printf '#include "a/y.h"\n#include "sonde/pub.h"\n' > cyc/src/a/x.h
printf '/* y.h */\n' > cyc/src/a/y.h
printf '#include "a/y.h"\n#include "a/x.h"\n' > cyc/src/a/y.c
printf '#include "a/y.h"\n' > cyc/include/sonde/pub.h
printf '#include "a/x.h"\n' > cyc/src/a/main.c
python3 "$checker" cyc > cyc.out 2>&1
rc=$?
check "checker fails on a cycle (exit 1)" test "$rc" -eq 1
check "checker names the cycle" grep -q '^not ok - include cycles: 1 .*: a/x -> a/y -> a/x$' cyc.out
check "checker names the include behind each step" grep -q 'a/y -> a/x: src/a/y.c:2 includes "a/x.h"' cyc.out
printf '/* #include "a/x.h" in a comment does not count */\n' > cyc/src/a/y.c
python3 "$checker" cyc > nocyc.out 2>&1
rc=$?
check "checker passes without a cycle (exit 0)" test "$rc" -eq 0
check "checker counts the units" grep -q '^ok - no include cycle among the units of src/ (3 units)$' nocyc.out

# --- this checkout
python3 "$checker" "$ROOT"
exit 0

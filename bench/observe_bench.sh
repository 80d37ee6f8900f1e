#!/usr/bin/env bash
# bench/observe_bench.sh — what observe.c's and context.c's wrappers cost
# (issue 27), side by side in one run, never pass/fail: ns per backtrace()
# call (DEPTH instrumented frames deep: every frame's return address put
# back, the walk, every one hooked again), us per thread that ends 10
# instrumented frames deep, by returning or by pthread_exit (the real
# return addresses put back before the unwinding; the runtime's TSD
# destructor closing what the unwinding left, its rounds), and ns per
# swapcontext between two contexts DEPTH instrumented frames deep (each
# switch takes the leaving one's frames off the shadow stack and puts the
# other's back); the sonde-cc build run plain (dormant) and under `sonde
# record`.  Each figure is the median of REPS runs, in CPU time (the
# program's own clock_gettime(CLOCK_PROCESS_CPUTIME_ID)).  With BASE=DIR (the
# build directory of another tree, say the commit before a change), the same
# program recorded by DIR's sonde (its runtime: sonde record preloads it) is
# a third column, run in turn with the others.
# Usage: BUILD=build [BASE=dir] [DEPTH=20] [REPS=5] bash bench/observe_bench.sh [BACKTRACE_CALLS [THREADS [SWITCHES]]]
set -u
BUILD=${BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SONDE=$BUILD/bin/sonde
CALLS=${1:-200000}
THREADS=${2:-2000}
SWITCHES=${3:-400000}
DEPTH=${DEPTH:-20}
REPS=${REPS:-5}
W=$(mktemp -d /tmp/sonde-observe-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
"$BUILD/bin/sonde-cc" -O2 -g "$ROOT/bench/observe_prog.c" -o prog -lpthread || exit 1
for r in $(seq "$REPS"); do
	./prog "$CALLS" "$THREADS" "$DEPTH" "$SWITCHES" >"plain.$r"
	"$SONDE" record -o rec -- ./prog "$CALLS" "$THREADS" "$DEPTH" "$SWITCHES" >"rec.$r" 2>/dev/null
	if [ -n "${BASE:-}" ]; then
		"$BASE/bin/sonde" record -o base -- ./prog "$CALLS" "$THREADS" "$DEPTH" "$SWITCHES" >"base.$r" 2>/dev/null
	fi
done
python3 - "$REPS" "${BASE:+1}" <<'PY'
import statistics, sys
reps = int(sys.argv[1])
base = len(sys.argv) > 2 and sys.argv[2] == "1"
def med(kind, key):
    v = []
    for r in range(1, reps + 1):
        for line in open(f"{kind}.{r}"):
            k, x = line.split()
            if k == key:
                v.append(float(x))
    return statistics.median(v)
print(f"{'figure':28} {'plain':>10} {'recorded':>10} {'ratio':>7}" + (f" {'BASE':>10} {'ratio':>7}" if base else ""))
for key, unit in (("backtrace_ns", "ns"), ("thread_return_us", "us"), ("thread_pthread_exit_us", "us"),
                  ("swapcontext_ns", "ns")):
    p, s = med("plain", key), med("rec", key)
    line = f"{key:28} {p:>9.2f}{unit[0]} {s:>9.2f}{unit[0]} {s / p:>6.2f}x"
    if base:
        b = med("base", key)
        line += f" {b:>9.2f}{unit[0]} {b / p:>6.2f}x"
    print(line)
# what ending by pthread_exit adds to a thread's life (its unwinding, and
# recorded, the wrapper): the recorded thread's own cost (its slot, its
# region) is in both and cancels out
d = [med(k, "thread_pthread_exit_us") - med(k, "thread_return_us") for k in ("plain", "rec") + (("base",) if base else ())]
print(f"{'pthread_exit - return':28} {d[0]:>9.2f}u {d[1]:>9.2f}u" + (f" {'':>7} {d[2]:>9.2f}u" if base else ""))
PY

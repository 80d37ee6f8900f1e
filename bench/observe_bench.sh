#!/usr/bin/env bash
# bench/observe_bench.sh — what observe.c's wrappers cost (issue 27), side
# by side in one run, never pass/fail: ns per backtrace() call (20
# instrumented frames deep: every frame's return address put back, the
# walk, every one hooked again) and us per thread that ends 10 instrumented
# frames deep, by returning or by pthread_exit (the real return addresses
# put back before the unwinding); the sonde-cc build run plain (dormant) and
# under `sonde record`.  Each figure is the median of REPS runs, in CPU
# time (the program's own clock_gettime(CLOCK_PROCESS_CPUTIME_ID)).
# Usage: BUILD=build bash bench/observe_bench.sh [BACKTRACE_CALLS [THREADS]]
set -u
BUILD=${BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SONDE=$BUILD/bin/sonde
CALLS=${1:-200000}
THREADS=${2:-2000}
REPS=${REPS:-5}
W=$(mktemp -d /tmp/sonde-observe-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
"$BUILD/bin/sonde-cc" -O2 -g "$ROOT/bench/observe_prog.c" -o prog -lpthread || exit 1
for r in $(seq "$REPS"); do
	./prog "$CALLS" "$THREADS" >"plain.$r"
	"$SONDE" record -o rec -- ./prog "$CALLS" "$THREADS" >"rec.$r" 2>/dev/null
done
python3 - "$REPS" <<'PY'
import statistics, sys
reps = int(sys.argv[1])
def med(kind, key):
    v = []
    for r in range(1, reps + 1):
        for line in open(f"{kind}.{r}"):
            k, x = line.split()
            if k == key:
                v.append(float(x))
    return statistics.median(v)
print(f"{'figure':28} {'plain':>10} {'recorded':>10} {'ratio':>7}")
for key, unit in (("backtrace_ns", "ns"), ("thread_return_us", "us"), ("thread_pthread_exit_us", "us")):
    p, s = med("plain", key), med("rec", key)
    print(f"{key:28} {p:>9.2f}{unit[0]} {s:>9.2f}{unit[0]} {s / p:>6.2f}x")
# what ending by pthread_exit adds to a thread's life (its unwinding, and
# recorded, the wrapper): the recorded thread's own cost (its slot, its
# region) is in both and cancels out
d = [med(k, "thread_pthread_exit_us") - med(k, "thread_return_us") for k in ("plain", "rec")]
print(f"{'pthread_exit - return':28} {d[0]:>9.2f}u {d[1]:>9.2f}u")
PY

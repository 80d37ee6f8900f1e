#!/usr/bin/env bash
# bench/session_bench.sh — where the session memory lives, side by side in
# one run, never pass/fail: the same recordings with the session on a memfd
# (SONDE_SESSION_DIR=memfd, what sonde did before) and on a tmpfs file
# (/dev/shm, the default: it survives a killed sonde), alternating, fastest
# of REPS each:
#  - `record -- ./fib 36` and `record --trace -- ./fib 33`: wall and CPU
#    (the ratio is of CPU: wall follows the machine's load);
#  - the first touch of session pages, charged to the function running then:
#    main's exclusive time in `touch` (main makes one call of a 10 ms sleep:
#    all of main's own time is the runtime's first touches), the median over
#    REPS runs.
# Optional: SESSION_DISK=DIR adds a column with the session in DIR (a disk
# file system, as the reverted DIR/session.shm was).
# Usage: BUILD=build REPS=5 bash bench/session_bench.sh
set -u
BUILD=$(cd "${BUILD:-$(dirname "$0")/../build}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SONDE=$BUILD/bin/sonde
REPS=${REPS:-5}
W=$(mktemp -d /tmp/sonde-session-bench.XXXXXX)
cd "$W" || exit 1
. "$ROOT/bench/lib.sh"
"$BUILD/bin/sonde-cc" -O2 "$ROOT/bench/fib.c" -o fib || exit 1
cat >touch.c <<'C'
#include <unistd.h>
__attribute__((noipa)) void nap(void) { usleep(10000); }
int main(void)
{
	nap();
	return 0;
}
C
"$BUILD/bin/sonde-cc" -O2 touch.c -o touch || exit 1

kinds="memfd /dev/shm"
[ -n "${SESSION_DISK:-}" ] && kinds="$kinds $SESSION_DISK"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "REPS=$REPS, fastest wall and CPU in s (touch: median of main's exclusive time in us)"
declare -A res
for what in "profile fib 36" "trace fib 33" "touch"; do
	for _ in 1 2; do # two alternating rounds: a burst of load does not favour one kind
		for k in $kinds; do
			case "$what" in
			"profile fib 36") r=$(SONDE_SESSION_DIR=$k fastest "$SONDE" record -o d -- ./fib 36) ;;
			"trace fib 33") r=$(SONDE_SESSION_DIR=$k fastest "$SONDE" record --trace -o d -- ./fib 33) ;;
			touch)
				r=$(for _ in $(seq 1 "$REPS"); do
					SONDE_SESSION_DIR=$k "$SONDE" record -o d -- ./touch >/dev/null 2>&1
					"$SONDE" report -i d --format=json | python3 -c "import json,sys; print([f['exclusive_ns'] for f in json.load(sys.stdin)['functions'] if f['name']=='main'][0])"
				done | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}') ;;
			esac
			prev=${res["$what|$k"]:-}
			# keep the better of the two rounds
			res["$what|$k"]=$(python3 -c "
a='$prev'.split(); b='$r'.split()
print(' '.join(str(round(float(x), 2)) for x in (b if not a or float(b[0]) < float(a[0]) else a)))")
		done
	done
	line="$what:"
	for k in $kinds; do line="$line  $k ${res["$what|$k"]}"; done
	base=${res["$what|memfd"]##* }; shm=${res["$what|/dev/shm"]##* } # CPU (touch: its one figure)
	echo "$line  (ratio /dev/shm:memfd $(python3 -c "print(f'{$shm/$base:.2f}')"))"
done
rm -rf "$W"

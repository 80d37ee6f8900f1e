#!/usr/bin/env bash
# probe_bench.sh — cost per hit of a breakpoint probe on a tight loop, side by
# side in one run: sonde probe (one breakpoint: line:hot; and func:hot, two
# breakpoints per call), gdb (break + commands/silent/continue), and kernel
# uprobes through `perf probe` + `perf stat` when usable (root, tracefs).
# Prints ratios; never fails on timing.
#   BUILD=build bash bench/probe_bench.sh [N]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$root/build}
SONDE=${SONDE:-$BUILD/bin/sonde}
N=${1:-20000}
GDB_N=${GDB_N:-$((N / 4))}
UP_N=${UP_N:-$((N * 10))}
tmp=$(mktemp -d /tmp/sonde-probe-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
gcc -O2 -g -o "$tmp/target" "$root/bench/probe_target.c" || exit 1
t() { python3 - "$@" <<'PY'
import subprocess, sys, time
best = None
for _ in range(3):
    t0 = time.perf_counter()
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d = time.perf_counter() - t0
    best = d if best is None or d < best else best
print("%.6f" % best)
PY
}
per_hit() { python3 -c "print('%.3f' % max(0.0, ($1 - $2) / $3 * 1e6))"; }

plain=$(t "$tmp/target" "$N")
plain_g=$(t "$tmp/target" "$GDB_N")
plain_u=$(t "$tmp/target" "$UP_N")
s_line=$(t "$SONDE" probe -e line:hot -o /dev/null -- "$tmp/target" "$N")
s_func=$(t "$SONDE" probe -e func:hot -o /dev/null -- "$tmp/target" "$N")
us_line=$(per_hit "$s_line" "$plain" "$N")
us_func=$(per_hit "$s_func" "$plain" "$N")
echo "loop of N=$N calls to hot(); plain run $(python3 -c "print('%.1f' % ($plain*1e3))") ms"
echo "sonde line:hot (1 breakpoint/call):   $us_line us per hit"
echo "sonde func:hot (entry+exit, per call): $us_func us per call"

if command -v gdb >/dev/null; then
	cat > "$tmp/g.gdb" <<'G'
set pagination off
break hot
commands 1
silent
continue
end
run
quit
G
	g=$(t gdb -q -batch -x "$tmp/g.gdb" --args "$tmp/target" "$GDB_N")
	us_g=$(per_hit "$g" "$plain_g" "$GDB_N")
	echo "gdb break+commands silent continue:  $us_g us per hit (N=$GDB_N)"
	python3 -c "print('ratio gdb / sonde per hit: %.1fx' % ($us_g / $us_line if $us_line > 0 else float('inf')))"
else
	echo "gdb: not installed"
fi

if command -v perf >/dev/null && [ "$(id -u)" = 0 ] &&
	{ perf probe -q -d 'probe_target:*' >/dev/null 2>&1; true; } &&
	perf probe -q -x "$tmp/target" hot >/dev/null 2>&1; then
	ev=$(perf probe -l 2>/dev/null | awk '/hot/ {print $1; exit}')
	u=$(t perf stat -e "$ev" -- "$tmp/target" "$UP_N")
	perf probe -q -d "$ev" >/dev/null 2>&1
	us_u=$(per_hit "$u" "$plain_u" "$UP_N")
	echo "uprobes (perf probe + perf stat):    $us_u us per hit (N=$UP_N)"
	python3 -c "print('ratio sonde / uprobes per hit: %.1fx' % ($us_line / $us_u if $us_u > 0 else float('inf')))"
else
	echo "uprobes: perf probe not usable here (needs root and tracefs)"
fi

# Attach time: a large binary (50 MB of code) with one probe, detached at once.
python3 - "$tmp/big.c" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("#include <unistd.h>\n")
    f.write("__attribute__((noipa)) long hot(long i) { return i + 1; }\n")
    f.write("__attribute__((used)) static const char pad[50 << 20] = {1};\n")
    f.write("int main(void) { long s = 0; for (;;) { s += hot(s); usleep(1000); } }\n")
PY
if gcc -O2 -g -o "$tmp/big" "$tmp/big.c" 2>/dev/null; then
	"$tmp/big" & big=$!
	sleep 0.2
	a=$(python3 - "$SONDE" "$big" <<'PY'
import subprocess, sys, time
t0 = time.perf_counter()
subprocess.run([sys.argv[1], "probe", "-p", sys.argv[2], "--duration", "0.001", "-e", "func:hot",
                "-o", "/dev/null"], stdout=subprocess.DEVNULL)
print("%.1f" % ((time.perf_counter() - t0) * 1e3))
PY
)
	kill "$big"; wait "$big" 2>/dev/null
	echo "attach + probe + detach, $(du -m "$tmp/big" | cut -f1) MB binary: $a ms"
fi

# Var probes on the agent engine (issue 12): ns per hit of var:hot:i (the
# argument, in a register) against the plain run and func:hot on the agent,
# AGENT_N calls, best of 3, side by side.
AGENT_N=${AGENT_N:-$((N * 100))}
plain_a=$(t "$tmp/target" "$AGENT_N")
a_var=$(t "$SONDE" probe --engine=agent -e var:hot:i -o /dev/null -- "$tmp/target" "$AGENT_N")
a_func=$(t "$SONDE" probe --engine=agent -e func:hot -o /dev/null -- "$tmp/target" "$AGENT_N")
python3 -c "
n=$AGENT_N; p=$plain_a
print('agent var:hot:i (register):  %.0f ns per hit (N=%d)' % (max(0.0, $a_var - p) / n * 1e9, n))
print('agent func:hot (entry+exit): %.0f ns per call (N=%d)' % (max(0.0, $a_func - p) / n * 1e9, n))"

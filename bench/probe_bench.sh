#!/usr/bin/env bash
# probe_bench.sh — cost per hit of a probe on a tight loop, side by side in
# one run: sonde's agent engine (line:hot, func:hot with its return, both
# again with --record, var:hot:i and var:warm:x (a double), time:hot twice,
# assert:hot with one variable, plugin:hot of an ABI-2 plugin, pre and
# pre+post), sonde's
# ptrace engine, gdb (break + commands/silent/continue), and kernel uprobes
# through `perf probe` + `perf stat` and bpftrace when usable (root, tracefs).
# Startup is taken out: each tool also runs the target with 0 calls.
# Prints ratios; never fails on timing.
#   BUILD=build bash bench/probe_bench.sh [N]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$root/build}
SONDE=${SONDE:-$BUILD/bin/sonde}
N=${1:-20000}
NA=${NA:-2000000}  # calls for the agent and uprobes (the issue's 2M)
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

# Per hit, startup removed: (probed(N) - probed(0)) - (plain(N) - plain(0)), over N.
per_hit0() { # N command... (the target's N is the last argument)
	local n=$1; shift
	local full zero
	full=$(t "$@" "$n")
	zero=$(t "$@" 0)
	python3 -c "print('%.4f' % max(0.0, (($full - $zero) - ($plain_full - $plain_zero)) / $n * 1e6))"
}
plain_full=$(t "$tmp/target" "$NA")
plain_zero=$(t "$tmp/target" 0)
if [ -z "${STACK_ONLY:-}" ]; then # STACK_ONLY=1: the stack probe rows only
echo "== per hit, $NA calls to hot() (gcc -O2); plain run $(python3 -c "print('%.1f' % ($plain_full*1e3))") ms"
a_line=$(per_hit0 "$NA" "$SONDE" probe -e line:hot -o /dev/null -- "$tmp/target")
a_func=$(per_hit0 "$NA" "$SONDE" probe -e func:hot -o /dev/null -- "$tmp/target")
echo "sonde agent   line:hot                $(python3 -c "print('%.1f' % ($a_line*1e3))") ns per hit"
echo "sonde agent   func:hot (entry+return)  $(python3 -c "print('%.1f' % ($a_func*1e3))") ns per call"
# --record: every hit also an event in the thread's ring (sonde drains it
# into a recording; what a full ring drops is counted, said as lost)
a_line_r=$(per_hit0 "$NA" "$SONDE" probe -e line:hot -o "$tmp/rec" --record -- "$tmp/target")
a_func_r=$(per_hit0 "$NA" "$SONDE" probe -e func:hot -o "$tmp/rec" --record -- "$tmp/target")
"$SONDE" probe -e func:hot -o "$tmp/rec" --record -- "$tmp/target" "$NA" > /dev/null 2>&1 # its loss
rec_lost=$("$SONDE" info -i "$tmp/rec" --format=json 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin); l = d['lost'].get('ring_events_dropped', 0)
print('%d of %d events lost' % (l, l + d['probe_records']))" 2>/dev/null)
echo "sonde agent   line:hot --record       $(python3 -c "print('%.1f' % ($a_line_r*1e3))") ns per hit"
echo "sonde agent   func:hot --record       $(python3 -c "print('%.1f' % ($a_func_r*1e3))") ns per call (one more run: $rec_lost)"
# a var probe on an integer in a register, and on a double in xmm0 (its
# statistics in the agent's floating-point code, behind fxsave/fxrstor);
# the double's target loop is another, so its plain run is taken out too
a_ivar=$(per_hit0 "$NA" "$SONDE" probe -e var:hot:i -o /dev/null -- "$tmp/target")
fp_full=$(t "$tmp/target" "$NA" f)
fp_zero=$(t "$tmp/target" 0 f)
fv_full=$(t "$SONDE" probe -e var:warm:x -o /dev/null -- "$tmp/target" "$NA" f)
fv_zero=$(t "$SONDE" probe -e var:warm:x -o /dev/null -- "$tmp/target" 0 f)
a_fvar=$(python3 -c "print('%.4f' % max(0.0, (($fv_full - $fv_zero) - ($fp_full - $fp_zero)) / $NA * 1e6))")
echo "sonde agent   var:hot:i (long, register)    $(python3 -c "print('%.1f' % ($a_ivar*1e3))") ns per hit"
echo "sonde agent   var:warm:x (double, xmm0)     $(python3 -c "print('%.1f' % ($a_fvar*1e3))") ns per hit"
fa_full=$(t "$SONDE" probe -e 'assert:warm:x * 2 < 1e12' -o /dev/null -- "$tmp/target" "$NA" f)
fa_zero=$(t "$SONDE" probe -e 'assert:warm:x * 2 < 1e12' -o /dev/null -- "$tmp/target" 0 f)
a_fassert=$(python3 -c "print('%.4f' % max(0.0, (($fa_full - $fa_zero) - ($fp_full - $fp_zero)) / $NA * 1e6))")
echo "sonde agent   assert:warm:x * 2 < 1e12 (floating)  $(python3 -c "print('%.1f' % ($a_fassert*1e3))") ns per hit"
a_time=$(per_hit0 "$NA" "$SONDE" probe -e time:hot -e time:hot -o /dev/null -- "$tmp/target")
a_assert=$(per_hit0 "$NA" "$SONDE" probe -e 'assert:hot:i % 7 != 3' -o /dev/null -- "$tmp/target")
echo "sonde agent   time:hot twice (2nd: intervals)  $(python3 -c "print('%.1f' % ($a_time*1e3))") ns per hit of both"
echo "sonde agent   assert:hot:i % 7 != 3   $(python3 -c "print('%.1f' % ($a_assert*1e3))") ns per hit"

# Plugin probes of SONDE_PROBE_ABI2 on the agent: the handlers run in the
# program (an atomic add in the probe's result area), pre only, pre and
# post (the slot calls the post stub after the displaced instruction), and
# pre of a plugin that says SONDE_PROBE_GENERAL_REGS_ONLY (no xsave).
for v in pre post gro; do
	cat > "$tmp/plug_$v.c" <<C
#include <sonde/probe.h>
static void pre(struct sonde_probe_ctx *c) { __atomic_fetch_add((uint64_t *)c->result, 1, __ATOMIC_RELAXED); }
static void post(struct sonde_probe_ctx *c) { __atomic_fetch_add((uint64_t *)c->result + 1, 1, __ATOMIC_RELAXED); }
static void rep(struct sonde_probe_ctx *c, FILE *f)
{ fprintf(f, "pre=%llu post=%llu", (unsigned long long)((uint64_t *)c->result)[0], (unsigned long long)((uint64_t *)c->result)[1]); }
const struct sonde_probe_plugin sonde_probe_plugin = { .abi = SONDE_PROBE_ABI2, .name = "count", .pre = pre,
	$([ $v = post ] && echo ".post = post,") $([ $v = gro ] && echo ".flags = SONDE_PROBE_GENERAL_REGS_ONLY,")
	.report = rep, .result_size = 16 };
C
	cc -O2 -shared -fPIC -I"$root/include" $([ $v = gro ] && echo -mgeneral-regs-only) -o "$tmp/plug_$v.so" \
		"$tmp/plug_$v.c" || exit 1
done
a_plug=$(per_hit0 "$NA" "$SONDE" probe --plugin "$tmp/plug_pre.so" -e plugin:hot -o /dev/null -- "$tmp/target")
a_plug2=$(per_hit0 "$NA" "$SONDE" probe --plugin "$tmp/plug_post.so" -e plugin:hot -o /dev/null -- "$tmp/target")
echo "sonde agent   plugin:hot (ABI 2, pre) $(python3 -c "print('%.1f' % ($a_plug*1e3))") ns per hit"
a_plug3=$(per_hit0 "$NA" "$SONDE" probe --plugin "$tmp/plug_gro.so" -e plugin:hot -o /dev/null -- "$tmp/target")
echo "sonde agent   plugin:hot (pre+post)   $(python3 -c "print('%.1f' % ($a_plug2*1e3))") ns per hit"
echo "sonde agent   plugin:hot (pre, SONDE_PROBE_GENERAL_REGS_ONLY) $(python3 -c "print('%.1f' % ($a_plug3*1e3))") ns per hit"

plain=$(t "$tmp/target" "$N")
plain_g=$(t "$tmp/target" "$GDB_N")
s_line=$(t "$SONDE" probe --engine=ptrace -e line:hot -o /dev/null -- "$tmp/target" "$N")
s_func=$(t "$SONDE" probe --engine=ptrace -e func:hot -o /dev/null -- "$tmp/target" "$N")
us_line=$(per_hit "$s_line" "$plain" "$N")
us_func=$(per_hit "$s_func" "$plain" "$N")
echo "sonde ptrace  line:hot                $(python3 -c "print('%.1f' % ($us_line*1e3))") ns per hit (N=$N)"
echo "sonde ptrace  func:hot (entry+exit)   $(python3 -c "print('%.1f' % ($us_func*1e3))") ns per call (N=$N)"
python3 -c "print('ratio ptrace / agent per line hit: %.0fx' % ($us_line / $a_line if $a_line > 0 else float('inf')))"

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
	echo "gdb break+commands silent continue:   $(python3 -c "print('%.1f' % ($us_g*1e3))") ns per hit (N=$GDB_N)"
else
	echo "gdb: not installed"
fi

if command -v perf >/dev/null && [ "$(id -u)" = 0 ] &&
	{ perf probe -q -d 'probe_target:*' >/dev/null 2>&1; true; } &&
	perf probe -q -x "$tmp/target" hot >/dev/null 2>&1; then
	ev=$(perf probe -l 2>/dev/null | awk '/hot/ {print $1; exit}')
	u_line=$(per_hit0 "$NA" perf stat -e "$ev" -- "$tmp/target")
	perf probe -q -d "$ev" >/dev/null 2>&1
	echo "uprobes (perf probe + perf stat)      $(python3 -c "print('%.1f' % ($u_line*1e3))") ns per hit"
	python3 -c "print('ratio uprobes / sonde agent per hit: %.1fx' % ($u_line / $a_line if $a_line > 0 else float('inf')))"
else
	echo "uprobes: perf probe not usable here (needs root, perf and tracefs)"
fi
if command -v bpftrace >/dev/null && [ "$(id -u)" = 0 ]; then
	bt() { bpftrace -q -e "uprobe:$tmp/target:hot { @n = count(); }" -c "$tmp/target $1" >/dev/null 2>&1; }
	if bt 1; then
		printf '#!/bin/sh\nexec bpftrace -q -e "uprobe:%s:hot { @n = count(); }" -c "%s $1"\n' "$tmp/target" "$tmp/target" > "$tmp/bt.sh"
		chmod +x "$tmp/bt.sh"
		b_line=$(per_hit0 "$NA" "$tmp/bt.sh")
		echo "uprobes (bpftrace count)              $(python3 -c "print('%.1f' % ($b_line*1e3))") ns per hit"
	else
		echo "bpftrace: uprobes not usable here"
	fi
else
	echo "bpftrace: not installed or not root"
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

fi

# Stack probes (issue 12 "record a stack", issue 28 "stacks unwound inside
# the program").  On the agent, by default, each hit walks the thread's stack
# with sonde's unwind table and writes its return addresses into the thread's
# ring (walked); with --stack-unwind=copy each hit copies the registers and
# 8 KiB of the stack and sonde unwinds the copies (as before issue 28); on
# ptrace each hit stops the program and sonde unwinds the stopped thread.
# Per hit beside line:hot on the agent, startup removed:
#  - agent walked, STACK_N calls in a tight loop (hot() from main: 5 frames):
#    per hit, the stacks lost (none, if sonde keeps up), the agent's own time
#    per walk (walk_ns_per_hit), and stacks a second on the thread;
#  - agent copied, STACK_CN calls: more than sonde unwinds while the program
#    runs, the rest dropped and counted (lost), as perf does; the agent's time
#    per copy (copy_ns_per_hit);
#  - agent copied, STACK_FIT calls: every stack fits in the ring (none lost),
#    the time includes sonde's unwinding of them all at the end;
#  - ptrace, STACK_PT calls.
STACK_N=${STACK_N:-2000000}
STACK_CN=${STACK_CN:-200000}
STACK_FIT=${STACK_FIT:-400}
STACK_PT=${STACK_PT:-2000}
a_line_s=$(per_hit0 "$NA" "$SONDE" probe -e line:hot -o /dev/null -- "$tmp/target")
a_walk=$(per_hit0 "$STACK_N" "$SONDE" probe -e stack:hot -o /dev/null -- "$tmp/target")
"$SONDE" probe --format=json -o "$tmp/stkw.json" -e stack:hot -- "$tmp/target" "$STACK_N" > /dev/null 2>&1
walk_info=$(python3 -c "
import json; p = json.load(open('$tmp/stkw.json'))['probes'][0]
print('%d ns per walk (agent), %d walked, %d copied, %d of %d stacks lost' % (p['walk_ns_per_hit'], p['walked'], p['copied'], p['lost'], p['hits']))")
walk_rate=$(python3 -c "print('%.2f' % (1.0 / ($a_walk + ($plain_full - $plain_zero) / $NA * 1e6)))")
a_stack=$(per_hit0 "$STACK_CN" "$SONDE" probe --stack-unwind=copy -e stack:hot -o /dev/null -- "$tmp/target")
"$SONDE" probe --stack-unwind=copy --format=json -o "$tmp/stk.json" -e stack:hot -- "$tmp/target" "$STACK_CN" > /dev/null 2>&1
stk_info=$(python3 -c "
import json; p = json.load(open('$tmp/stk.json'))['probes'][0]
print('%d ns per copy (agent), %d of %d stacks lost' % (p['copy_ns_per_hit'], p['lost'], p['hits']))")
# (against 1 call rather than 0: the first stack loads the objects' CFI and symbols once)
fit_full=$(t "$SONDE" probe --stack-unwind=copy -e stack:hot -o /dev/null -- "$tmp/target" "$STACK_FIT")
fit_one=$(t "$SONDE" probe --stack-unwind=copy -e stack:hot -o /dev/null -- "$tmp/target" 1)
a_stack_fit=$(python3 -c "print('%.4f' % max(0.0, ($fit_full - $fit_one) / ($STACK_FIT - 1) * 1e6))")
p_stack=$(per_hit0 "$STACK_PT" "$SONDE" probe --engine=ptrace -e stack:hot -o /dev/null -- "$tmp/target")
p_line=$(per_hit0 "$STACK_PT" "$SONDE" probe --engine=ptrace -e line:hot -o /dev/null -- "$tmp/target")
echo "== stack probes (per hit, startup removed)"
echo "sonde agent   line:hot                $(python3 -c "print('%.1f' % ($a_line_s*1e3))") ns per hit (N=$NA)"
echo "sonde agent   stack:hot walked        $(python3 -c "print('%.1f' % ($a_walk*1e3))") ns per hit (N=$STACK_N; $walk_info; $walk_rate M stacks/s on one thread)"
echo "sonde agent   stack:hot copied        $(python3 -c "print('%.1f' % ($a_stack*1e3))") ns per hit (N=$STACK_CN, --stack-unwind=copy; $stk_info)"
echo "sonde agent   stack:hot copied, none lost  $(python3 -c "print('%.1f' % ($a_stack_fit*1e3))") ns per hit with sonde's unwinding (N=$STACK_FIT)"
echo "sonde ptrace  line:hot                $(python3 -c "print('%.1f' % ($p_line*1e3))") ns per hit (N=$STACK_PT)"
echo "sonde ptrace  stack:hot               $(python3 -c "print('%.1f' % ($p_stack*1e3))") ns per hit (N=$STACK_PT)"
python3 -c "print('ratio copied (none lost) / walked per stack hit: %.0fx' % ($a_stack_fit / $a_walk if $a_walk > 0 else float('inf')))"
python3 -c "print('ratio ptrace / agent walked per stack hit: %.0fx' % ($p_stack / $a_walk if $a_walk > 0 else float('inf')))"

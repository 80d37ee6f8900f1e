#!/usr/bin/env bash
# probe_system.sh — sonde probe --system (issue 42's "globally effective"
# probes) on the host's kernel, through its uprobe perf PMU: a func and a
# line probe on a shared library (tests/progs/sys_lib.c) used by five
# processes (tests/progs/sys_user.c), three started before the probes and
# two after; each says its own counts.  Checks: every process's hits equal
# its own calls and odd calls, the totals the kernel counted equal their
# sum, each return value sampled (AX at the uretprobe) has the count the
# library's formula gives; a call made before the probes is not counted;
# the breakpoint is in a running process's text while the probes are on
# (it reads its own code) and gone after Ctrl-C, --duration and a SIGKILL
# of sonde, with uprobe_events as before; the processes' results are the
# same as without sonde; a program run meanwhile ends the session and its
# output is unchanged; a missing object or function, and no root, get one
# clear line.  Not root or no uprobe PMU: a skip.
# test-timeout: 300
source "$ROOT/tests/lib.sh"

[ "$(id -u)" = 0 ] || { skip "probe --system" "needs root (the kernel's uprobes system-wide)"; exit 0; }
[ -r /sys/bus/event_source/devices/uprobe/type ] || { skip "probe --system" "this kernel has no uprobe perf PMU"; exit 0; }

gcc -O1 -g -fPIC -shared -o libsys_lib.so "$PROGS/sys_lib.c" 2>build.log &&
	gcc -O1 -g -o sys_user "$PROGS/sys_user.c" -L. -lsys_lib -Wl,-rpath,"$PWD" 2>>build.log ||
	{ notok "probe --system: build" "$(tail -3 build.log)"; exit 0; }
LIB=$PWD/libsys_lib.so
L=$(grep -n '/\* odd \*/' "$PROGS/sys_lib.c" | cut -d: -f1)
FUNC="func:$LIB:sys_work"
LINE="line:$LIB:sys_lib.c:$L"

UPEV=
for t in /sys/kernel/tracing /sys/kernel/debug/tracing; do
	[ -e $t/uprobe_events ] || mount -t tracefs nodev $t 2>/dev/null
	[ -r $t/uprobe_events ] && { UPEV=$t/uprobe_events; break; }
done
[ -n "$UPEV" ] && cat "$UPEV" >upev.before

# The processes: process i reads commands from fifo in.i, writes out.i.
declare -a FD PID
start() {
	local i=$1
	mkfifo in.$i
	./sys_user <in.$i >out.$i 2>&1 &
	exec {fd}>in.$i
	FD[$i]=$fd
	await $i ready || return 1
	PID[$i]=$(awk '$2 == "ready" {print $1}' out.$i)
}
say() { echo "$2" >&"${FD[$1]}"; }
# await I WORD [N]: until out.I has N lines (default 1) whose second word is WORD (bounded, 30 s)
await() {
	for _ in $(seq 1500); do
		[ "$(awk -v w="$2" '$2 == w' out.$1 | wc -l)" -ge "${3:-1}" ] && return 0
		sleep 0.02
	done
	return 1
}
# byte I: the first byte of sys_work as process I sees it now
byte() {
	local n
	n=$(awk '$2 == "byte"' out.$1 | wc -l)
	say $1 byte
	await $1 byte $((n + 1)) || { echo timeout; return; }
	awk '$2 == "byte" {b = $3} END {print b}' out.$1
}
# placed PID ERR: until sonde (PID) says its probes are in (bounded, 60 s)
placed() {
	for _ in $(seq 3000); do
		grep -q "probes in every process" "$2" 2>/dev/null && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.02
	done
	return 1
}
# restored NAME I: process I's code is its own again (at once after sonde's end: bounded, 10 s)
restored() {
	local b
	for _ in $(seq 50); do
		b=$(byte $2)
		[ "$b" = "$orig" ] && { ok "$1: the breakpoint is out of a running process's code"; return; }
		sleep 0.2
	done
	notok "$1: the breakpoint is out of a running process's code" "first byte $b, was $orig"
}
# events NAME: uprobe_events as before
events() {
	if [ -z "$UPEV" ]; then skip "$1: uprobe_events as before" "no tracefs"
	elif cmp -s upev.before "$UPEV"; then ok "$1: uprobe_events as before"
	else notok "$1: uprobe_events as before" "$(head -3 "$UPEV")"; fi
}

for i in 1 2 3; do start $i || { notok "probe --system: process $i" "did not start: $(cat out.$i)"; exit 0; }; done
orig=$(byte 1)
say 1 "calls 777"        # before the probes: not theirs
await 1 calls || { notok "probe --system: calls before" "$(cat out.1)"; exit 0; }

"$SONDE" probe --system --format=json -o sys.json -e "$FUNC" -e "$LINE" 2>sys.err &
spid=$!
if ! placed $spid sys.err; then
	notok "probe --system: placed" "$(cat sys.err)"
	kill -9 $spid 2>/dev/null
	exit 0
fi
b=$(byte 1)
[ "$b" = cc ] && ok "a uprobe is in a process that ran before the probes (its first byte 0xcc)" ||
	notok "a uprobe is in a process that ran before the probes" "first byte $b (0x$orig without)"
for i in 4 5; do start $i || { notok "probe --system: process $i" "did not start: $(cat out.$i)"; kill -9 $spid; exit 0; }; done
declare -A N
for i in 1 2 3 4 5; do N[$i]=$((1000 * i + 2 * i + 1)); say $i "calls ${N[$i]}"; done
for i in 1 2 3 4 5; do await $i calls $([ $i = 1 ] && echo 2 || echo 1) || notok "process $i: its calls" "$(cat out.$i)"; done
kill -INT $spid
wait $spid
rc=$?
[ $rc = 0 ] && [ -s sys.json ] && ok "Ctrl-C: sonde exits 0 with its JSON" || notok "Ctrl-C: sonde exits 0" "status $rc: $(cat sys.err)"

# each process's own last "calls" line: pid, calls, odd calls
for i in 1 2 3 4 5; do awk '$2 == "calls" {l = $1 " " $3 " " $5} END {print l}' out.$i; done >own.txt
python3 - sys.json own.txt <<'PY'
import json, sys
from collections import Counter
d = json.load(open(sys.argv[1]))
own = [tuple(map(int, l.split())) for l in open(sys.argv[2]) if l.strip()]
p = {q["kind"]: q for q in d["probes"]}
f, ln = p.get("func", {}), p.get("line", {})
def check(name, good, why):
    print(f"ok - {name}" if good else f"not ok - {name}: {why}")
calls = sum(c for _, c, _ in own)
odd = sum(o for _, _, o in own)
check("func: calls and returns counted by the kernel = the processes' own calls",
      f.get("calls") == f.get("returns") == f.get("hits") == calls, f"calls {f.get('calls')} returns {f.get('returns')}, own {calls}")
got = {q["pid"]: q["hits"] for q in f.get("processes", [])}
want = {pid: c for pid, c, _ in own}
check("func: hits by process = each process's own calls (3 started before, 2 after)", got == want, f"{got} want {want}")
comms = {q.get("comm") for q in f.get("processes", [])}
check("func: each process named by its command", comms == {"sys_user"}, f"{comms}")
for k in ("lost_samples", "untimed", "unmatched_returns", "malformed_records", "processes_other"):
    check(f"func: {k} 0", f.get(k) == 0, f"{f.get(k)}")
check("func: every call timed (min > 0)", f.get("timed") and f.get("min_ns", 0) > 0 and f.get("total_ns", 0) >= f.get("min_ns", 0) * calls,
      f"min {f.get('min_ns')} total {f.get('total_ns')}")
# the values sys_work returns: 3x+1, minus x/2 for an odd x, negated when x % 10 is 5
vals = Counter()
for _, c, _ in own:
    for x in range(c):
        v = 3 * x + 1 - (x // 2 if x & 1 else 0)
        vals[-v if x % 10 == 5 else v] += 1
ret = f.get("returned", [])
bad = [r for r in ret if vals.get(r["value"]) != r["calls"]]
check("func: each return value sampled as often as the library returned it", ret and not bad, f"{bad[:3]}")
check("func: returned + returned_other = returns", sum(r["calls"] for r in ret) + f.get("returned_other", -1) == calls,
      f"{sum(r['calls'] for r in ret)} + {f.get('returned_other')} != {calls}")
check("func: the return type from the library's DWARF (int: negative values sign-extended)",
      f.get("return_type") == "int" and any(r["value"] < 0 for r in ret), f"{f.get('return_type')}")
check("func: a user function's errors are not counted (null)", "errors" in f and f["errors"] is None, f"{f.get('errors')}")
check("line: hits = the processes' own odd calls", ln.get("hits") == odd, f"{ln.get('hits')} want {odd}")
got = {q["pid"]: q["hits"] for q in ln.get("processes", [])}
want = {pid: o for pid, _, o in own}
check("line: hits by process = each process's odd calls", got == want, f"{got} want {want}")
check("line: at least one address, nothing lost", ln.get("addresses", 0) >= 1 and ln.get("lost_samples") == 0, f"{ln}")
check("target: every process, the kernel's engine", d["target"].get("scope") == "every process" and d["target"].get("engine") == "kernel",
      f"{d['target']}")
PY
restored "Ctrl-C" 1
events "Ctrl-C"

# --- --duration: ends by itself, the breakpoint out
"$SONDE" probe --system --duration 1 -e "$FUNC" >dur.out 2>dur.err &
spid=$!
if placed $spid dur.err; then
	[ "$(byte 2)" = cc ] && ok "--duration: placed" || notok "--duration: placed" "no 0xcc in process 2"
	say 2 "calls 55"
	await 2 calls 2
	wait $spid
	rc=$?
	[ $rc = 0 ] && grep -q "by process: ${PID[2]} sys_user x55" dur.out && ok "--duration: ended by itself, the table by process" ||
		notok "--duration: ended by itself" "status $rc: $(cat dur.out dur.err | head -5)"
	restored "--duration" 2
	events "--duration"
else
	notok "--duration: placed" "$(cat dur.err)"
	kill -9 $spid 2>/dev/null
fi

# --- SIGKILL of sonde: the kernel takes the uprobes out with its descriptors
"$SONDE" probe --system -e "$FUNC" -e "$LINE" >kill.out 2>kill.err &
spid=$!
if placed $spid kill.err; then
	[ "$(byte 3)" = cc ] && ok "SIGKILL: placed" || notok "SIGKILL: placed" "no 0xcc in process 3"
	kill -9 $spid
	wait $spid 2>/dev/null
	restored "SIGKILL" 3
	events "SIGKILL"
else
	notok "SIGKILL: placed" "$(cat kill.err)"
	kill -9 $spid 2>/dev/null
fi

# --- the processes unharmed: every result as a run without sonde gives
for i in 1 2 3 4 5; do say $i "calls 1000"; done
for i in 1 2 3 4 5; do say $i quit; done
for i in 1 2 3 4 5; do exec {FD[$i]}>&-; done
wait
for i in 1 2 3 4 5; do
	awk '$2 == "calls"' out.$i | sed 's/^[0-9]* //' >got.$i
	{ [ $i = 1 ] && echo "calls 777"; echo "calls ${N[$i]}"; [ $i = 2 ] && echo "calls 55"; echo "calls 1000"; } | ./sys_user | awk '$2 == "calls"' | sed 's/^[0-9]* //' >want.$i
done
bad=
for i in 1 2 3 4 5; do cmp -s got.$i want.$i || bad="$bad $i"; done
[ -z "$bad" ] && ok "the five processes' results = a run without sonde" || notok "processes unharmed" "differ:$bad ($(diff got.${bad# } want.${bad# } | head -4))"

# --- a program run meanwhile: the session ends with it, its output unchanged
printf 'calls 321\nquit\n' | ./sys_user | sed 's/^[0-9]* //' >prog.want
printf 'calls 321\nquit\n' >prog.in
"$SONDE" probe --system --format=json -o prog.json -e "$FUNC" -- sh -c './sys_user <prog.in' >prog.out 2>prog.err
rc=$?
ppid=$(awk '$2 == "ready" {print $1}' prog.out)
sed 's/^[0-9]* //' prog.out | cmp -s - prog.want && ok "with a program: its output unchanged" || notok "with a program: its output" "$(head -3 prog.out)"
[ $rc = 0 ] && jq_py prog.json "p = d['probes'][0]; assert d['target']['state'] == 'exited with status 0', d['target']; \
	assert {q['pid']: q['hits'] for q in p['processes']}.get($ppid) == 321, p['processes']" &&
	ok "with a program: ends with it, its 321 calls by its pid" || notok "with a program" "status $rc: $(head -3 prog.err)"

# --- names with '+' and C++'s '::': libstdc++ by name, a function by its qualified name
if "$SONDE" probe --system --format=json -o cxx.json -e 'func:libstdc++.so.6:std::terminate' --duration 0.2 >cxx.out 2>cxx.err; then
	jq_py cxx.json "p = d['probes'][0]; assert 'libstdc++.so.6' in p['where'] and p['calls'] == 0, p" &&
		ok "func:libstdc++.so.6:std::terminate placed on libstdc++" || notok "libstdc++ by name" "$(cat cxx.json)"
else
	notok "libstdc++ by name" "$(cat cxx.err)"
fi

# --- variables through uprobe_events' fetch arguments (the object's DWARF):
# x (a register argument), sys_odd_calls (an exported global the library
# reaches through its GOT: the executable's copy of it), and at the odd
# line r and an assertion; two new processes, each says its own counts
if [ -z "$UPEV" ]; then skip "var: uprobe_events" "no tracefs"; else
start 6 && start 7 || { notok "var: processes" "did not start"; exit 0; }
"$SONDE" probe --system --format=json -o var.json -e "var:$LIB:sys_work:x" -e "var:$LIB:sys_work:sys_odd_calls" \
	-e "var:$LIB:sys_lib.c:$L:r" -e "assert:$LIB:sys_lib.c:$L:x < 50" 2>var.err &
spid=$!
if placed $spid var.err; then
	say 6 "calls 100"; say 7 "calls 30"
	await 6 calls && await 7 calls || notok "var: the processes' calls" "$(cat out.6 out.7)"
	kill -INT $spid
	wait $spid
	rc=$?
	python3 - var.json $rc $(awk '$2 == "calls" {print $1, $3, $5}' out.6 out.7) <<'PY'
import json, sys
path, rc = sys.argv[1], sys.argv[2]
procs = [(int(sys.argv[i]), int(sys.argv[i + 1]), int(sys.argv[i + 2])) for i in range(3, len(sys.argv), 3)]
q = json.load(open(path))["probes"] if rc == "0" else []
if len(q) != 4:
    print(f"not ok - var: 4 probes: status {rc}, {len(q)} in the JSON"); sys.exit()
def bypid(p): return {r["pid"]: r["hits"] for r in p.get("processes", [])}
xs = [x for _, n, _ in procs for x in range(n)]
odd = [x for x in xs if x & 1]
# sys_odd_calls at each entry: the odd calls before x in that process (a fresh one: x // 2)
oc = [x // 2 for x in xs]
checks = [
    ("var x (a register argument)", q[0], {"count": len(xs), "sum": sum(xs), "min": 0, "max": max(xs)},
     {pid: n for pid, n, _ in procs}),
    ("var sys_odd_calls (an exported global, through the GOT)", q[1], {"count": len(xs), "sum": sum(oc), "max": max(oc)},
     {pid: n for pid, n, _ in procs}),
    ("var r at the odd line (3x+1)", q[2], {"count": len(odd), "sum": sum(3 * x + 1 for x in odd)},
     {pid: k for pid, _, k in procs}),
    ("assert x < 50 at the odd line", q[3], {"evaluated": len(odd), "failures": sum(1 for x in odd if x >= 50)},
     {pid: k for pid, _, k in procs}),
]
if [k for _, _, k in procs] != [sum(1 for x in range(n) if x & 1) for _, n, _ in procs]:
    print(f"not ok - var: the processes' own odd counts {procs}")
for name, p, want, hits in checks:
    got = {k: p.get(k) for k in want}
    good = got == want and bypid(p) == hits
    print(f"ok - {name} = the processes' ({want})" if good else f"not ok - {name}: {got} by pid {bypid(p)}, want {want} by pid {hits}; {p.get('where')}")
PY
else
	notok "var: placed" "$(cat var.err)"
	kill -9 $spid 2>/dev/null
fi
events "var probes"
"$SONDE" probe --system -e "var:$LIB:sys_work:x" >vk.out 2>vk.err &
spid=$!
if placed $spid vk.err && grep -q "sonde_$spid/" "$UPEV"; then
	kill -9 $spid
	wait $spid 2>/dev/null
	# its guardian removes the probe once the kernel released sonde's perf events (bounded: 10 s)
	for _ in $(seq 500); do cmp -s upev.before "$UPEV" && break; sleep 0.02; done
	events "var probes, after a SIGKILL of sonde"
else
	notok "var: SIGKILL: placed in uprobe_events" "$(cat vk.err)"
	kill -9 $spid 2>/dev/null
fi
"$SONDE" probe --system -e "var:$LIB:sys_work:no_such_var" --duration 1 >r4.out 2>r4.err
rc=$?
[ $rc != 0 ] && grep -q "no_such_var" r4.err && ok "var: an unknown variable refused, by name" ||
	notok "var: an unknown variable refused" "status $rc: $(cat r4.err)"
say 6 quit; say 7 quit
fi
# the same exported global in one process (the agent's var probe): the
# executable's copy, which the library's code reads through its GOT
printf 'calls 40\nquit\n' >var1.in
"$SONDE" probe --format=json -o var1.json -e "var:sys_work:sys_odd_calls" -- ./sys_user <var1.in >var1.out 2>var1.err
rc=$?
jq_py var1.json "p = d['probes'][0]; w = sum(x // 2 for x in range(40)); assert $rc == 0 and (p['count'], p['sum'], p['max']) == (40, w, 19), (p, w)" &&
	ok "process var probe of an exported global through the GOT: the executable's copy (sum $(python3 -c 'print(sum(x // 2 for x in range(40)))'))" ||
	notok "process var probe of an exported global" "status $rc: $(cat var1.err | head -3)"

# --- stacks: each hit's user stack (the uprobe's callchain, the kernel's
# frame-pointer walk), its frames named in the process's own modules: a
# process built with frame pointers, alive until sonde has ended, calls
# sys_work 50 times from main; the uprobe is on sys_work's entry, before its
# prologue, so its caller's frame is not in the chain yet: sys_work, then
# main's caller in libc
gcc -O1 -g -fno-omit-frame-pointer -o sys_user_fp "$PROGS/sys_user.c" -L. -lsys_lib -Wl,-rpath,"$PWD" 2>>build.log
mkfifo in.9
./sys_user_fp <in.9 >out.9 2>&1 &
exec {fd9}>in.9
FD[9]=$fd9
if await 9 ready; then
	"$SONDE" probe --system --format=json -o stk.json -e "stack:$LIB:sys_work" 2>stk.err &
	spid=$!
	placed $spid stk.err && say 9 "calls 50" && await 9 calls
	kill -INT $spid
	wait $spid
	rc=$?
	say 9 quit
	jq_py stk.json "p = d['probes'][0]; st = p['stacks']; assert $rc == 0 and p['hits'] == 50, (p['hits'], $rc); \
		assert sum(s['count'] for s in st) + p['other'] == 50, st; fr = [f['name'] for f in st[0]['frames']]; \
		assert fr[0] == 'sys_work (libsys_lib.so)' and any('libc.so.6' in f for f in fr[1:]), fr" &&
		ok "stack:OBJECT:FUNCTION: 50 hits, each user stack sys_work (libsys_lib.so) then libc" ||
		notok "stack: on --system" "status $rc: $(head -c 600 stk.json; head -3 stk.err)"
	[ -n "$UPEV" ] && { cmp -s "$UPEV" upev.before && ok "stack: uprobe_events as before" || notok "stack: uprobe_events" "$(cat "$UPEV")"; }
else
	notok "stack: on --system" "the process did not start: $(cat out.9)"
fi

# --- refusals: one clear line, nothing placed
"$SONDE" probe --system -e func:/nonexistent/libnope.so:f --duration 1 >r1.out 2>r1.err
rc=$?
[ $rc != 0 ] && [ "$(wc -l <r1.err)" = 1 ] && grep -q "no object" r1.err && ok "a missing object refused in one line" ||
	notok "a missing object refused" "status $rc: $(cat r1.err)"
"$SONDE" probe --system -e "func:$LIB:no_such_fn" --duration 1 >r2.out 2>r2.err
rc=$?
[ $rc != 0 ] && [ "$(wc -l <r2.err)" = 1 ] && grep -q "no function no_such_fn" r2.err && ok "a missing function refused in one line" ||
	notok "a missing function refused" "status $rc: $(cat r2.err)"
"$SONDE" probe --system -e "func:sys_work" --duration 1 >r3.out 2>r3.err
rc=$?
[ $rc != 0 ] && [ "$(wc -l <r3.err)" = 1 ] && grep -q "func:OBJECT:FUNCTION" r3.err && ok "func without an object refused in one line" ||
	notok "func without an object refused" "status $rc: $(cat r3.err)"
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$SONDE" probe --system -e "$FUNC" --duration 1 >nr.out 2>nr.err
	rc=$?
	[ $rc != 0 ] && [ "$(wc -l <nr.err)" = 1 ] && grep -q "needs root" nr.err && ok "non-root: one clear line" ||
		notok "non-root: one clear line" "status $rc: $(cat nr.err)"
else
	skip "non-root" "no setpriv"
fi

#!/usr/bin/env bash
# probe_remote_count.sh — line probes counted inside a remote target (no stop
# per hit: src/probe/remote/remote_count.c), under qemu-aarch64 -g, with
# tests/progs/remote_count_prog.c (gcc -g -O1 and -O2), which prints its own
# counts: a function entry (line:leaf), a loop body (BODY_LINE), an `if` body
# (ODD_LINE, -O1: at -O2 the line table gives it the loop body's address) and
# an indirect call (`blr`, not relocated: a breakpoint counts it) must equal
# the program's numbers, the JSON must say which were counted in the target
# and that the counts are complete, and the output must be unchanged.  Then:
# exit(3) from a nested call and a death by SIGABRT (complete, exact), by
# SIGKILL (nothing sees it coming: complete and exact, or marked incomplete
# and not more than the program's, with a note), 4 threads (exact: the
# counter's increment is atomic), SONDE_REMOTE_IN_TARGET=0 (breakpoints,
# exact), and --duration: the sites put back, detached, the program runs on to
# the same output (with a breakpoint giving stops; and with none, where QEMU
# acts on the interrupt only at _fini: the wait is explained).  Then x86-64
# under gdbserver (the jumps written with M, the exit caught at exit_group):
# -O1/-O2, 4 threads, exit(3), SIGABRT, and the switch (the stub's
# tracepoints).  A missing toolchain, qemu-aarch64 or gdbserver is a skip.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/remote_lib.sh"

src="$PROGS/remote_count_prog.c"
line_of() { grep -n "/\* $1 \*/" "$src" | head -1 | cut -d: -f1; }
BODY=$(line_of BODY_LINE)
ODD=$(line_of ODD_LINE)
SYSROOT=/usr/aarch64-linux-gnu
N=1000

if ! command -v qemu-aarch64 >/dev/null || ! command -v aarch64-linux-gnu-gcc >/dev/null || [ ! -d "$SYSROOT" ]; then
	skip "remote count: in-target counting" "qemu-aarch64, aarch64-linux-gnu-gcc or $SYSROOT missing (apt-get install qemu-user gcc-aarch64-linux-gnu)"
	exit 0
fi

# The offset in loop() of its first instruction NAME (objdump).
insn_off() {
	aarch64-linux-gnu-objdump -d --no-show-raw-insn "$1" | python3 -c '
import re, sys
start = None
for l in sys.stdin:
    m = re.match(r"([0-9a-f]+) <(\w+)>:", l)
    if m:
        start = int(m.group(1), 16) if m.group(2) == "loop" else None
        continue
    f = l.split()
    if start is not None and len(f) > 1 and f[1] == sys.argv[1]:
        print(hex(int(f[0].rstrip(":"), 16) - start))
        break' "$2"
}

# run TAG PROG ARGS... -- SONDE-OPTIONS...: the program plain and under the
# stub with sonde; sets rc (sonde's), src_rc (the stub's exit status).
run() {
	local tag=$1 prog=$2; shift 2
	local args=()
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	qemu-aarch64 -L "$SYSROOT" "./$prog" "${args[@]}" > "plain.$tag" 2>/dev/null
	plain_rc=$?
	local port; port=$(free_port)
	qemu-aarch64 -g "$port" -L "$SYSROOT" "./$prog" "${args[@]}" > "stub.$tag" 2>/dev/null &
	local qpid=$!; stubs+=("$qpid")
	wait_listen "$port" || { notok "$tag: stub listens" "qemu-aarch64 -g $port"; rc=99; return; }
	timeout 120 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe "$prog" "$@" --format=json -o "out.$tag.json" 2> "err.$tag"
	rc=$?
	wait "$qpid"
	stub_rc=$?
}

# counts TAG CHECKS: python over d (the JSON), p (its probes), c (the
# program's "body B odd O leaf L sum S").
counts() {
	python3 - "out.$1.json" "plain.$1" "$1" "$2" <<'EOF2'
import json, sys
out, plain, tag, checks = sys.argv[1:5]
d = json.load(open(out))
p = d["probes"]
w = open(plain).read().split()
c = {w[i]: int(w[i + 1]) for i in range(0, len(w) - 1, 2) if w[i + 1].lstrip("-").isdigit()}
for line in checks.strip().split("\n"):
    what, expr = line.split("::", 1)
    try:
        good = eval(expr)
    except Exception as e:
        good = False
        expr += f" ({e!r})"
    print(f"ok - {tag}: {what}" if good else f"not ok - {tag}: {what}: {expr}: {json.dumps(p)[:400]} {d['target']}")
EOF2
}

for O in 1 2; do
	prog=count.O$O
	aarch64-linux-gnu-gcc -g -O$O -I"$PROGS" -o "$prog" "$src" -lpthread || { notok "O$O: build" "aarch64-linux-gnu-gcc failed"; continue; }
	blr=$(insn_off "$prog" blr)
	[ -n "$blr" ] || { notok "O$O: an indirect call in loop()" "no blr found by objdump"; continue; }
	specs=(-e line:leaf -e "line:remote_count_prog.c:$BODY" -e "line:loop+$blr")
	[ "$O" = 1 ] && specs+=(-e "line:remote_count_prog.c:$ODD")

	run "O$O" "$prog" $N ret -- "${specs[@]}"
	check "O$O: sonde exits 0" test "$rc" -eq 0
	check "O$O: program output and exit status unchanged" bash -c "cmp -s plain.O$O stub.O$O && [ $stub_rc -eq $plain_rc ]"
	counts "O$O" "
line:leaf (function entry) counted in the target, exactly the program's calls::p[0]['hits'] == c['leaf'] == $N and p[0].get('counted_in_target') == 1 and p[0]['counts_complete']
loop body counted in the target, exactly the program's turns::p[1]['hits'] == c['body'] and p[1].get('counted_in_target') == 1 and p[1]['counts_complete']
the indirect call (blr, not relocated) falls back to a breakpoint, exact::p[2]['hits'] == c['leaf'] and 'counted_in_target' not in p[2]
the summary says where it counts::'counted in the target' in p[0]['where'] and 'counted in the target' not in p[2]['where']
exit status 0::d['target'].get('exit_status') == 0"
	[ "$O" = 1 ] && counts "O$O" "
the odd turns' line counted in the target, exactly the program's::p[3]['hits'] == c['odd'] == $N // 2 and p[3].get('counted_in_target') == 1"

	# 4 threads run the loop: exact only if the increment is atomic.
	run "thr.O$O" "$prog" 20000 threads 4 -- -e line:leaf -e "line:remote_count_prog.c:$BODY"
	check "thr.O$O: sonde exits 0, output unchanged" bash -c "[ $rc -eq 0 ] && cmp -s plain.thr.O$O stub.thr.O$O"
	counts "thr.O$O" "
4 threads: line:leaf and the loop body exactly the program's (80000), counted in the target::p[0]['hits'] == p[1]['hits'] == c['leaf'] == c['body'] == 80000 and p[0].get('counted_in_target') == 1 and p[1]['counts_complete']"
done

prog=count.O1
if [ -x "$prog" ]; then
	specs=(-e line:leaf -e "line:remote_count_prog.c:$BODY" -e "line:remote_count_prog.c:$ODD")
	run exit "$prog" $N exit -- "${specs[@]}"
	check "exit: sonde exits 0, output unchanged, the program's exit status 3" \
		bash -c "[ $rc -eq 0 ] && cmp -s plain.exit stub.exit && [ $stub_rc -eq 3 ] && [ $plain_rc -eq 3 ]"
	counts exit "
exit(3) from a nested call: the counts are read at _fini, complete and exact::[q['hits'] for q in p] == [c['leaf'], c['body'], c['odd']] and all(q['counts_complete'] for q in p)
exit status 3 in the JSON::d['target'].get('exit_status') == 3"

	run abort "$prog" $N abort -- "${specs[@]}"
	check "abort: sonde exits 0, output unchanged, the program killed by SIGABRT" \
		bash -c "[ $rc -eq 0 ] && cmp -s plain.abort stub.abort && [ $stub_rc -eq $plain_rc ] && [ $plain_rc -eq 134 ]"
	counts abort "
SIGABRT: the counts are read at the signal's stop, complete and exact::[q['hits'] for q in p] == [c['leaf'], c['body'], c['odd']] and all(q['counts_complete'] for q in p)
signal 6 in the JSON::d['target'].get('signal') == 6"

	run kill "$prog" $N kill -- "${specs[@]}"
	check "kill: sonde exits 0, output unchanged" bash -c "[ $rc -eq 0 ] && cmp -s plain.kill stub.kill && [ $stub_rc -eq $plain_rc ]"
	counts kill "
SIGKILL: each count is exact and complete, or marked incomplete and not above the program's::all((q['counts_complete'] and q['hits'] == e) or (not q['counts_complete'] and q['hits'] <= e) for q, e in zip(p, [c['leaf'], c['body'], c['odd']]))"
	if grep -q "count may be short" err.kill; then ok "kill: incomplete counts said on stderr"
	elif python3 -c "import json,sys; sys.exit(0 if all(q['counts_complete'] for q in json.load(open('out.kill.json'))['probes']) else 1)"; then
		ok "kill: counts complete (no note needed)"
	else notok "kill: incomplete counts said on stderr" "$(cat err.kill)"; fi

	# The switch: breakpoints, exact, nothing counted in the target.
	SONDE_REMOTE_IN_TARGET=0 run off "$prog" $N ret -- "${specs[@]}"
	check "SONDE_REMOTE_IN_TARGET=0: sonde exits 0, output unchanged" bash -c "[ $rc -eq 0 ] && cmp -s plain.off stub.off"
	counts off "
SONDE_REMOTE_IN_TARGET=0: breakpoints, exactly the program's counts::[q['hits'] for q in p] == [c['leaf'], c['body'], c['odd']] and not any('counted_in_target' in q for q in p)"

	# --duration: the program sleeps 1 ms every 1000 turns; the blr probe
	# (a breakpoint) gives sonde the stops at which QEMU's user-mode stub
	# acts on its interrupt.  Sites put back, detached, the program runs on.
	BIG=400000
	run dur "$prog" $BIG sleep -- -e line:leaf -e "line:loop+$(insn_off "$prog" blr)" --duration 1
	check "duration: sonde exits 0, the program runs on to the same output and status" \
		bash -c "[ $rc -eq 0 ] && cmp -s plain.dur stub.dur && [ $stub_rc -eq $plain_rc ]"
	counts dur "
duration: detached while running, line:leaf counted in the target, complete, fewer than the program's calls::d['target']['state'].startswith('detached') and 0 < p[0]['hits'] < c['leaf'] and p[0]['counts_complete'] and p[0].get('counted_in_target') == 1"
fi

# --duration with every site counted in the target: QEMU's user-mode stub acts
# on the interrupt only when the program stops or exits; the trampolines'
# heartbeat (a brk every 2^18 hits of a site) is such a stop: sonde reads the
# counters there, puts the sites back and detaches while the program runs.
if [ -x count.O1 ]; then
	run durbeat count.O1 2000000 sleep -- -e line:leaf --duration 0.3
	check "duration, heartbeat: sonde exits 0, the program runs on to the same output and status" \
		bash -c "[ $rc -eq 0 ] && cmp -s plain.durbeat stub.durbeat && [ $stub_rc -eq $plain_rc ]"
	counts durbeat "
duration, heartbeat: detached while running at a heartbeat, complete, fewer than the program's calls::d['target']['state'].startswith('detached') and 0 < p[0]['hits'] < c['leaf'] and p[0]['counts_complete'] and p[0].get('counted_in_target') == 1"
fi

# Without the heartbeat (SONDE_REMOTE_HEARTBEAT=0) the stub acts at _fini:
# sonde says why it waits, then reads every hit, puts the sites back and
# detaches.
if [ -x count.O1 ]; then
	SONDE_REMOTE_HEARTBEAT=0 run durwait count.O1 2000000 sleep -- -e line:leaf --duration 0.3 --timeout 1
	check "duration, no stop: sonde exits 0, the program runs on to the same output and status" \
		bash -c "[ $rc -eq 0 ] && cmp -s plain.durwait stub.durwait && [ $stub_rc -eq $plain_rc ]"
	check "duration, no stop: the wait for the stub is explained on stderr" grep -q "has not stopped the program since the interrupt" err.durwait
	counts durwait "
duration, no stop: detached at _fini, every call counted (complete)::d['target']['state'].startswith('detached') and p[0]['hits'] == c['leaf'] and p[0]['counts_complete']"
fi

# --- x86-64 under gdbserver: the sites patched with M, the exit caught at exit_group ---
if ! command -v gdbserver >/dev/null; then
	skip "gdbserver: in-target counting" "gdbserver missing (apt-get install gdbserver)"
	exit 0
fi
# grun TAG PROG ARGS... -- SONDE-OPTIONS...: as run, under gdbserver --once.
grun() {
	local tag=$1 prog=$2; shift 2
	local args=()
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	"./$prog" "${args[@]}" > "plain.$tag" 2>/dev/null
	plain_rc=$?
	local port; port=$(free_port)
	gdbserver --once "127.0.0.1:$port" "./$prog" "${args[@]}" > "stub.$tag" 2>/dev/null &
	local gpid=$!; stubs+=("$gpid")
	wait_listen "$port" || { notok "$tag: gdbserver listens" "port $port"; rc=99; return; }
	timeout 120 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe "$prog" "$@" --format=json -o "out.$tag.json" 2> "err.$tag"
	rc=$?
	wait "$gpid"
}
for O in 1 2; do
	prog=xcount.O$O
	gcc -g -O$O -I"$PROGS" -o "$prog" "$src" -lpthread || { notok "x86 O$O: build" "gcc failed"; continue; }
	specs=(-e line:leaf -e "line:remote_count_prog.c:$BODY")
	[ "$O" = 1 ] && specs+=(-e "line:remote_count_prog.c:$ODD")
	grun "x86.O$O" "$prog" $N ret -- "${specs[@]}"
	check "x86 O$O: sonde exits 0, output unchanged" bash -c "[ $rc -eq 0 ] && cmp -s plain.x86.O$O stub.x86.O$O"
	counts "x86.O$O" "
x86-64 -O$O: line:leaf and the loop body counted in the target, exactly the program's::p[0]['hits'] == c['leaf'] == $N and p[1]['hits'] == c['body'] and all(q.get('counted_in_target') == 1 and q['counts_complete'] for q in p[:2])
x86-64 -O$O: the odd turns' line (-O1) exactly the program's::$O == 2 or p[2]['hits'] == c['odd']
exit status 0::d['target'].get('exit_status') == 0"
	grun "x86thr.O$O" "$prog" 20000 threads 4 -- -e line:leaf -e "line:remote_count_prog.c:$BODY"
	check "x86thr.O$O: sonde exits 0, output unchanged" bash -c "[ $rc -eq 0 ] && cmp -s plain.x86thr.O$O stub.x86thr.O$O"
	counts "x86thr.O$O" "
x86-64 4 threads: exactly the program's 80000, counted in the target::p[0]['hits'] == p[1]['hits'] == c['leaf'] == 80000 and p[0].get('counted_in_target') == 1"
done
prog=xcount.O1
if [ -x "$prog" ]; then
	specs=(-e line:leaf -e "line:remote_count_prog.c:$BODY" -e "line:remote_count_prog.c:$ODD")
	grun x86exit "$prog" $N exit -- "${specs[@]}"
	check "x86exit: sonde exits 0, output unchanged" bash -c "[ $rc -eq 0 ] && cmp -s plain.x86exit stub.x86exit && [ $plain_rc -eq 3 ]"
	counts x86exit "
x86-64 exit(3) from a nested call: read at exit_group, complete and exact::[q['hits'] for q in p] == [c['leaf'], c['body'], c['odd']] and all(q['counts_complete'] for q in p) and d['target'].get('exit_status') == 3"
	grun x86abort "$prog" $N abort -- "${specs[@]}"
	check "x86abort: sonde exits 0, output unchanged" bash -c "[ $rc -eq 0 ] && cmp -s plain.x86abort stub.x86abort"
	counts x86abort "
x86-64 SIGABRT: read at the signal's stop, complete and exact::[q['hits'] for q in p] == [c['leaf'], c['body'], c['odd']] and all(q['counts_complete'] for q in p) and d['target'].get('signal') == 6"
	SONDE_REMOTE_IN_TARGET=0 grun x86off "$prog" $N ret -- "${specs[@]}"
	counts x86off "
x86-64 SONDE_REMOTE_IN_TARGET=0: the stub's tracepoints, exact::[q['hits'] for q in p] == [c['leaf'], c['body'], c['odd']] and not any('counted_in_target' in q for q in p) and all('counted by the stub' in q['where'] for q in p)"
fi

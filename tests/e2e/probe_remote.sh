#!/usr/bin/env bash
# probe_remote.sh — sonde probe --target over the GDB remote protocol, against
# real stubs started here: qemu-aarch64 -g and qemu-mips -g (cross-built
# programs), gdbserver over TCP and over a serial line (a socat pty pair), and
# qemu-system-aarch64 -gdb running a bare-metal program (baremetal_counts.c).
# The program (tests/progs/remote_counts.c, gcc -g -O1) prints its own counts:
# func, line, branch (aarch64 b.cond/cbz/tbz, MIPS with its delay slot, x86-64
# jcc), time and var probes (a register parameter, a global in memory, a field
# through a pointer: 4 bytes on MIPS) must find exactly those, and the
# program's output must be unchanged.  Then:
# --duration detaches and the program runs on to the same output; refused
# kinds leave the program untouched; a silent stub and a garbage stub give a
# clear error and exit 2 within the timeout.  A missing toolchain or stub is a skip.
source "$ROOT/tests/lib.sh"

src="$PROGS/remote_counts.c"
L=$(grep -n "/\* MARK_LINE \*/" "$src" | head -1 | cut -d: -f1)
B=$(grep -n "/\* BRANCH_LINE \*/" "$src" | head -1 | cut -d: -f1)
N=200
source "$ROOT/tests/remote_lib.sh"

# check_counts NAME OUT.JSON PLAIN.OUT: the probes' numbers against the
# program's own ("step_calls A sum_x B line_runs C sum_v D sum_total_before E
# g_total F thirds G sum_runs H"), in one python3 run (python3 starts slowly on
# a loaded machine).
check_counts() {
	python3 - "$@" <<'EOF2'
import json, sys
name, out, plain = sys.argv[1:4]
w = open(plain).read().split()
c = {w[i]: int(w[i + 1]) for i in range(0, len(w), 2)}
d = json.load(open(out))
p = {q["id"]: q for q in d["probes"]}
calls, runs = c["step_calls"], c["line_runs"]
checks = [
    (f"func:step counts {calls} calls and returns", (p[1]["calls"], p[1]["returns"], p[1]["hits"]) == (calls, calls, calls), p[1]),
    ("func:step names the caller", p[1]["callers"] == [{"name": "main", "calls": calls}], p[1]["callers"]),
    (f"func:account counts {runs} calls and returns", (p[2]["calls"], p[2]["returns"]) == (runs, runs), p[2]),
    (f"line probe counts {runs} runs", p[3]["hits"] == runs, p[3]),
    (f"var v (register) sums to {c['sum_v']}", (p[4]["count"], p[4]["sum"], p[4]["unavailable"]) == (runs, c["sum_v"], 0), p[4]),
    (f"var g_total (memory) sums to {c['sum_total_before']}",
     (p[5]["count"], p[5]["sum"], p[5]["unavailable"]) == (runs, c["sum_total_before"], 0) and p[5]["max"] < c["g_total"], p[5]),
    (f"var x at step's entry sums to {c['sum_x']}", (p[6]["count"], p[6]["sum"]) == (calls, c["sum_x"]), p[6]),
    # v = step(i) = 3i+1 for the odd i: the failures by arithmetic.
    (f"assert v % 7 != 0 fails exactly as often as 3i+1 (i odd) is a multiple of 7",
     (p[7]["evaluated"], p[7]["failures"]) == (runs, sum(1 for i in range(1, 2 * runs, 2) if (3 * i + 1) % 7 == 0)), p[7]),
    # Which way is "taken" is the compiler's choice (the call of third() on
    # the jump or on the fall-through): the two counts are the program's two.
    (f"branch at BRANCH_LINE: taken / not taken are {c['thirds']} and {calls - c['thirds']} (in some order)",
     p[8]["hits"] == calls and sorted((p[8]["taken"], p[8]["not_taken"])) == sorted((c["thirds"], calls - c["thirds"]))
     and p[8]["instruction"], p[8]),
    (f"var g_tp->runs (through a pointer) sums to {c['sum_runs']}",
     (p[9]["count"], p[9]["sum"], p[9]["unavailable"]) == (runs, c["sum_runs"], 0), p[9]),
    (f"time:step hit {calls} times, time:account {runs} times with {runs} intervals from step",
     (p[10]["hits"], p[11]["hits"], p[11]["interval_from"], p[11]["intervals"]) == (calls, runs, 10, runs)
     and 0 < p[11]["min_ns"] <= p[11]["avg_ns"] <= p[11]["max_ns"], p[11]),
    ("target exited 0", d["target"].get("exit_status") == 0, d["target"]),
]
for what, good, detail in checks:
    print(f"ok - {name}: {what}" if good else f"not ok - {name}: {what}: {json.dumps(detail)[:300]}")
EOF2
}

SPECS=(-e func:step -e func:account -e "line:remote_counts.c:$L" -e "var:remote_counts.c:$L:v"
       -e "var:remote_counts.c:$L:g_total" -e "var:step:x" -e "assert:remote_counts.c:$L:v % 7 != 0"
       -e "branch:remote_counts.c:$B" -e "var:remote_counts.c:$L:g_tp->runs" -e time:step -e time:account)

# run_qemu NAME QEMU SYSROOT CC
run_qemu() {
	local name=$1 qemu=$2 sysroot=$3 cc=$4
	if ! command -v "$qemu" >/dev/null || ! command -v "$cc" >/dev/null || [ ! -d "$sysroot" ]; then
		skip "$name: remote probes" "$qemu or $cc or $sysroot missing (apt-get install qemu-user gcc-... libc6-dev-...-cross)"
		return
	fi
	"$cc" -g -O1 -I"$PROGS" -o "prog.$name" "$src" || { notok "$name: build" "$cc failed"; return; }
	"$qemu" -L "$sysroot" "./prog.$name" $N > "plain.$name" || { notok "$name: plain run" "failed"; return; }
	# MIPS: a line probe and a var probe on the instruction in the delay slot
	# of step()'s first conditional branch (objdump finds it): it runs once
	# per call, whichever way the branch goes.
	local extra=() ds=""
	if [ "$name" = mips ] && command -v mips-linux-gnu-objdump >/dev/null; then
		ds=$(mips-linux-gnu-objdump -d --no-show-raw-insn "prog.$name" | python3 -c '
import re, sys
start = want = None
for l in sys.stdin:
    m = re.match(r"([0-9a-f]+) <step>:", l)
    if m:
        start = int(m.group(1), 16)
        continue
    if start is None:
        continue
    if not l.strip():
        break
    f = l.split()
    if want:
        print(hex(int(f[0].rstrip(":"), 16) - start))
        break
    want = len(f) > 1 and f[1] in ("beq", "bne", "beqz", "bnez", "blez", "bgtz", "bltz", "bgez")')
		[ -n "$ds" ] && extra=(-e "line:step+$ds" -e "var:step+$ds:x")
	fi
	local port; port=$(free_port)
	"$qemu" -g "$port" -L "$sysroot" "./prog.$name" $N > "stub.$name" 2>&1 &
	local qpid=$!; stubs+=("$qpid")
	wait_listen "$port" || { notok "$name: stub listens" "$qemu -g $port"; return; }
	timeout 120 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe "prog.$name" "${SPECS[@]}" "${extra[@]}" \
		--format=json -o "out.$name.json" 2> "err.$name"
	local rc=$?
	wait "$qpid"
	check "$name: sonde exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { cat "err.$name"; return; }
	check "$name: program output unchanged" cmp -s "plain.$name" "stub.$name"
	check_counts "$name" "out.$name.json" "plain.$name"
	if [ -n "$ds" ]; then
		read -r _ calls _ sum_x _ < "plain.$name"
		check "$name: line and var x at step+$ds (a delay slot): $calls hits, x sums to $sum_x" jq_py "out.$name.json" \
			"p=d['probes']; assert (p[11]['hits'],p[12]['count'],p[12]['sum'])==($calls,$calls,$sum_x), p[11:]"
	elif [ "$name" = mips ]; then
		skip "$name: delay slot probe" "mips-linux-gnu-objdump missing or no branch found in step()"
	fi
}

run_qemu aarch64 qemu-aarch64 /usr/aarch64-linux-gnu aarch64-linux-gnu-gcc
run_qemu mips qemu-mips /usr/mips-linux-gnu mips-linux-gnu-gcc

# --- bare metal: a freestanding aarch64 program under qemu-system-aarch64 -M virt -------
if ! command -v qemu-system-aarch64 >/dev/null || ! command -v aarch64-linux-gnu-gcc >/dev/null; then
	skip "bare metal: remote probes" "qemu-system-aarch64 or aarch64-linux-gnu-gcc missing (apt-get install qemu-system-arm gcc-aarch64-linux-gnu)"
elif aarch64-linux-gnu-gcc -g -O1 -ffreestanding -nostdlib -static -mgeneral-regs-only -mstrict-align \
	-fno-pie -no-pie -T "$PROGS/baremetal.ld" -o fw.elf "$PROGS/baremetal_start.S" "$PROGS/baremetal_counts.c" \
	2> fw.build.err; then
	QSYS=(qemu-system-aarch64 -M virt -cpu cortex-a53 -nographic -semihosting -kernel fw.elf)
	timeout 60 "${QSYS[@]}" > plain.bm 2>&1 < /dev/null
	port=$(free_port)
	timeout 120 "${QSYS[@]}" -S -gdb "tcp:127.0.0.1:$port" > stub.bm 2>&1 < /dev/null &
	qpid=$!; stubs+=("$qpid")
	wait_listen "$port"
	timeout 60 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe fw.elf -e func:tick -e var:tick:k \
		--format=json -o out.bm.json 2> err.bm
	rc=$?
	wait "$qpid"
	check "bare metal: sonde exits 0" test "$rc" -eq 0
	check "bare metal: program output unchanged" cmp -s plain.bm stub.bm
	# "calls C sum_k S acc A", printed on the UART by the program.
	read -r _ calls _ sum_k _ < plain.bm
	check "bare metal: func:tick counts $calls calls and returns, var k sums to $sum_k" jq_py out.bm.json \
		"p=d['probes']; assert (p[0]['calls'],p[0]['returns'],p[1]['count'],p[1]['sum'])==($calls,$calls,$calls,$sum_k) and $calls > 0, p"
else
	notok "bare metal: build" "$(head -c 300 fw.build.err)"
fi

# --- gdbserver, x86-64 ----------------------------------------------------------
if ! command -v gdbserver >/dev/null; then
	skip "gdbserver: remote probes" "gdbserver missing (apt-get install gdbserver)"
else
	gcc -g -O1 -I"$PROGS" -o prog.x86 "$src" && ./prog.x86 $N > plain.x86
	port=$(free_port)
	gdbserver --once "127.0.0.1:$port" ./prog.x86 $N > stub.x86 2> gdbserver.err &
	gpid=$!; stubs+=("$gpid")
	if wait_listen "$port"; then
		timeout 120 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe prog.x86 "${SPECS[@]}" \
			--format=json -o out.x86.json 2> err.x86
		rc=$?
		wait "$gpid"
		check "gdbserver: sonde exits 0" test "$rc" -eq 0
		[ "$rc" -eq 0 ] && check "gdbserver: program output unchanged" cmp -s plain.x86 stub.x86
		[ "$rc" -eq 0 ] && check_counts gdbserver out.x86.json plain.x86
		# gdbserver has tracepoints: the line probe is counted by the stub.
		[ "$rc" -eq 0 ] && check "gdbserver: the line probe is a tracepoint (no stop per hit)" jq_py out.x86.json \
			"assert 'counted by the stub' in d['probes'][2]['where'], d['probes'][2]"
		[ "$rc" -eq 0 ] || cat err.x86
	else
		notok "gdbserver listens" "$(cat gdbserver.err)"
	fi

	# --- threads: 4 threads call work() 300 times each, under gdbserver -----------
	# (all-stop: a thread that hits a breakpoint while another's stop is handled
	# is reported later, possibly after that breakpoint was taken out)
	gcc -g -O1 -o threads.x86 "$PROGS/probe_threads.c" -lpthread && ./threads.x86 4 300 0 > plain.thr
	prc=$?
	port=$(free_port)
	gdbserver --once "127.0.0.1:$port" ./threads.x86 4 300 0 > stub.thr 2> gdbserver.thr.err &
	gpid=$!; stubs+=("$gpid")
	if wait_listen "$port"; then
		SONDE_REMOTE_TRACEPOINTS=0 timeout 120 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe threads.x86 \
			-e func:work -e "line:probe_threads.c:$(grep -n MARK_WORK "$PROGS/probe_threads.c" | cut -d: -f1)" \
			--format=json -o out.thr.json 2> err.thr
		rc=$?
		wait "$gpid"
		check "threads: sonde exits 0" test "$rc" -eq 0
		check "threads: program output unchanged" cmp -s plain.thr stub.thr
		check "threads: func:work counts 1200 calls and returns, the line 1200 hits, exit status $prc" jq_py out.thr.json \
			"p=d['probes']; assert (p[0]['calls'],p[0]['returns'],p[1]['hits'],d['target'].get('exit_status'))==(1200,1200,1200,$prc), (p, d['target'])"
	else
		notok "threads: gdbserver listens" "$(cat gdbserver.thr.err)"
	fi

	# --- serial: a pty pair, gdbserver on one end, sonde on the other -------------
	if ! command -v socat >/dev/null; then
		skip "serial: remote probes" "socat missing (apt-get install socat)"
	else
		socat -d -d pty,raw,echo=0 pty,raw,echo=0 2> socat.err &
		stubs+=("$!")
		for _ in $(seq 100); do [ "$(grep -c 'PTY is' socat.err)" -ge 2 ] && break; sleep 0.05; done
		mapfile -t ptys < <(sed -n 's/.*PTY is //p' socat.err)
		if [ "${#ptys[@]}" -ne 2 ]; then
			notok "serial: socat pty pair" "$(head -c 300 socat.err)"
		else
			gdbserver "${ptys[0]}" ./prog.x86 $N > stub.serial 2> gdbserver.serial.err &
			gpid=$!; stubs+=("$gpid")
			sleep 0.3
			# Breakpoints only here (the line probe too): the other path on gdbserver.
			SONDE_REMOTE_TRACEPOINTS=0 timeout 120 "$SONDE" probe --target "serial:${ptys[1]},115200" --exe prog.x86 "${SPECS[@]}" \
				--format=json -o out.serial.json 2> err.serial
			rc=$?
			# A pty sends no end of file when sonde closes its side: gdbserver,
			# its program done, waits for another command.
			timeout 10 tail --pid="$gpid" -f /dev/null
			kill "$gpid" 2>/dev/null
			check "serial: sonde exits 0" test "$rc" -eq 0
			[ "$rc" -eq 0 ] && check "serial: program output unchanged" cmp -s plain.x86 stub.serial
			[ "$rc" -eq 0 ] && check_counts serial out.serial.json plain.x86
			[ "$rc" -eq 0 ] || cat err.serial
		fi
	fi
fi

# --- --duration: breakpoints removed, detached, the program runs on ------------------
if command -v qemu-aarch64 >/dev/null && [ -x prog.aarch64 ]; then
	BIG=3000000
	qemu-aarch64 -L /usr/aarch64-linux-gnu ./prog.aarch64 $BIG > plain.big
	port=$(free_port)
	qemu-aarch64 -g "$port" -L /usr/aarch64-linux-gnu ./prog.aarch64 $BIG > stub.big 2>&1 &
	qpid=$!; stubs+=("$qpid")
	wait_listen "$port"
	timeout 60 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe prog.aarch64 -e func:step \
		--duration 1 --format=json -o out.big.json 2> err.big
	rc=$?
	timeout 60 tail --pid="$qpid" -f /dev/null
	check "duration: sonde exits 0" test "$rc" -eq 0
	check "duration: target detached while running" jq_py out.big.json \
		"assert d['target']['state'].startswith('detached') and 0 < d['probes'][0]['calls'] < $BIG, d"
	check "duration: program runs on to the same output" cmp -s plain.big stub.big

	# A kind that needs the local engine: refused, the program untouched.
	port=$(free_port)
	qemu-aarch64 -g "$port" -L /usr/aarch64-linux-gnu ./prog.aarch64 $N > stub.refused 2>&1 &
	qpid=$!; stubs+=("$qpid")
	wait_listen "$port"
	timeout 60 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe prog.aarch64 -e func:step -e sys:100ms \
		> /dev/null 2> err.refused
	rc=$?
	timeout 60 tail --pid="$qpid" -f /dev/null
	check "sys probe refused remotely (exit 2, clear message)" \
		bash -c "[ $rc -eq 2 ] && grep -q '^sonde: error: .*sys probes are not available on remote targets' err.refused"
	check "refused: the program ran on unchanged" cmp -s plain.aarch64 stub.refused
fi

# --- Ctrl-C: breakpoints removed (a call may be pending), detached, the program runs on ----
if command -v gdbserver >/dev/null && [ -x prog.x86 ]; then
	BIG=3000000
	./prog.x86 $BIG > plain.int
	port=$(free_port)
	gdbserver --once "127.0.0.1:$port" ./prog.x86 $BIG > stub.int 2> gdbserver.int.err &
	gpid=$!; stubs+=("$gpid")
	wait_listen "$port"
	"$SONDE" probe --target "tcp:127.0.0.1:$port" --exe prog.x86 -e func:step -e func:account \
		-e "line:remote_counts.c:$L" --format=json -o out.int.json 2> err.int &
	spid=$!
	sleep 2
	kill -INT "$spid"
	wait "$spid"
	rc=$?
	timeout 60 tail --pid="$gpid" -f /dev/null
	check "Ctrl-C: sonde exits 0" test "$rc" -eq 0
	check "Ctrl-C: target detached while running, calls matched" jq_py out.int.json \
		"p=d['probes'][0]; assert d['target']['state'].startswith('detached') and 0 < p['calls'] < $BIG and p['calls']-1 <= p['returns'] <= p['calls'], d"
	# The line probe is counted without a stop (in the target, remote_count.c,
	# or by the stub's tracepoint): its count, read after the interrupt, is
	# that of account's calls (the line runs once per call; one less when the
	# interrupt came between account's entry and the line).
	check "Ctrl-C: the line's count (no stop per hit) equals account's calls" jq_py out.int.json \
		"p=d['probes']; assert ('counted in the target' in p[2]['where'] or 'counted by the stub' in p[2]['where']) and 0 < p[1]['calls'] - 1 <= p[2]['hits'] <= p[1]['calls'], p"
	check "Ctrl-C: program runs on to the same output" cmp -s plain.int stub.int
fi

# --- stubs that do not speak the protocol -----------------------------------------------
bad_stub() {  # MODE PORTFILE: silent (accepts, says nothing) or garbage
	python3 - "$1" "$2" <<'EOF' &
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(1)
open(sys.argv[2], "w").write(str(s.getsockname()[1]))
c, _ = s.accept()
end = time.time() + 30
try:
    while time.time() < end:
        if sys.argv[1] == "garbage":
            c.send(b"\x00garbage$\xff#zz+-" * 64)
        time.sleep(0.01)
except OSError:
    pass
EOF
	stubs+=("$!")
}
for mode in silent garbage; do
	bad_stub $mode port.$mode
	for _ in $(seq 100); do [ -s port.$mode ] && break; sleep 0.05; done
	start=$(date +%s)
	timeout 30 "$SONDE" probe --target "tcp:127.0.0.1:$(cat port.$mode)" --exe "$BUILD/bin/sonde" \
		--timeout 1 -e func:main > /dev/null 2> err.$mode
	rc=$?
	took=$(( $(date +%s) - start ))
	if [ "$rc" -eq 2 ] && [ "$took" -le 10 ] && grep -q "^sonde: error: tcp:127.0.0.1:" err.$mode; then
		ok "$mode stub: clear error, exit 2, in ${took}s ($(head -c 160 err.$mode))"
	else
		notok "$mode stub: clear error, exit 2, within the timeout" "exit $rc after ${took}s: $(head -c 300 err.$mode)"
	fi
done

"$SONDE" probe --target tcp:127.0.0.1:1 -e func:main > /dev/null 2> err.noexe
check "--target without --exe: usage error" bash -c "[ $? -eq 1 ] && grep -q -- '--exe' err.noexe"
"$SONDE" probe --target tcp:127.0.0.1:1 --exe "$BUILD/bin/sonde" -e func:main > /dev/null 2> err.refused_conn
check "connection refused: exit 2 with the reason" bash -c "[ $? -eq 2 ] && grep -q 'cannot connect' err.refused_conn"

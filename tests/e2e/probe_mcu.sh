#!/usr/bin/env bash
# probe_mcu.sh — sonde probe --target on microcontroller firmware (issue 26):
# tests/progs/mcu_counts.c bare metal on QEMU's Cortex-M0 (microbit), M3
# (mps2-an385), M4F (mps2-an386, hard float) and RV32IMAC (riscv32 virt),
# over TCP and over a serial line (a socat pty pair).  The firmware
# prints its own counts (semihosting) and exits (semihosting SYS_EXIT):
# func, line, branch, var (int in a register, float in memory and in a
# register: an FPU register on the M4F), assert and
# time probes must give exactly those, the output unchanged; a line inside a
# Thumb-2 IT block is counted at its IT instruction.  Then, on a long M3 run
# behind tests/tools/rsp_proxy.py (which logs sonde's packets): --duration,
# Ctrl-C (also with the code read-only: hardware breakpoints) and a stub
# that vanishes end the session with every Z0/Z1 taken out (z0/z1) and the
# target detached (D), the firmware running on to the same
# output.  A missing toolchain or QEMU is a skip.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/remote_lib.sh"

src="$PROGS/mcu_counts.c"
L=$(grep -n "/\* MARK_LINE \*/" "$src" | cut -d: -f1)
B=$(grep -n "/\* BRANCH_LINE \*/" "$src" | cut -d: -f1)
C=$(grep -n "/\* CLAMP_LINE \*/" "$src" | cut -d: -f1)
PROXY="$ROOT/tests/tools/rsp_proxy.py"

SPECS=(-e func:step -e "line:mcu_counts.c:$L" -e "var:mcu_counts.c:$L:v" -e "var:mcu_counts.c:$L:g_f"
       -e "assert:mcu_counts.c:$L:v % 7 != 0" -e "branch:mcu_counts.c:$B" -e time:tick -e time:step
       -e func:clamp -e "line:mcu_counts.c:$C" -e var:bump:f)

# check_counts NAME OUT.JSON PLAIN: the probes against the firmware's own line.
check_counts() {
	python3 - "$@" <<'EOF2'
import json, sys
name, out, plain = sys.argv[1:4]
w = open(plain).read().split()
c = {w[i]: int(w[i + 1]) for i in range(0, len(w) - 1, 2)}
d = json.load(open(out))
p = {q["id"]: q for q in d["probes"]}
calls, runs = c["step_calls"], c["line_runs"]
checks = [
    (f"func:step {calls} calls and returns, called from main",
     (p[1]["calls"], p[1]["returns"], p[1]["callers"]) == (calls, calls, [{"name": "main", "calls": calls}]), p[1]),
    (f"line MARK_LINE {runs} runs", p[2]["hits"] == runs, p[2]),
    (f"var v (int) sums to {c['sum_v']}", (p[3]["count"], p[3]["sum"], p[3]["unavailable"]) == (runs, c["sum_v"], 0), p[3]),
    (f"var g_f (float) sums to {c['sum_f_milli'] / 1000}",
     p[4]["count"] == runs and round(p[4]["sum"] * 1000) == c["sum_f_milli"] and p[4]["unavailable"] == 0, p[4]),
    (f"assert v % 7 != 0 fails {c['sevens']} times", (p[5]["evaluated"], p[5]["failures"]) == (runs, c["sevens"]), p[5]),
    (f"branch: taken / not taken are {c['thirds']} and {calls - c['thirds']} (in some order)",
     p[6]["hits"] == calls and sorted((p[6]["taken"], p[6]["not_taken"])) == sorted((c["thirds"], calls - c["thirds"])), p[6]),
    (f"time:tick {c['ticks']} hits, time:step {calls} with {calls - 1} intervals from tick",
     (p[7]["hits"], p[8]["hits"], p[8]["interval_from"], p[8]["intervals"]) == (c["ticks"], calls, 7, calls - 1)
     and 0 < p[8]["min_ns"] <= p[8]["max_ns"], p[8]),
    (f"func:clamp {runs} calls, its line {runs} hits", (p[9]["calls"], p[9]["returns"], p[10]["hits"]) == (runs, runs, runs), p[10]),
    (f"var bump:f (float in a register: s0 on the M4F) sums to {c['sum_f_milli'] / 1000}",
     p[11]["count"] == runs and round(p[11]["sum"] * 1000) == c["sum_f_milli"] and p[11]["unavailable"] == 0
     and (name != "m4f" or "register s0" in p[11]["where"]), p[11]),
    ("hits resumed without the stub's step (instructions emulated by sonde: push, lw/sw, addi...)",
     d["target"]["emulated_hits"] > 0, d["target"]),
    ("the firmware exited (semihosting SYS_EXIT)", d["target"].get("exit_status") == 0, d["target"]),
]
for what, good, detail in checks:
    print(f"ok - {name}: {what}" if good else f"not ok - {name}: {what}: {json.dumps(detail)[:300]}")
EOF2
}

# run_board NAME QEMU-CMD...: plain run, then under -S -gdb with the probes.
run_board() {
	local name=$1; shift
	timeout 30 "$@" > "plain.$name" 2>&1 < /dev/null
	grep -q '^step_calls' "plain.$name" || { notok "$name: plain run" "$(head -c 300 "plain.$name")"; return; }
	local port; port=$(free_port)
	timeout 60 "$@" -S -gdb "tcp:127.0.0.1:$port" > "stub.$name" 2>&1 < /dev/null &
	local qpid=$!; stubs+=("$qpid")
	wait_listen "$port" || { notok "$name: stub listens" "$*"; return; }
	timeout 60 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe "fw.$name.elf" "${SPECS[@]}" \
		--format=json -o "out.$name.json" 2> "err.$name"
	local rc=$?
	wait "$qpid"
	check "$name: sonde exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { head -c 600 "err.$name"; return; }
	check "$name: firmware output unchanged" cmp -s "plain.$name" "stub.$name"
	check_counts "$name" "out.$name.json" "plain.$name"
}

if ! command -v arm-none-eabi-gcc >/dev/null || ! command -v qemu-system-arm >/dev/null; then
	skip "cortex-m: remote probes" "arm-none-eabi-gcc or qemu-system-arm missing (apt-get install gcc-arm-none-eabi qemu-system-arm)"
else
	QARM=(-nographic -semihosting)
	build_arm m0 -mcpu=cortex-m0 && run_board m0 qemu-system-arm -M microbit "${QARM[@]}" -kernel fw.m0.elf \
		|| notok "m0: build" "$(head -c 300 build.m0.err)"
	build_arm m3 -mcpu=cortex-m3 && run_board m3 qemu-system-arm -M mps2-an385 "${QARM[@]}" -kernel fw.m3.elf \
		|| notok "m3: build" "$(head -c 300 build.m3.err)"
	build_arm m4f -mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard && \
		run_board m4f qemu-system-arm -M mps2-an386 "${QARM[@]}" -kernel fw.m4f.elf \
		|| notok "m4f: build" "$(head -c 300 build.m4f.err)"
fi
if ! command -v riscv64-unknown-elf-gcc >/dev/null || ! command -v qemu-system-riscv32 >/dev/null; then
	skip "rv32: remote probes" "riscv64-unknown-elf-gcc or qemu-system-riscv32 missing (apt-get install gcc-riscv64-unknown-elf qemu-system-misc)"
else
	build_rv32 rv32 && run_board rv32 qemu-system-riscv32 -M virt -bios none -nographic -semihosting -kernel fw.rv32.elf \
		|| notok "rv32: build" "$(head -c 300 build.rv32.err)"
fi
[ -f fw.m3.elf ] || exit 0

# --- a line probe inside clamp()'s IT block goes on the IT instruction (objdump says where),
# through the proxy, whose log shows where sonde put its breakpoint.
it=$(arm-none-eabi-objdump -d fw.m3.elf | awk '/<clamp>:/{f=1} f && $3=="it"{print $1; exit}' | tr -d ' :')
clamp=$(arm-none-eabi-nm fw.m3.elf | awk '$3=="clamp"{print $1}')
if [ -n "$it" ] && [ -n "$clamp" ]; then
	off=$((0x$it + 2 - 0x$clamp))
	port=$(free_port); pport=$(free_port)
	timeout 60 qemu-system-arm -M mps2-an385 -nographic -semihosting -kernel fw.m3.elf -S -gdb "tcp:127.0.0.1:$port" \
		> stub.it 2>&1 < /dev/null &
	qpid=$!; stubs+=("$qpid")
	wait_listen "$port"
	python3 "$PROXY" "$pport" "127.0.0.1:$port" --log px.it &
	stubs+=($!)
	wait_listen "$pport"
	printf '# named probes\nsteps = func:step\n' > lib.txt
	timeout 60 "$SONDE" probe --target "tcp:127.0.0.1:$pport" --exe fw.m3.elf -e "line:clamp+$off" \
		--library lib.txt -e @steps --format=json -o out.it.json 2> err.it
	wait "$qpid"
	read -r _ _ _ runs _ < plain.m3
	check "m3: line:clamp+$off (in an IT block) has its breakpoint on the IT instruction 0x$it, $runs hits" \
		bash -c "grep -q '^Z0,$it,' px.it && ! grep -q '^Z0,$(printf %x $((0x$it + 2))),' px.it && \
		python3 -c \"import json; d=json.load(open('out.it.json')); assert d['probes'][0]['hits'] == $runs\""
	read -r _ calls _ < plain.m3
	check "m3: --library with --target: -e @steps (func:step) counts $calls calls" jq_py out.it.json \
		"p=d['probes'][1]; assert (p['spec'], p['calls'], p['returns']) == ('func:step', $calls, $calls), p"
else
	skip "m3: IT block" "no it instruction in clamp()"
fi

# --- code that cannot be written (the proxy plays OpenOCD on a board with flash) -----------
# hw NAME SONDE-OPTION PROXY-OPTIONS...: the M3 firmware with func, line, var and branch probes
hw() {
	local name=$1 opt=$2 port pport; shift 2
	port=$(free_port); pport=$(free_port)
	timeout 60 qemu-system-arm -M mps2-an385 -nographic -semihosting -kernel fw.m3.elf -S -gdb "tcp:127.0.0.1:$port" \
		> "stub.$name" 2>&1 < /dev/null &
	local qpid=$!; stubs+=("$qpid")
	wait_listen "$port"
	python3 "$PROXY" "$pport" "127.0.0.1:$port" --log "px.$name" "$@" &
	stubs+=($!)
	wait_listen "$pport"
	timeout 60 "$SONDE" probe --target "tcp:127.0.0.1:$pport" --exe fw.m3.elf $opt -e func:step -e "line:mcu_counts.c:$L" \
		-e "var:mcu_counts.c:$L:v" -e "branch:mcu_counts.c:$B" --format=json -o "out.$name.json" 2> "err.$name"
	hwrc=$?
	timeout 60 tail --pid="$qpid" -f /dev/null
}
read -r _ calls _ runs _ sum_v _ _ _ _ _ thirds _ < plain.m3
HWCHECK="p=d['probes']; assert (p[0]['calls'], p[0]['returns'], p[1]['hits'], p[2]['sum'], sorted((p[3]['taken'], p[3]['not_taken']))) == ($calls, $calls, $runs, $sum_v, sorted(($thirds, $calls - $thirds))), p"
hw ro "" --readonly 0-0x40000
hw_exact() { [ "$hwrc" -eq 0 ] && cmp -s plain.m3 "stub.$1" && jq_py "out.$1.json" "$HWCHECK"; }
check "flash, no memory map: Z0 refused (E01), every probe on Z1, exact" \
	eval 'hw_exact ro && grep -q "^Z1," px.ro && [ "$(grep -c "^Z0," px.ro)" -le 1 ]'
hw map "" --readonly 0-0x40000 --flash 0-0x40000
check "flash in the memory map: Z1 from the start (no Z0), exact" \
	eval 'hw_exact map && grep -q "^qXfer:memory-map:read::" px.map && ! grep -q "^Z0," px.map'
hw limit "--hw-breakpoints 3" --readonly 0-0x40000 --flash 0-0x40000
check "--hw-breakpoints 3 with 4 needed: refused before anything is placed, naming the limit" bash -c \
	"[ $hwrc -eq 2 ] && grep -q 'need 4 hardware breakpoints.*the target has 3 comparators.*nothing placed' err.limit && ! grep -q '^Z' px.limit && cmp -s plain.m3 stub.limit"
hw stublimit "" --readonly 0-0x40000 --flash 0-0x40000 --hw-limit 2
check "a stub with 2 comparators: the 3rd refused with a clear message, the 2 placed taken out" bash -c \
	"[ $hwrc -eq 2 ] && grep -q 'refused hardware breakpoint number 3.*--hw-breakpoints' err.stublimit && [ \$(grep -c '^Z1,' px.stublimit) -eq 3 ] && [ \$(grep -c '^z1,' px.stublimit) -eq 2 ] && cmp -s plain.m3 stub.stublimit"

# --- serial line: QEMU's gdbstub on one end of a pty pair, sonde on the other --------------
# serial NAME QEMU-CMD...: the firmware fw.NAME.elf, its plain output plain.NAME
serial() {
	local name=$1; shift
	[ -f "fw.$name.elf" ] && [ -f "plain.$name" ] || return
	socat -d -d pty,raw,echo=0 pty,raw,echo=0 2> "socat.$name.err" &
	stubs+=($!)
	for _ in $(seq 100); do [ "$(grep -c 'PTY is' "socat.$name.err")" -ge 2 ] && break; sleep 0.05; done
	mapfile -t ptys < <(sed -n 's/.*PTY is //p' "socat.$name.err")
	if [ "${#ptys[@]}" -lt 2 ]; then
		notok "$name serial: socat pty pair" "$(head -c 300 "socat.$name.err")"
		return
	fi
	timeout 60 "$@" -S -gdb "${ptys[0]}" > "stub.serial.$name" 2>&1 < /dev/null &
	local qpid=$!; stubs+=("$qpid")
	sleep 0.3
	timeout 60 "$SONDE" probe --target "serial:${ptys[1]},115200" --exe "fw.$name.elf" "${SPECS[@]}" \
		--format=json -o "out.serial.$name.json" 2> "err.serial.$name"
	local rc=$?
	kill "$qpid" 2>/dev/null   # QEMU exits with the firmware; a pty end does not tell sonde
	wait "$qpid" 2>/dev/null
	check "$name serial: sonde exits 0" test "$rc" -eq 0
	if [ "$rc" -eq 0 ]; then
		check "$name serial: firmware output unchanged" cmp -s "plain.$name" "stub.serial.$name"
		check_counts "$name serial" "out.serial.$name.json" "plain.$name"
	else
		head -c 600 "err.serial.$name"
	fi
}
if ! command -v socat >/dev/null; then
	skip "serial: remote probes" "socat missing (apt-get install socat)"
else
	serial m0 qemu-system-arm -M microbit -nographic -semihosting -kernel fw.m0.elf
	serial m3 qemu-system-arm -M mps2-an385 -nographic -semihosting -kernel fw.m3.elf
	serial m4f qemu-system-arm -M mps2-an386 -nographic -semihosting -kernel fw.m4f.elf
	serial rv32 qemu-system-riscv32 -M virt -bios none -nographic -semihosting -kernel fw.rv32.elf
fi

# --- leaving early: --duration, Ctrl-C, a stub that vanishes (long run behind the proxy) ---
build_arm long -mcpu=cortex-m3 -DN=3000 || { notok "long: build" "$(head -c 300 build.long.err)"; exit 0; }
QLONG=(qemu-system-arm -M mps2-an385 -nographic -semihosting -kernel fw.long.elf)
timeout 30 "${QLONG[@]}" > plain.long 2>&1 < /dev/null
# leave NAME HOW: HOW = duration | int | vanish
leave() {   # NAME HOW [PROXY-OPTIONS...]
	local name=$1 how=$2 port pport; shift 2
	port=$(free_port); pport=$(free_port)
	timeout 60 "${QLONG[@]}" -S -gdb "tcp:127.0.0.1:$port" -pidfile "qemu.$name.pid" > "stub.$name" 2>&1 < /dev/null &
	local qpid=$!; stubs+=("$qpid")
	wait_listen "$port"
	python3 "$PROXY" "$pport" "127.0.0.1:$port" --log "px.$name" "$@" &
	stubs+=($!)
	wait_listen "$pport"
	local extra=()
	[ "$how" = duration ] && extra=(--duration 0.5)
	timeout 60 "$SONDE" probe --target "tcp:127.0.0.1:$pport" --exe fw.long.elf --timeout 2 -e func:step \
		-e "line:mcu_counts.c:$L" -e "branch:mcu_counts.c:$B" "${extra[@]}" --format=json -o "out.$name.json" 2> "err.$name" &
	local spid=$!
	case $how in
	int)   # Ctrl-C once the run has begun (the first c / vCont;c through the
	       # proxy): before the connection sonde has no handler yet, and under
	       # the sanitizers its start can outlast a fixed sleep.
		local w=0
		until grep -qE '^(c|C|vCont;[cC])' "px.$name" 2>/dev/null || [ $w -ge 300 ]; do sleep 0.1; w=$((w + 1)); done
		sleep 0.3; kill -INT "$spid" ;;
	vanish) sleep 0.7; kill -KILL "$(cat "qemu.$name.pid")" ;;   # no goodbye (SIGTERM makes QEMU send W00)
	esac
	wait "$spid"
	local rc=$?
	if [ "$how" = vanish ]; then
		check "vanish: sonde exits 0 with the target gone" jq_py "out.$name.json" \
			"assert $rc == 0 and d['target']['state'] == 'gone' and d['probes'][0]['calls'] > 0, d['target']"
		return
	fi
	timeout 60 tail --pid="$qpid" -f /dev/null
	check "$name: sonde exits 0" test "$rc" -eq 0
	check "$name: detached while running, calls matched" jq_py "out.$name.json" \
		"p=d['probes'][0]; assert d['target']['state'].startswith('detached') and 0 < p['calls'] < 3000 and p['calls']-1 <= p['returns'] <= p['calls'], d['target']"
	# Every Z0 / Z1 sonde placed has its z0 / z1, and D was the last word.
	check "$name: every breakpoint taken out (z for each Z), then D" python3 - "px.$name" <<'EOF2'
import collections, sys
pk = [l.rstrip("\n") for l in open(sys.argv[1])]
ins = collections.Counter(p[:2].lower() + p.split(",")[1] for p in pk if p.startswith(("Z0,", "Z1,")) )
out = collections.Counter(p[:2] + p.split(",")[1] for p in pk if p.startswith(("z0,", "z1,")))
last = [p for p in pk if not p.startswith("(")][-1]
assert ins and ins == out and last.startswith("D"), (ins - out, out - ins, last)
EOF2
	check "$name: the firmware runs on to the same output" cmp -s plain.long "stub.$name"
}
leave duration duration
leave int int
leave int-flash int --readonly 0-0x400000 --flash 0-0x400000
leave vanish vanish

#!/usr/bin/env bash
# probe_remote_plugin.sh — plugin probes on remote targets (`sonde probe
# --target ... --plugin x.so -e plugin:account:DELTA`, issue 26): the plugin
# tests/progs/probe_plugin_remote.c, built for this machine, runs its pre and
# post handlers in sonde at every hit of account() in remote_counts.c under
# qemu-aarch64 -g and qemu-mips -g (big-endian) and under gdbserver (x86-64,
# where regs is filled too), and in mcu_counts.c on a Cortex-M3
# (qemu-system-arm -M mps2-an385, over TCP and over a serial line: a socat
# pty pair) and an RV32 board (qemu-system-riscv32 -M virt).  pre and post must run once per call (the program prints its call
# count, line_runs), the first argument read from the registers must sum to
# the program's sum_v, the counter line_runs read from memory through the
# stub must be the calls so far at every hit; sonde exits 0, the program's
# output unchanged; on aarch64 also with every displaced instruction stepped
# (SONDE_REMOTE_EMULATE=0).  --duration on a long aarch64 run: detached,
# pre == post.  tests/progs/probe_plugin.c, an ABI-1 plugin written for local
# x86-64 processes, works unchanged under gdbserver.  A missing toolchain or
# QEMU is a skip.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/remote_lib.sh"

cc -shared -fPIC -Wall -Wextra -Werror -I"$ROOT/include" -o plug.so "$PROGS/probe_plugin_remote.c" \
	|| { notok "plugin builds with cc -shared -fPIC -Iinclude" "cc failed"; exit 0; }

# delta NM ELF: line_runs minus account (bit 0 of a Thumb symbol cleared).
delta() {
	"$1" "$2" | python3 -c "
import sys
s = {f[2]: int(f[0], 16) for f in (l.split() for l in sys.stdin) if len(f) == 3}
print(s['line_runs'] - (s['account'] & ~1))"
}

# check_plugin NAME OUT.JSON PLAIN: the plugin's report against the program's own counts.
check_plugin() {
	python3 - "$@" <<'EOF2'
import json, sys
name, out, plain = sys.argv[1:4]
w = open(plain).read().split()
c = {w[i]: int(w[i + 1]) for i in range(0, len(w) - 1, 2)}
d = json.load(open(out))
p = d["probes"][0]
r = p.get("report", "").split()
r = {r[i]: r[i + 1] for i in range(0, len(r) - 1, 2)}
runs = c["line_runs"]
checks = [
    (f"plugin:account hit {runs} times, pre and post each called {runs} times",
     (p["hits"], int(r.get("pre", -1)), int(r.get("post", -1))) == (runs, runs, runs) and runs > 0, p),
    (f"the first argument (v, a register) sums to {c['sum_v']}", int(r.get("sum_v", -1)) == c["sum_v"], p),
    (f"line_runs read from memory is the calls so far at each of the {runs} hits",
     (int(r.get("runs_ok", -1)), int(r.get("read_fail", -1))) == (runs, 0), p),
    ("pre sees the pc at the probed address, post past it; regs is x86-64's there, zero elsewhere",
     (int(r.get("pc_ok", -1)), int(r.get("moved", -1)), int(r.get("regs_ok", -1))) == (runs, runs, runs), p),
    ("the target exited 0", d["target"].get("exit_status") == 0, d["target"]),
]
for what, good, detail in checks:
    print(f"ok - {name}: {what}" if good else f"not ok - {name}: {what}: {json.dumps(detail)[:400]}")
EOF2
}

# probe_run NAME ELF NM PORT QPID: the plugin probe on the stub at port (QEMU's pid qpid).
probe_run() {   # NAME ELF NM PORT|serial:PTY QEMU-PID
	local name=$1 elf=$2 nm=$3 port=$4 qpid=$5 target
	local d; d=$(delta "$nm" "$elf")
	[ -n "$d" ] || { notok "$name: symbols" "account / line_runs not found by $nm"; kill "$qpid"; return; }
	case $port in
	serial:*) target="$port,115200" ;;
	*) target="tcp:127.0.0.1:$port"
	   wait_listen "$port" || { notok "$name: stub listens" "port $port"; return; } ;;
	esac
	timeout 60 "$SONDE" probe --target "$target" --exe "$elf" --plugin ./plug.so \
		-e "plugin:account:$d" --format=json -o "out.$name.json" 2> "err.$name"
	local rc=$?
	wait "$qpid"
	check "$name: sonde exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { head -c 600 "err.$name"; return; }
	check "$name: program output unchanged" cmp -s "plain.$name" "stub.$name"
	check_plugin "$name" "out.$name.json" "plain.$name"
}

N=200
if ! command -v qemu-aarch64 >/dev/null || ! command -v aarch64-linux-gnu-gcc >/dev/null ||
   [ ! -d /usr/aarch64-linux-gnu ]; then
	skip "aarch64: plugin probes" "qemu-aarch64 or aarch64-linux-gnu-gcc missing (apt-get install qemu-user gcc-aarch64-linux-gnu)"
elif aarch64-linux-gnu-gcc -g -O1 -I"$PROGS" -o prog.aarch64 "$PROGS/remote_counts.c"; then
	NM=aarch64-linux-gnu-nm; command -v $NM >/dev/null || NM=nm
	qemu-aarch64 -L /usr/aarch64-linux-gnu ./prog.aarch64 $N > plain.aarch64
	port=$(free_port)
	qemu-aarch64 -g "$port" -L /usr/aarch64-linux-gnu ./prog.aarch64 $N > stub.aarch64 2>&1 &
	qpid=$!; stubs+=("$qpid")
	probe_run aarch64 prog.aarch64 $NM "$port" "$qpid"

	# The same with every displaced instruction single-stepped by the stub
	# (post after the step, not after sonde's emulation).
	cp plain.aarch64 plain.aarch64-step
	port=$(free_port)
	qemu-aarch64 -g "$port" -L /usr/aarch64-linux-gnu ./prog.aarch64 $N > stub.aarch64-step 2>&1 &
	qpid=$!; stubs+=("$qpid")
	SONDE_REMOTE_EMULATE=0 probe_run aarch64-step prog.aarch64 $NM "$port" "$qpid"
	[ -f out.aarch64.json ] && [ -f out.aarch64-step.json ] &&
		check "aarch64: hits resumed by sonde's emulation, then (SONDE_REMOTE_EMULATE=0) by the stub's step" python3 -c "
import json
a = json.load(open('out.aarch64.json'))['target']; b = json.load(open('out.aarch64-step.json'))['target']
assert a['emulated_hits'] > 0 and b['emulated_hits'] == 0 and b['stepped_hits'] > 0, (a, b)"

	# init refusing (no DELTA): exit 2 with the plugin's name, the program runs on unchanged.
	port=$(free_port)
	qemu-aarch64 -g "$port" -L /usr/aarch64-linux-gnu ./prog.aarch64 $N > stub.refused 2>&1 &
	qpid=$!; stubs+=("$qpid")
	wait_listen "$port"
	timeout 60 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe prog.aarch64 --plugin ./plug.so \
		-e func:account -e plugin:account > /dev/null 2> err.refused
	rc=$?
	timeout 60 tail --pid="$qpid" -f /dev/null
	check "aarch64: init refusing the probe: exit 2, the program ran on unchanged" \
		bash -c "[ $rc -eq 2 ] && grep -q 'plugin remote refused the probe' err.refused && cmp -s plain.aarch64 stub.refused"

	# --duration on a long run: detached while running, every pre with its post.
	BIG=3000000
	port=$(free_port)
	qemu-aarch64 -g "$port" -L /usr/aarch64-linux-gnu ./prog.aarch64 $BIG > stub.big 2>&1 &
	qpid=$!; stubs+=("$qpid")
	wait_listen "$port"
	timeout 60 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe prog.aarch64 --plugin ./plug.so \
		-e "plugin:account:$(delta $NM prog.aarch64)" --duration 1 --format=json -o out.big.json 2> err.big
	rc=$?
	timeout 60 tail --pid="$qpid" -f /dev/null
	check "aarch64 --duration: sonde exits 0" test "$rc" -eq 0
	check "aarch64 --duration: detached while running, pre == post == hits > 0" jq_py out.big.json "
p = d['probes'][0]; r = p['report'].split(); r = dict(zip(r[::2], r[1::2]))
assert d['target']['state'].startswith('detached') and 0 < p['hits'] == int(r['pre']) == int(r['post']), d"
	check "aarch64 --duration: the program ran on to its end" grep -q '^step_calls' stub.big
else
	notok "aarch64: build" "aarch64-linux-gnu-gcc failed"
fi

if ! command -v qemu-mips >/dev/null || ! command -v mips-linux-gnu-gcc >/dev/null || [ ! -d /usr/mips-linux-gnu ]; then
	skip "mips: plugin probes" "qemu-mips or mips-linux-gnu-gcc missing (apt-get install qemu-user gcc-mips-linux-gnu)"
elif mips-linux-gnu-gcc -g -O1 -I"$PROGS" -o prog.mips "$PROGS/remote_counts.c"; then
	NM=mips-linux-gnu-nm; command -v $NM >/dev/null || NM=nm
	qemu-mips -L /usr/mips-linux-gnu ./prog.mips $N > plain.mips
	port=$(free_port)
	qemu-mips -g "$port" -L /usr/mips-linux-gnu ./prog.mips $N > stub.mips 2>&1 &
	qpid=$!; stubs+=("$qpid")
	probe_run mips prog.mips $NM "$port" "$qpid"    # big-endian: line_runs read as the target's bytes
else
	notok "mips: build" "mips-linux-gnu-gcc failed"
fi

if ! command -v arm-none-eabi-gcc >/dev/null || ! command -v qemu-system-arm >/dev/null; then
	skip "m3: plugin probes" "arm-none-eabi-gcc or qemu-system-arm missing (apt-get install gcc-arm-none-eabi qemu-system-arm)"
elif build_arm m3 -mcpu=cortex-m3; then
	Q=(qemu-system-arm -M mps2-an385 -nographic -semihosting -kernel fw.m3.elf)
	timeout 30 "${Q[@]}" > plain.m3 2>&1 < /dev/null
	port=$(free_port)
	timeout 60 "${Q[@]}" -S -gdb "tcp:127.0.0.1:$port" > stub.m3 2>&1 < /dev/null &
	qpid=$!; stubs+=("$qpid")
	probe_run m3 fw.m3.elf arm-none-eabi-nm "$port" "$qpid"
	# The same over a serial line (a socat pty pair): the stub on one end, sonde on the other.
	if command -v socat >/dev/null; then
		socat -d -d pty,raw,echo=0 pty,raw,echo=0 2> socat.err &
		stubs+=($!)
		for _ in $(seq 100); do [ "$(grep -c 'PTY is' socat.err)" -ge 2 ] && break; sleep 0.05; done
		mapfile -t ptys < <(sed -n 's/.*PTY is //p' socat.err)
		if [ "${#ptys[@]}" -lt 2 ]; then
			notok "m3 serial: socat pty pair" "$(head -c 300 socat.err)"
		else
			cp plain.m3 plain.m3-serial
			timeout 60 "${Q[@]}" -S -gdb "${ptys[0]}" > stub.m3-serial 2>&1 < /dev/null &
			qpid=$!; stubs+=("$qpid")
			sleep 0.3
			probe_run m3-serial fw.m3.elf arm-none-eabi-nm "serial:${ptys[1]}" "$qpid"
		fi
	else
		skip "m3 serial: plugin probes" "socat missing (apt-get install socat)"
	fi
else
	notok "m3: build" "$(head -c 300 build.m3.err)"
fi

if ! command -v riscv64-unknown-elf-gcc >/dev/null || ! command -v qemu-system-riscv32 >/dev/null; then
	skip "rv32: plugin probes" "riscv64-unknown-elf-gcc or qemu-system-riscv32 missing (apt-get install gcc-riscv64-unknown-elf qemu-system-misc)"
elif build_rv32 rv32; then
	Q=(qemu-system-riscv32 -M virt -bios none -nographic -semihosting -kernel fw.rv32.elf)
	timeout 30 "${Q[@]}" > plain.rv32 2>&1 < /dev/null
	port=$(free_port)
	timeout 60 "${Q[@]}" -S -gdb "tcp:127.0.0.1:$port" > stub.rv32 2>&1 < /dev/null &
	qpid=$!; stubs+=("$qpid")
	probe_run rv32 fw.rv32.elf riscv64-unknown-elf-nm "$port" "$qpid"
else
	notok "rv32: build" "$(head -c 300 build.rv32.err)"
fi

if ! command -v gdbserver >/dev/null; then
	skip "gdbserver: plugin probes" "gdbserver missing (apt-get install gdbserver)"
else
	gcc -g -O1 -I"$PROGS" -o prog.x86 "$PROGS/remote_counts.c" && ./prog.x86 $N > plain.x86
	port=$(free_port)
	gdbserver --once "127.0.0.1:$port" ./prog.x86 $N > stub.x86 2> gdbserver.err &
	qpid=$!; stubs+=("$qpid")
	probe_run x86 prog.x86 nm "$port" "$qpid"

	# An ABI-1 plugin written for local x86-64 processes (tests/progs/probe_plugin.c,
	# its regs and read) works unchanged on an x86-64 remote target.
	if gcc -O2 -g -o loop "$PROGS/probe_loop.c" && cc -shared -fPIC -I"$ROOT/include" -o plug1.so "$PROGS/probe_plugin.c"; then
		./loop > plain.loop
		d=$(nm loop | python3 -c "import sys; s={f[2]: int(f[0], 16) for f in (l.split() for l in sys.stdin) if len(f) == 3}; print(s['g_count'] - s['work'])")
		port=$(free_port)
		gdbserver --once "127.0.0.1:$port" ./loop > stub.loop 2> gdbserver.loop.err &
		qpid=$!; stubs+=("$qpid")
		wait_listen "$port"
		timeout 60 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe loop --plugin ./plug1.so -e "plugin:work:$d" \
			--format=json -o out.abi1.json 2> err.abi1
		rc=$?
		wait "$qpid"
		check "x86 ABI 1: sonde exits 0, program output unchanged" bash -c "[ $rc -eq 0 ] && cmp -s plain.loop stub.loop"
		# probe_loop.c: work(i) for i = 0..999, g_count == i at work's entry.
		check "x86 ABI 1: pre and post 1000 times, rdi and the global sum to 499500, address 0 unreadable" jq_py out.abi1.json "
r = dict(f.split('=', 1) for f in d['probes'][0]['report'].split() if '=' in f)
want = dict(pre='1000', post='1000', sum_arg='499500', sum_global='499500', read_fail='0', null_unreadable='1000',
            hits_ok='1000', pc_ok='1000', post_rsp_ok='1000', errors='0')
assert all(r.get(k) == v for k, v in want.items()), r"
	else
		notok "x86 ABI 1: build" "gcc or cc failed"
	fi
fi

# A plugin probe without --plugin: a usage error before anything is reached.
"$SONDE" probe --target tcp:127.0.0.1:1 --exe "$BUILD/bin/sonde" -e plugin:main > /dev/null 2> err.noplug
check "plugin probe on --target without --plugin: usage error" \
	bash -c "[ $? -eq 1 ] && grep -q 'plugin probes need --plugin' err.noplug"

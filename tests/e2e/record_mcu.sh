#!/usr/bin/env bash
# record_mcu.sh — sonde record --target (issue 26): an exact function profile
# of firmware on QEMU's Cortex-M3 (mps2-an385) and RV32 (virt), timed by the
# target's own counter (the mps2 FPGA counter, 25 MHz; virt's mtime, 10 MHz)
# with QEMU counting time in instructions (-icount shift=0,sleep=off: 1 ns an
# instruction, nothing while halted), so that times are deterministic.
# tests/progs/mcu_profile.c counts its own calls and measures spin()'s time
# with the same counter; built again with -finstrument-functions and
# mcu_cyg.c it prints how often each function was entered (the oracle).
# Checked: every function's calls equal the oracle's and the firmware's own
# counters; both metric invariants; spin's inclusive time within a counter
# tick per call of the firmware's own measure; report, tree,
# callers-callees, flamegraph and export --format=perfetto|pprof read the
# recording (go tool pprof reads the pprof when go is installed); the
# firmware's output unchanged.  The same with --target-ram (every function timed inside the
# target, no stop per call: m3t, rv32t), with a ring of 16 events that fills many times (m3ring,
# rv32ring), and with both paths in one recording (m3mix: two functions in flash behind the
# proxy's memory map, on breakpoints); remote.json and stderr say which path each function took.
# Then, on a long M3 run behind
# tests/tools/rsp_proxy.py: --duration and Ctrl-C leave every breakpoint out
# and the target detached, running on to the same output (with --target-ram too, every
# function's first bytes the ELF's again, read through QEMU's monitor); a target with no
# usable clock is refused before anything is placed.  A missing toolchain or
# QEMU is a skip.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/remote_lib.sh"

PROXY="$ROOT/tests/tools/rsp_proxy.py"
ICOUNT=(-icount shift=0,sleep=off)
FNS="leaf shared from_a from_b fib spin put_num main"
ARM_RAM=0x300000:0x4000     # --target-ram: the MPS2 code SRAM above the firmware, within b.w's reach
RV_RAM=0x80080000:0x4000    # virt's RAM 512 KiB above the firmware, within jal's reach

build_arm() {   # NAME EXTRA-CFLAGS...
	local name=$1; shift
	arm-none-eabi-gcc -g -O1 -ffreestanding -nostdlib -nostartfiles -mthumb -mcpu=cortex-m3 -I"$PROGS" \
		-T "$PROGS/mcu_cortexm.ld" -DCLOCK_ADDR=0x40028018 -c -o "start.$name.o" "$PROGS/mcu_start_cortexm.c" \
		2> "build.$name.err" &&
	arm-none-eabi-gcc -g -O1 -ffreestanding -nostdlib -nostartfiles -mthumb -mcpu=cortex-m3 -I"$PROGS" \
		-T "$PROGS/mcu_cortexm.ld" -DCLOCK_ADDR=0x40028018 "$@" -o "fw.$name.elf" "start.$name.o" -lgcc \
		2>> "build.$name.err"
}
build_rv32() {
	local name=$1; shift
	riscv64-unknown-elf-gcc -g -O1 -ffreestanding -nostdlib -nostartfiles -march=rv32imac -mabi=ilp32 \
		-mcmodel=medany -Wl,--no-warn-rwx-segments -I"$PROGS" -T "$PROGS/mcu_rv32.ld" -DCLOCK_ADDR=0x0200bff8 \
		"$@" -o "fw.$name.elf" "$PROGS/mcu_start_rv32.S" -lgcc 2> "build.$name.err"
}

# wait_closed LOG: until the proxy has logged the end of the connection (it may not have read sonde's
# last packets yet when QEMU, detached, has already run the firmware to its end), 10 s at most
wait_closed() { for _ in $(seq 100); do grep -q '^(closed' "$1" 2>/dev/null && return; sleep 0.1; done; }

# the firmware's output without QEMU's warnings and without the time it measured
untimed() { grep -v '^qemu-system' "$1" | sed 's/ spin_ticks [0-9]*//'; }

# board NAME FW NM HZ PATH SONDE-OPTIONS -- QEMU-CMD...: plain and oracle runs of fw.FW.elf (once),
# then the recording; PATH is how remote.json must say the functions of FNS were timed (in_target or
# breakpoints); RING in the environment: the ring's size in events (SONDE_REMOTE_RING), which must
# then fill at least 3 times.
board() {
	local name=$1 fw=$2 nm=$3 hz=$4 path=$5; shift 5
	local clk=(); while [ "$1" != -- ]; do clk+=("$1"); shift; done; shift
	if [ ! -f "plain.$fw" ]; then
		timeout 30 "$@" -kernel "fw.$fw.elf" "${ICOUNT[@]}" > "plain.$fw" 2>&1 < /dev/null
		timeout 30 "$@" -kernel "fw.$fw.cyg.elf" "${ICOUNT[@]}" > "cyg.$fw" 2>&1 < /dev/null
		"$nm" fw."$fw".cyg.elf > "nm.$fw"
	fi
	grep -q '^leaf_calls' "plain.$fw" && grep -q '^cyg ' "cyg.$fw" ||
		{ notok "$name: plain and oracle runs" "$(head -c 300 "plain.$fw" "cyg.$fw")"; return; }
	local port; port=$(free_port)
	timeout 60 "$@" -kernel "fw.$fw.elf" "${ICOUNT[@]}" -S -gdb "tcp:127.0.0.1:$port" > "stub.$name" 2>&1 < /dev/null &
	local qpid=$!; stubs+=("$qpid")
	wait_listen "$port" || { notok "$name: stub listens" "$*"; return; }
	if [ -n "${PXOPTS:-}" ]; then   # the proxy in between (PXOPTS: its options)
		local pport; pport=$(free_port)
		python3 "$PROXY" "$pport" "127.0.0.1:$port" --log "px.$name" $PXOPTS &
		stubs+=($!)
		wait_listen "$pport"
		port=$pport
	fi
	SONDE_REMOTE_RING=${RING:-} timeout 60 "$SONDE" record --target "tcp:127.0.0.1:$port" --exe "fw.$fw.elf" \
		"${clk[@]}" -o "rec.$name" 2> "err.$name"
	local rc=$?
	wait "$qpid"
	check "$name: sonde record --target exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { head -c 600 "err.$name"; return; }
	# spin_ticks is a time: the counter's phase at the start differs by a tick between runs
	check "$name: firmware output unchanged (but spin_ticks, a time)" cmp -s <(untimed "plain.$fw") <(untimed "stub.$name")
	check "$name: remote.json and stderr say $FNS were timed: $path${RING:+, the ring of $RING events filled and drained 3 times or more, nothing lost}" \
		python3 - "rec.$name/remote.json" "err.$name" "$path" "${RING:-0}" "$FNS" <<'EOF2'
import json, re, sys
d = json.load(open(sys.argv[1]))
err = open(sys.argv[2]).read()
path, ring, fns = sys.argv[3], int(sys.argv[4]), sys.argv[5].split()
by = {f["name"]: f["path"] for f in d["functions"]}
path, _, bp = path.partition(":")   # in_target:F,G: F and G on breakpoints
bp = bp.split(",") if bp else []
assert all(by.get(n) == ("breakpoints" if n in bp else path) for n in fns), by
m = re.search(r"sonde: (\d+) functions timed in the target \(no stop a call\), (\d+) by breakpoints", err)
assert m and int(m.group(1)) == d["functions_in_target"] == sum(1 for f in d["functions"] if f["path"] == "in_target"), m
assert int(m.group(2)) == d["functions_on_breakpoints"] == len(d["functions"]) - d["functions_in_target"]
assert d["ring_complete"] and (d["ring_fills"] >= 3 if ring else True), d
assert all(f.get("why") for f in d["functions"] if f["path"] == "breakpoints"), d["functions"]
EOF2
	grep -v '^qemu-system' "stub.$name" > "own.$name"
	SONDE="$SONDE" PYTHONPATH="$ROOT/tests" python3 - "$name" "rec.$name" "own.$name" "cyg.$fw" "nm.$fw" "$hz" <<'EOF2'
import sys
from profile_check import say, report, check_invariants, sonde_json, done
name, data, plain, cyg, nmf, hz = sys.argv[1:7]
w = open(plain).read().split()
own = {w[i]: int(w[i + 1]) for i in range(0, len(w) - 1, 2)}
names = {int(a, 16) & ~1: n for a, t, n in (l.split() for l in open(nmf) if len(l.split()) == 3) if t in "tT"}
oracle = {}
for l in open(cyg):
    f = l.split()
    if f[0] == "cyg":
        oracle[names.get(int(f[1]), f[1])] = int(f[2])
fns = "leaf shared from_a from_b fib spin put_num main".split()
r = report(data=data)
got = {n: r[n]["calls"] if n in r else None for n in fns}
want = {n: oracle.get(n) for n in fns}
say(got == want, f"{name}: calls of {', '.join(fns)} equal the -finstrument-functions build's", f"{got} != {want}")
say((got["leaf"], got["shared"], got["fib"], got["spin"]) ==
    (own["leaf_calls"], own["shared_calls"], own["fib_calls"], own["spin_calls"]),
    f"{name}: leaf {own['leaf_calls']}, shared {own['shared_calls']}, fib {own['fib_calls']}, spin {own['spin_calls']} calls, as the firmware counted", got)
rep = sonde_json("report", data=data)
excl = sum(f["exclusive_ns"] for f in rep["functions"])
say(excl == rep["total_ns"], f"{name}: exclusive times sum to the total ({rep['total_ns']} ns)", f"{excl}")
info = sonde_json("info", data=data)
# the recording spans the firmware's time from the first call to its exit: the total of its trees
say(rep["total_ns"] <= info["duration_ns"] <= rep["total_ns"] + 2000,
    f"{name}: the recording's duration is its calls' total ({info['duration_ns']} ns)", info["duration_ns"])
check_invariants(list(r), data=data, label=f"{name}: ")
cc = sonde_json("callers-callees", "shared", data=data)
callers = sorted((c["name"], c["calls"]) for c in cc["callers"])
say(callers == [("from_a", 10), ("from_b", 8)], f"{name}: shared's callers from_a (10 calls) and from_b (8)", callers)
ns_per_tick = 1e9 / int(hz)
ticks = r["spin"]["inclusive_ns"] / ns_per_tick
say(own["spin_ticks"] <= ticks <= own["spin_ticks"] + 2 * own["spin_calls"],
    f"{name}: spin's inclusive time, {ticks:.0f} ticks of the target's counter, is the firmware's own measure "
    f"({own['spin_ticks']}) to a tick per call", ticks)
say(r["spin"]["exclusive_ns"] == r["spin"]["inclusive_ns"] and r["fib"]["calls"] == 177,
    f"{name}: recursion: fib's 177 calls, one inclusive time", r["fib"])
done()
EOF2
	"$SONDE" tree -i "rec.$name" > "tree.$name" 2>&1
	check "$name: tree shows fib under main and fib under fib" bash -c \
		"grep -qE '^ .* main$' tree.$name && grep -qE '  fib$' tree.$name && [ \$(grep -cE ' fib$' tree.$name) -ge 2 ]"
	"$SONDE" flamegraph -i "rec.$name" -o "flame.$name.svg" 2> "flame.$name.err"
	check "$name: flamegraph reads it" bash -c "grep -q '<svg' flame.$name.svg && grep -q 'fib' flame.$name.svg"
	"$SONDE" export -i "rec.$name" --format=chrome -o "chrome.$name.json" 2> "ch.$name.err"
	check "$name: export --format=chrome reads it (177 slices of fib)" jq_py "chrome.$name.json" \
		"assert sum(1 for e in d['traceEvents'] if e.get('name') == 'fib' and e.get('ph') == 'X') == 177"
	"$SONDE" export -i "rec.$name" --format=perfetto -o "trace.$name.pftrace" 2> "pf.$name.err"
	if [ -n "$PB" ]; then
		check "$name: export --format=perfetto, decoded by the protobuf library: 177 slices of fib, no error" bash -c \
			"$PBPY '$ROOT/tests/perfetto_pb_decode.py' pb 'trace.$name.pftrace' > 'dec.$name.json' && python3 -c \"
import json; D = json.load(open('dec.$name.json'))
assert not D['errors'], D['errors'][:3]
assert sum(1 for t in D['threads'].values() for sl in t['slices'] if sl[0] == 'fib') == 177\""
	else
		check "$name: export --format=perfetto writes a trace" test -s "trace.$name.pftrace"
		skip "$name: perfetto decoded" "python3-protobuf or protobuf-compiler missing (Debian packages)"
	fi
	"$SONDE" export -i "rec.$name" --format=pprof -o "prof.$name.pb.gz" 2> "pp.$name.err"
	check "$name: export --format=pprof writes a profile" test -s "prof.$name.pb.gz"
	if command -v go >/dev/null; then
		check "$name: go tool pprof reads the pprof (fib in its top)" bash -c \
			"go tool pprof -top 'prof.$name.pb.gz' 2>&1 | grep -q ' fib$'"
	else
		skip "$name: go tool pprof" "go missing (apt-get install golang-go)"
	fi
}

# leave NAME HOW [SONDE-OPTIONS...]: HOW = duration | int, on the long firmware of L_FW (its QEMU
# command in L_QEMU, its plain output in plain.L_FW, L_TOOLS the cross binutils' prefix, L_DUR the
# --duration, L_CLK the clock's options).
leave() {
	local name=$1 how=$2 port pport; shift 2
	port=$(free_port); pport=$(free_port)
	timeout 300 "${L_QEMU[@]}" -S -gdb "tcp:127.0.0.1:$port" -monitor "unix:$PWD/mon.$name,server,nowait" \
		> "stub.$name" 2>&1 < /dev/null &
	local qpid=$!; stubs+=("$qpid")
	wait_listen "$port"
	local slow=(); [ "$how" = int ] && slow=(--slow-remove 0.2)  # a window for the second Ctrl-C below
	python3 "$PROXY" "$pport" "127.0.0.1:$port" --log "px.$name" "${slow[@]}" &
	stubs+=($!)
	wait_listen "$pport"
	local extra=()
	[ "$how" = duration ] && extra=(--duration "$L_DUR")
	timeout 240 "$SONDE" record --target "tcp:127.0.0.1:$pport" --exe "fw.$L_FW.elf" --timeout 2 -F 'leaf' -F 'fib' \
		"${L_CLK[@]}" "${extra[@]}" "$@" -o "rec.$name" 2> "err.$name" &
	local spid=$!
	# every function's first 4 bytes, read through QEMU's monitor the moment sonde has ended
	mon_sites "mon.$name" "fw.$L_FW.elf" "${L_TOOLS}objdump" "$spid" $("${L_TOOLS}nm" "fw.$L_FW.elf" | python3 -c '
import sys; f = {w[2]: int(w[0], 16) & ~1 for w in map(str.split, sys.stdin) if len(w) == 3 and w[1] in "tT"}
for n in sys.argv[1:]: print(hex(f[n]))' $FNS) \
		> "mon.$name.out" 2>&1 &
	local mpid=$!
	# Ctrl-C once the firmware runs with sonde's probes in (its first continue through the proxy),
	# and 1.5 s later: the time a round of calls takes, however late sonde got there
	if [ "$how" = int ]; then
		for _ in $(seq 1200); do
			grep -qE '^(c|vCont;c)' "px.$name" 2>/dev/null && break
			kill -0 "$spid" 2>/dev/null || break
			sleep 0.1
		done
		sleep 1.5
		local sonde_pid; sonde_pid=$(pgrep -P "$spid" | head -1)
		kill -INT "$spid"
		# and a second Ctrl-C, to sonde itself (timeout(1) ignores the
		# signal once it has passed it on), once sonde takes its breakpoints
		# out (an impatient user; timeout's copy to its process group comes
		# late on a loaded machine): the leave goes on to its end
		for _ in $(seq 600); do
			grep -qE '^z[01],' "px.$name" 2>/dev/null && break
			kill -0 "$spid" 2>/dev/null || break
			sleep 0.05
		done
		[ -n "$sonde_pid" ] && kill -INT "$sonde_pid" 2>/dev/null
	fi
	wait "$spid"
	local rc=$?
	check "$name: sonde exits 0, says the target was left running" bash -c \
		"[ $rc -eq 0 ] && grep -q 'left running' err.$name"
	if wait "$mpid"; then
		ok "$name: every function's first 4 bytes are the ELF's again (QEMU's monitor reads them after sonde left)"
	else
		notok "$name: every function's first 4 bytes are the ELF's again (QEMU's monitor reads them after sonde left)" \
			"$(tail -c 400 "mon.$name.out")"
	fi
	timeout 300 tail --pid="$qpid" -f /dev/null
	wait_closed "px.$name"
	check "$name: every breakpoint taken out (z for each Z), then D" python3 - "px.$name" <<'EOF2'
import collections, sys
pk = [l.rstrip("\n") for l in open(sys.argv[1])]
ins = collections.Counter(p[:2].lower() + p.split(",")[1] for p in pk if p.startswith(("Z0,", "Z1,")))
out = collections.Counter(p[:2] + p.split(",")[1] for p in pk if p.startswith(("z0,", "z1,")))
last = [p for p in pk if not p.startswith("(")][-1]
assert ins and ins == out and last.startswith("D"), (ins - out, out - ins, last)
EOF2
	check "$name: the firmware runs on to the same output" cmp -s <(untimed "plain.$L_FW") <(untimed "stub.$name")
	# (fib comes after a round's 58 leaf calls: a loaded machine's --duration 1 may end before it)
	check "$name: the recording reads: -F leaf -F fib only, invariants" env SONDE="$SONDE" PYTHONPATH="$ROOT/tests" \
		python3 -c "
from profile_check import report, check_invariants, failures
r = report(data='rec.$name')
assert set(r) <= {'leaf', 'fib'} and r['leaf']['calls'] > 0 and ('fib' in r or r['leaf']['calls'] < 58), r
check_invariants(list(r), data='rec.$name', label='$name: ')
import profile_check; assert profile_check.failures == 0"
}

# --- usage errors, before any connection --------------------------------------------------
"$SONDE" record --target tcp:127.0.0.1:1 2> use1.err; u1=$?
"$SONDE" record --target tcp:127.0.0.1:1 --exe /bin/true --target-clock 0x40028018 2> use2.err; u2=$?
"$SONDE" record --exe /bin/true -- true 2> use3.err; u3=$?
check "usage: no --exe, --target-clock without @HZ, --exe without --target: exit 1 with the reason" bash -c \
	"[ $u1 -eq 1 ] && grep -q 'needs --exe' use1.err && [ $u2 -eq 1 ] && grep -q 'invalid --target-clock' use2.err && \
	 [ $u3 -eq 1 ] && grep -q 'go with --target' use3.err"

PB= PBPY=   # the protobuf library decodes the perfetto export (as in export_perfetto.sh)
for p in python3 /usr/bin/python3; do "$p" -c "import google.protobuf" 2>/dev/null && { PBPY=$p; break; }; done
[ -n "$PBPY" ] && command -v protoc >/dev/null && mkdir pb &&
	protoc -I "$ROOT/tests/proto" --python_out=pb "$ROOT/tests/proto/perfetto_trace_subset.proto" && PB=pb

have_arm=1
if ! command -v arm-none-eabi-gcc >/dev/null || ! command -v qemu-system-arm >/dev/null; then
	have_arm=0
	skip "m3: record --target" "arm-none-eabi-gcc or qemu-system-arm missing (apt-get install gcc-arm-none-eabi qemu-system-arm)"
else
	if build_arm m3 "$PROGS/mcu_profile.c" &&
	   build_arm m3.cyg -finstrument-functions "$PROGS/mcu_profile.c" "$PROGS/mcu_cyg.c"; then
		QM3=(qemu-system-arm -M mps2-an385 -nographic -semihosting)
		M3CLK=(--target-clock 0x40028018@25000000)
		# two stops a call (no --target-ram), then timed in the target (trampolines in the MPS2
		# code SRAM above the firmware), then with a ring of 16 events that fills 35 times
		board m3 m3 arm-none-eabi-nm 25000000 breakpoints "${M3CLK[@]}" -- "${QM3[@]}"
		board m3t m3 arm-none-eabi-nm 25000000 in_target "${M3CLK[@]}" --target-ram "$ARM_RAM" -- "${QM3[@]}"
		RING=16 board m3ring m3 arm-none-eabi-nm 25000000 in_target "${M3CLK[@]}" --target-ram "$ARM_RAM" -- "${QM3[@]}"
		# both paths in one recording: leaf and shared in flash (the proxy's memory map, read-only), on
		# breakpoints, their callers timed in the target; the ring's events and the stops' merged in time
		read -r lo hi < <(arm-none-eabi-nm fw.m3.elf | python3 -c '
import sys; f = {w[2]: int(w[0], 16) & ~1 for w in map(str.split, sys.stdin) if len(w) == 3}
print(hex(min(f["leaf"], f["shared"])), hex(max(f["leaf"], f["shared"]) + 4))')
		PXOPTS="--readonly $lo-$hi --flash $lo-$hi" RING=16 board m3mix m3 arm-none-eabi-nm 25000000 \
			in_target:leaf,shared "${M3CLK[@]}" --target-ram "$ARM_RAM" -- "${QM3[@]}"
		check "m3mix: leaf and shared on breakpoints because they are in flash" jq_py rec.m3mix/remote.json \
			"w = {f['name']: f.get('why', '') for f in d['functions']}; assert 'cannot be written' in w['leaf'] and 'cannot be written' in w['shared'], w"
	else
		notok "m3: build" "$(head -c 300 build.m3.err build.m3.cyg.err)"
	fi
fi
if ! command -v riscv64-unknown-elf-gcc >/dev/null || ! command -v qemu-system-riscv32 >/dev/null; then
	skip "rv32: record --target" "riscv64-unknown-elf-gcc or qemu-system-riscv32 missing (apt-get install gcc-riscv64-unknown-elf qemu-system-misc)"
else
	if build_rv32 rv32 "$PROGS/mcu_profile.c" &&
	   build_rv32 rv32.cyg -finstrument-functions "$PROGS/mcu_profile.c" "$PROGS/mcu_cyg.c"; then
		# the default clock on RV32: mtime of the CLINT at 0x0200bff8, 10 MHz
		QRV=(qemu-system-riscv32 -M virt -bios none -nographic -semihosting)
		board rv32 rv32 riscv64-unknown-elf-nm 10000000 breakpoints -- "${QRV[@]}"
		board rv32t rv32 riscv64-unknown-elf-nm 10000000 in_target --target-ram "$RV_RAM" -- "${QRV[@]}"
		RING=16 board rv32ring rv32 riscv64-unknown-elf-nm 10000000 in_target --target-ram "$RV_RAM" -- "${QRV[@]}"
		# --duration on a long run timed in the target: the sites put back (QEMU's monitor), running on
		if build_rv32 rvlong -DROUNDS=4000 "$PROGS/mcu_profile.c"; then
			L_FW=rvlong L_QEMU=("${QRV[@]}" -kernel fw.rvlong.elf) L_TOOLS=riscv64-unknown-elf- L_DUR=0.5 L_CLK=()
			timeout 60 "${L_QEMU[@]}" > plain.rvlong 2>&1 < /dev/null
			leave rv32-duration-t duration --target-ram "$RV_RAM"
			check "rv32-duration-t: leaf and fib were timed in the target" jq_py rec.rv32-duration-t/remote.json \
				"assert {f['name']: f['path'] for f in d['functions']} == {'leaf': 'in_target', 'fib': 'in_target'}, d"
		else
			notok "rvlong: build" "$(head -c 300 build.rvlong.err)"
		fi
	else
		notok "rv32: build" "$(head -c 300 build.rv32.err build.rv32.cyg.err)"
	fi
fi
[ "$have_arm" = 1 ] && [ -f fw.m3.elf ] || exit 0

# --- no clock given on a Cortex-M: refused before anything is placed ------------------------
port=$(free_port); pport=$(free_port)
timeout 60 qemu-system-arm -M mps2-an385 -nographic -semihosting -kernel fw.m3.elf -S -gdb "tcp:127.0.0.1:$port" \
	> stub.noclk 2>&1 < /dev/null &
qpid=$!; stubs+=("$qpid")
wait_listen "$port"
python3 "$PROXY" "$pport" "127.0.0.1:$port" --log px.noclk &
stubs+=($!)
wait_listen "$pport"
timeout 60 "$SONDE" record --target "tcp:127.0.0.1:$pport" --exe fw.m3.elf -o rec.noclk 2> err.noclk
rc=$?
timeout 60 tail --pid="$qpid" -f /dev/null
wait_closed px.noclk
check "m3 without --target-clock: exit 2 naming the option, nothing placed, the firmware runs" bash -c \
	"[ $rc -eq 2 ] && grep -q -- '--target-clock' err.noclk && ! grep -q '^Z' px.noclk && grep -q '^D' px.noclk && \
	 grep -q '^leaf_calls' stub.noclk && [ ! -e rec.noclk/profile.sonde ]"

# --- code in flash (the proxy plays OpenOCD: read-only code, a memory map): hardware breakpoints
flash() {   # NAME SONDE-OPTIONS...
	local name=$1 port pport; shift
	port=$(free_port); pport=$(free_port)
	timeout 60 qemu-system-arm -M mps2-an385 -nographic -semihosting -kernel fw.m3.elf "${ICOUNT[@]}" \
		-S -gdb "tcp:127.0.0.1:$port" > "stub.$name" 2>&1 < /dev/null &
	local qpid=$!; stubs+=("$qpid")
	wait_listen "$port"
	python3 "$PROXY" "$pport" "127.0.0.1:$port" --log "px.$name" --readonly 0-0x40000 --flash 0-0x40000 &
	stubs+=($!)
	wait_listen "$pport"
	timeout 60 "$SONDE" record --target "tcp:127.0.0.1:$pport" --exe fw.m3.elf --target-clock 0x40028018@25000000 \
		"$@" -o "rec.$name" 2> "err.$name"
	frc=$?
	timeout 60 tail --pid="$qpid" -f /dev/null
	wait_closed "px.$name"
}
flash fl4 -F leaf -F shared --hw-breakpoints 4
read -r _ leafc _ sharedc _ < own.m3
check "flash, -F leaf -F shared, 4 comparators: Z1 only, leaf $leafc and shared $sharedc calls, none untimed" bash -c \
	"[ $frc -eq 0 ] && grep -q '^Z1,' px.fl4 && ! grep -q '^Z0,' px.fl4 && ! grep -q 'could not be timed' err.fl4 && \
	 SONDE='$SONDE' PYTHONPATH='$ROOT/tests' python3 -c \"
from profile_check import report
r = report(data='rec.fl4')
assert {n: f['calls'] for n, f in r.items()} == {'leaf': $leafc, 'shared': $sharedc}, r\""
flash fl3 -F leaf -F shared --hw-breakpoints 3
check "flash, 4 comparators needed, --hw-breakpoints 3: refused before anything is placed, naming the limit" bash -c \
	"[ $frc -eq 2 ] && grep -q 'need 4 hardware breakpoints.*the target has 3 comparators.*nothing placed' err.fl3 && \
	 ! grep -q '^Z' px.fl3 && grep -q '^D' px.fl3 && [ ! -e rec.fl3/profile.sonde ] && grep -q '^leaf_calls' stub.fl3"

# --- leaving early on a long run: --duration and Ctrl-C ----------------------------------------
build_arm long -DROUNDS=100000 "$PROGS/mcu_profile.c" || { notok "long: build" "$(head -c 300 build.long.err)"; exit 0; }
L_FW=long L_QEMU=(qemu-system-arm -M mps2-an385 -nographic -semihosting -kernel fw.long.elf) L_TOOLS=arm-none-eabi-
L_DUR=1 L_CLK=(--target-clock 0x40028018@25000000)
timeout 60 "${L_QEMU[@]}" > plain.long 2>&1 < /dev/null
leave duration duration
leave int int
# timed in the target: the sites put back (and the ring writer disabled) before sonde detaches
leave duration-t duration --target-ram "$ARM_RAM"
check "duration-t: leaf and fib were timed in the target" jq_py rec.duration-t/remote.json \
	"assert {f['name']: f['path'] for f in d['functions']} == {'leaf': 'in_target', 'fib': 'in_target'}, d"
leave int-t int --target-ram "$ARM_RAM"

#!/usr/bin/env bash
# probe_mcu_count.sh — line probes counted inside a microcontroller target
# (--target-ram: trampolines in RAM, each site a branch to its own; issue
# 26): tests/progs/mcu_counts.c on QEMU's Cortex-M3 (mps2-an385), M4F
# (mps2-an386) and RV32IMAC (riscv32 virt), behind tests/tools/rsp_proxy.py
# which logs sonde's packets.  The line counts must be the firmware's own
# (it prints them), its output unchanged, the JSON must say each probe was
# counted in the target and the log must show the sites written (M) and no
# breakpoint there.  Then: Ctrl-C on a long M3 run and --duration on a long
# RV32 run leave the target detached with its code as the ELF has it (read
# through QEMU's monitor, `xp`, right after sonde left) and running on to the same
# output; a stub that vanishes ends the session; code that cannot be
# written (the proxy's --readonly) and a Cortex-M0 keep breakpoints, exact.
# A missing toolchain or QEMU is a skip.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/remote_lib.sh"

src="$PROGS/mcu_counts.c"
L=$(grep -n "/\* MARK_LINE \*/" "$src" | cut -d: -f1)
PROXY="$ROOT/tests/tools/rsp_proxy.py"
# Probes and the firmware's counter each one must equal.
SPECS=(-e "line:mcu_counts.c:$L" -e line:step -e line:tick -e line:third -e line:clamp)
WANT='["line_runs", "step_calls", "ticks", "thirds", "line_runs"]'
FUNCS="step tick third clamp"

# session NAME RAM SONDE-OPTIONS -- QEMU-CMD...: sonde behind the proxy (log px.NAME), the firmware's
# output in stub.NAME, sonde's JSON in out.NAME.json, its exit status in $rc.
session() {
	local name=$1 ram=$2 opts=() port pport; shift 2
	while [ "$1" != -- ]; do opts+=("$1"); shift; done; shift
	port=$(free_port); pport=$(free_port)
	timeout 60 "$@" -S -gdb "tcp:127.0.0.1:$port" -pidfile "qemu.$name.pid" -monitor "unix:$PWD/mon.$name,server,nowait" \
		> "stub.$name" 2>&1 < /dev/null &
	qpid=$!; stubs+=("$qpid")
	wait_listen "$port" || { notok "$name: stub listens" "$*"; return 1; }
	python3 "$PROXY" "$pport" "127.0.0.1:$port" --log "px.$name" "${PXOPTS[@]}" &
	stubs+=($!)
	wait_listen "$pport"
	timeout 60 "$SONDE" probe --target "tcp:127.0.0.1:$pport" --exe "fw.${FW:-$name}.elf" --target-ram "$ram" \
		"${opts[@]}" --format=json -o "out.$name.json" 2> "err.$name" &
	spid=$!
}

# sites NAME: the run-time addresses of the probes' sites (objdump's line table, nm), hex, one a line.
sites() {
	local od=$1 nm=$2 fw=$3
	"$od" --dwarf=decodedline "$fw" 2>/dev/null | awk -v l="$L" '$1=="mcu_counts.c" && $2==l && $NF=="x" {print $3; exit}'
	"$nm" "$fw" | python3 -c 'import sys; f = {w[2]: int(w[0], 16) & ~1 for w in map(str.split, sys.stdin) if len(w) == 3}
for n in sys.argv[1:]: print(hex(f[n]))' $FUNCS
}

# counted NAME OD NM: exact counts, output unchanged, counted in the target, sites written and never a breakpoint.
counted() {
	local name=$1 od=$2 nm=$3
	wait "$spid"; rc=$?
	wait "$qpid"
	check "$name: sonde exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { head -c 600 "err.$name"; return; }
	check "$name: firmware output unchanged" cmp -s "plain.$name" "stub.$name"
	check "$name: line counts are the firmware's own, every probe counted in the target" python3 - \
		"plain.$name" "out.$name.json" "$WANT" <<'EOF2'
import json, sys
w = open(sys.argv[1]).read().split()
c = {w[i]: int(w[i + 1]) for i in range(0, len(w) - 1, 2)}
d = json.load(open(sys.argv[2]))
want = [c[k] for k in json.loads(sys.argv[3])]
got = [(p["hits"], p.get("counted_in_target", 0), p.get("counts_complete")) for p in d["probes"]]
assert [g[0] for g in got] == want and all(g[1] >= 1 and g[2] for g in got), (got, want)
assert d["target"]["exit_status"] == 0, d["target"]
EOF2
	check "$name: each site written with M, no breakpoint on it" python3 - "px.$name" $(sites "$od" "$nm" "fw.$name.elf") <<'EOF2'
import sys
pk = [l.rstrip("\n") for l in open(sys.argv[1])]
for a in sys.argv[2:]:
    h = "%x" % int(a, 16)
    assert any(p.startswith("M%s,4:" % h) for p in pk), ("no M at", h)
    assert not any(p.startswith(("Z0,%s," % h, "Z1,%s," % h)) for p in pk), ("a breakpoint at", h)
EOF2
}

QM3=(qemu-system-arm -M mps2-an385 -nographic -semihosting)
QRV=(qemu-system-riscv32 -M virt -bios none -nographic -semihosting)
ARM_RAM=0x300000:0x4000      # the MPS2 code SRAM above the firmware: within b.w's reach of it
RV_RAM=0x80080000:0x4000     # virt RAM 512 KiB above the firmware: within jal's reach
PXOPTS=()
have_arm=0; have_rv=0
command -v arm-none-eabi-gcc >/dev/null && command -v qemu-system-arm >/dev/null && have_arm=1
command -v riscv64-unknown-elf-gcc >/dev/null && command -v qemu-system-riscv32 >/dev/null && have_rv=1

if [ $have_arm = 1 ]; then
	build_arm m3 -mcpu=cortex-m3 || notok "m3: build" "$(head -c 300 build.m3.err)"
	build_arm m4f -mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard || notok "m4f: build" "$(head -c 300 build.m4f.err)"
	for b in "m3 mps2-an385" "m4f mps2-an386"; do
		set -- $b
		[ -f "fw.$1.elf" ] || continue
		timeout 30 qemu-system-arm -M "$2" -nographic -semihosting -kernel "fw.$1.elf" > "plain.$1" 2>&1 < /dev/null
		session "$1" "$ARM_RAM" "${SPECS[@]}" -- qemu-system-arm -M "$2" -nographic -semihosting -kernel "fw.$1.elf" &&
			counted "$1" arm-none-eabi-objdump arm-none-eabi-nm
	done
else
	skip "cortex-m: in-target counting" "arm-none-eabi-gcc or qemu-system-arm missing (apt-get install gcc-arm-none-eabi qemu-system-arm)"
fi
if [ $have_rv = 1 ]; then
	if build_rv32 rv32; then
		timeout 30 "${QRV[@]}" -kernel fw.rv32.elf > plain.rv32 2>&1 < /dev/null
		session rv32 "$RV_RAM" "${SPECS[@]}" -- "${QRV[@]}" -kernel fw.rv32.elf &&
			counted rv32 riscv64-unknown-elf-objdump riscv64-unknown-elf-nm
	else
		notok "rv32: build" "$(head -c 300 build.rv32.err)"
	fi
else
	skip "rv32: in-target counting" "riscv64-unknown-elf-gcc or qemu-system-riscv32 missing (apt-get install gcc-riscv64-unknown-elf qemu-system-misc)"
fi

# --- leaving a long run: the code put back (read through QEMU's monitor), the firmware runs on ---
# leave NAME HOW FW QEMU...: HOW = int | duration
leave() {
	local name=$1 how=$2 fw=$3 long=$4 ram=$5 od=$6 nm=$7 extra=(); shift 7
	[ "$how" = duration ] && extra=(--duration 0.3)
	FW=$fw session "$name" "$ram" "${SPECS[@]}" "${extra[@]}" -- "$@" -kernel "fw.$fw.elf" || return
	# The code at every site, read through QEMU's monitor (not the gdb stub) against the ELF's
	# bytes (objdump -s): the reader connects now and, the moment sonde has ended (its process a
	# zombie or gone), stops the machine, reads, and lets it run on (else a fast machine could
	# finish the firmware, and QEMU with it, before a reader started after sonde could connect).
	mon_sites "mon.$name" "fw.$fw.elf" "$od" "$spid" $(sites "$od" "$nm" "fw.$fw.elf") > "mon.$name.out" 2>&1 &
	local mpid=$!
	[ "$how" = int ] && { sleep 0.8; kill -INT "$spid"; }
	wait "$spid"; rc=$?
	check "$name: sonde exits 0, detached, counts read (0 < step's < the firmware's)" jq_py "out.$name.json" \
		"p=d['probes']; assert $rc == 0 and d['target']['state'].startswith('detached') and 0 < p[1]['hits'] < $long and p[1]['counts_complete'], (d['target'], p[1])"
	if wait "$mpid"; then
		ok "$name: every site's code is the ELF's again (QEMU's monitor reads it after sonde left)"
	else
		notok "$name: every site's code is the ELF's again (QEMU's monitor reads it after sonde left)" "$(tail -c 400 "mon.$name.out")"
	fi
	timeout 60 tail --pid="$qpid" -f /dev/null
	check "$name: the firmware runs on to the same output" cmp -s "plain.$fw" "stub.$name"
}
# Runs of a few seconds with a debugger attached: RV32 is slower on QEMU (its data shares pages with the code: each store is one to translated code).
if [ $have_arm = 1 ] && build_arm m3long -mcpu=cortex-m3 -DN=2000000; then
	timeout 60 "${QM3[@]}" -kernel fw.m3long.elf > plain.m3long 2>&1 < /dev/null
	leave m3-int int m3long 2000000 "$ARM_RAM" arm-none-eabi-objdump arm-none-eabi-nm "${QM3[@]}"
fi
if [ $have_rv = 1 ] && build_rv32 rv32long -DN=40000; then
	timeout 60 "${QRV[@]}" -kernel fw.rv32long.elf > plain.rv32long 2>&1 < /dev/null
	leave rv32-duration duration rv32long 40000 "$RV_RAM" riscv64-unknown-elf-objdump riscv64-unknown-elf-nm "${QRV[@]}"
fi
[ $have_arm = 1 ] && [ -f fw.m3.elf ] || exit 0

# --- a stub that vanishes in the middle of a counted run ---------------------------------
if [ -f fw.m3long.elf ]; then
	FW=m3long session vanish "$ARM_RAM" "${SPECS[@]}" -- "${QM3[@]}" -kernel fw.m3long.elf &&
		{ sleep 0.8; kill -KILL "$(cat qemu.vanish.pid)"; wait "$spid"; rc=$?
		  check "vanish: sonde exits 0 with the target gone" jq_py out.vanish.json \
			"assert $rc == 0 and d['target']['state'] == 'gone', d['target']"; }
fi

# --- code that cannot be written, and a Cortex-M0: breakpoints, exact --------------------
# bp NAME FW QEMU...: the counts exact, and each probe on a breakpoint (not counted in the target)
bp() {
	local name=$1 fw=$2; shift 2
	FW=$fw session "$name" "$ARM_RAM" "${SPECS[@]}" -- "$@" -kernel "fw.$fw.elf" || return
	wait "$spid"; rc=$?
	wait "$qpid"
	check "$name: sonde exits 0, exact counts on breakpoints, the firmware's output unchanged" python3 - \
		"plain.$fw" "out.$name.json" "$WANT" "$rc" "stub.$name" <<'EOF2'
import json, sys
w = open(sys.argv[1]).read().split()
c = {w[i]: int(w[i + 1]) for i in range(0, len(w) - 1, 2)}
assert int(sys.argv[4]) == 0 and open(sys.argv[1]).read() == open(sys.argv[5]).read()
d = json.load(open(sys.argv[2]))
got = [(p["hits"], p.get("counted_in_target", 0)) for p in d["probes"]]
assert got == [(c[k], 0) for k in json.loads(sys.argv[3])], got
EOF2
}
PXOPTS=(--readonly 0-0x40000)
bp ro m3 "${QM3[@]}"
check "ro: sonde said why the sites are not counted in the target (the stub refused the writes)" \
	grep -Eq "not counted in the target \((in code that cannot be written|the stub refused writes to the program's code)" err.ro
PXOPTS=()
if build_arm m0 -mcpu=cortex-m0; then
	timeout 30 qemu-system-arm -M microbit -nographic -semihosting -kernel fw.m0.elf > plain.m0 2>&1 < /dev/null
	bp m0 m0 qemu-system-arm -M microbit -nographic -semihosting
	check "m0: the session says why it does not count in the target (no Thumb-2)" grep -q "not for a core with Thumb-2" err.m0
fi

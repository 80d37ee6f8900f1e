#!/usr/bin/env bash
# mcu_bench.sh — cost per hit of a probe on microcontroller firmware
# (tests/progs/mcu_counts.c on qemu-system-arm -M mps2-an385, Cortex-M3),
# sonde's `line:step` (a breakpoint; its `push {r4, lr}` executed by sonde,
# rarch.emulate, or, sonde-step, single-stepped by the stub as before:
# SONDE_REMOTE_EMULATE=0; no in-target counting on bare metal yet) side by side with gdb-multiarch
# counting the same hits with break + commands / silent / continue.  Each
# figure is (time with N hits - time with 1 hit) / (N - 1), a fresh QEMU per
# run.  Prints the figures; never fails on timing.
#   BUILD=build bash bench/mcu_bench.sh [N]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$root/build}
SONDE=${SONDE:-$BUILD/bin/sonde}
N=${1:-1000}
GDB=${GDB:-gdb-multiarch}
P=$root/tests/progs
tmp=$(mktemp -d /tmp/sonde-mcu-bench.XXXXXX)
stub=
trap '[ -n "$stub" ] && kill "$stub" 2>/dev/null; rm -rf "$tmp"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for n in 1 "$N"; do
	arm-none-eabi-gcc -g -O1 -ffreestanding -nostdlib -nostartfiles -mthumb -mcpu=cortex-m3 -DN="$n" -I"$P" \
		-T "$P/mcu_cortexm.ld" -o "$tmp/fw.$n.elf" "$P/mcu_start_cortexm.c" "$P/mcu_counts.c" -lgcc || exit 1
done
# run TOOL CALLS: seconds from connecting to the end of the firmware.
run() {
	local port; port=$(free_port)
	qemu-system-arm -M mps2-an385 -nographic -semihosting -kernel "$tmp/fw.$2.elf" -S -gdb "tcp:127.0.0.1:$port" \
		> /dev/null 2>&1 < /dev/null &
	stub=$!
	sleep 0.5
	local t0; t0=$(date +%s.%N)
	case $1 in
	sonde) "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe "$tmp/fw.$2.elf" -e line:step -o /dev/null ;;
	sonde-step) SONDE_REMOTE_EMULATE=0 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe "$tmp/fw.$2.elf" \
		-e line:step -o /dev/null ;;
	gdb)
		printf 'set pagination off\nset confirm off\ntarget remote 127.0.0.1:%s\nbreak step\ncommands\nsilent\ncontinue\nend\ncontinue\n' \
			"$port" > "$tmp/gdb.cmd"
		"$GDB" -q -batch -x "$tmp/gdb.cmd" "$tmp/fw.$2.elf" > /dev/null 2>&1 ;;
	esac
	local t1; t1=$(date +%s.%N)
	wait "$stub" 2>/dev/null
	stub=
	python3 -c "print($t1 - $t0)"
}
declare -A per
for tool in sonde sonde-step gdb; do
	t1=$(run $tool 1); tn=$(run $tool "$N")
	per[$tool]=$(python3 -c "print(round(($tn - $t1) / ($N - 1) * 1e6, 1))")
	echo "$tool: ${per[$tool]} us a hit (N=$N: ${tn} s, N=1: ${t1} s)"
done
python3 -c "print('gdb / sonde: %.2fx' % (${per[gdb]} / ${per[sonde]}))"

#!/usr/bin/env bash
# remote_bench.sh — cost per hit of a breakpoint probe on a remote target, over
# TCP to QEMU (qemu-aarch64 -g) and to gdbserver (x86-64), side by side with
# gdb-multiarch counting the same hits with a silent breakpoint
# (break + commands / silent / continue) on the same kind of stub.  Each
# figure is (time with N hits - time with 1 hit) / (N - 1), one fresh stub per
# run, so that connecting and loading the symbols cancel out.  Prints ratios;
# never fails on timing.
#   BUILD=build bash bench/remote_bench.sh [N]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$root/build}
SONDE=${SONDE:-$BUILD/bin/sonde}
N=${1:-1000}
GDB=${GDB:-gdb-multiarch}
tmp=$(mktemp -d /tmp/sonde-remote-bench.XXXXXX)
stub=
trap '[ -n "$stub" ] && kill "$stub" 2>/dev/null; rm -rf "$tmp"' EXIT
src=$root/tests/progs/remote_counts.c

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_stub KIND PORT ARG: a fresh stub running the program with ARG calls.
start_stub() {
	case $1 in
	qemu) qemu-aarch64 -g "$2" -L /usr/aarch64-linux-gnu "$tmp/prog.qemu" "$3" > /dev/null 2>&1 & ;;
	gdbserver) gdbserver --once "127.0.0.1:$2" "$tmp/prog.gdbserver" "$3" > /dev/null 2>&1 & ;;
	esac
	stub=$!
	sleep 0.5
}

# run TOOL KIND CALLS: seconds from connecting to the end of the program.
run() {
	local port; port=$(free_port)
	start_stub "$2" "$port" "$3"
	local t0; t0=$(date +%s.%N)
	if [ "$1" = sonde ]; then
		"$SONDE" probe --target "tcp:127.0.0.1:$port" --exe "$tmp/prog.$2" -e line:step -o /dev/null
	else
		printf 'set pagination off\nset confirm off\ntarget remote 127.0.0.1:%s\nbreak step\ncommands\nsilent\ncontinue\nend\ncontinue\n' \
			"$port" > "$tmp/gdb.cmd"
		"$GDB" -q -batch -x "$tmp/gdb.cmd" "$tmp/prog.$2" > /dev/null 2>&1
	fi
	local t1; t1=$(date +%s.%N)
	wait "$stub" 2>/dev/null
	stub=
	python3 -c "print($t1 - $t0)"
}

per_hit() {  # TOOL KIND: microseconds per hit
	local a b
	a=$(run "$1" "$2" 1)
	b=$(run "$1" "$2" "$N")
	python3 -c "print('%.0f' % max(0.0, ($b - $a) / ($N - 1) * 1e6))"
}

command -v "$GDB" > /dev/null || { echo "remote_bench: $GDB missing (apt-get install gdb-multiarch)"; exit 0; }
for kind in qemu gdbserver; do
	case $kind in
	qemu)
		command -v qemu-aarch64 > /dev/null && command -v aarch64-linux-gnu-gcc > /dev/null || {
			echo "qemu: skipped (qemu-user, gcc-aarch64-linux-gnu missing)"; continue; }
		aarch64-linux-gnu-gcc -g -O1 -I"$root/tests/progs" -o "$tmp/prog.qemu" "$src" || continue ;;
	gdbserver)
		command -v gdbserver > /dev/null || { echo "gdbserver: skipped (missing)"; continue; }
		gcc -g -O1 -I"$root/tests/progs" -o "$tmp/prog.gdbserver" "$src" || continue ;;
	esac
	s=$(per_hit sonde $kind)
	g=$(per_hit gdb $kind)
	echo "$kind, N=$N hits: sonde line:step $s us per hit, $GDB silent breakpoint $g us per hit," \
		"ratio gdb/sonde $(python3 -c "print('%.1f' % ($g / $s) if $s > 0 else 'n/a')")"
done

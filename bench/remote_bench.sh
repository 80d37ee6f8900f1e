#!/usr/bin/env bash
# remote_bench.sh — cost per hit of a probe on a remote target, over TCP to
# QEMU (qemu-aarch64 -g) and to gdbserver (x86-64), side by side with
# gdb-multiarch counting the same hits with a silent breakpoint
# (break + commands / silent / continue) on the same kind of stub.  Each
# figure is (time with N hits - time with 1 hit) / (N - 1), one fresh stub per
# run, so that connecting and loading the symbols cancel out.  sonde's
# line:step is counted inside the target (a trampoline per site,
# src/probe/remote/remote_count.c), by the stub (a tracepoint, gdbserver,
# SONDE_REMOTE_IN_TARGET=0), and is measured with breakpoints too
# (SONDE_REMOTE_TRACEPOINTS=0: one stop per hit), where sonde executes the displaced
# instruction itself (rarch.emulate), and with it single-stepped instead
# (SONDE_REMOTE_EMULATE=0, the way before).  Then the floor of a stop per hit:
# the round trip of one request (`p` of the pc, 2000 times, on a stopped
# target).  Prints ratios; never fails on timing.
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
# TOOL: sonde, sonde-bp (breakpoints only) or gdb.
run() {
	local port; port=$(free_port)
	start_stub "$2" "$port" "$3"
	local t0; t0=$(date +%s.%N)
	case $1 in
	sonde)
		"$SONDE" probe --target "tcp:127.0.0.1:$port" --exe "$tmp/prog.$2" -e line:step -o /dev/null ;;
	sonde-tp)
		SONDE_REMOTE_IN_TARGET=0 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe "$tmp/prog.$2" \
			-e line:step -o /dev/null ;;
	sonde-bp)
		SONDE_REMOTE_TRACEPOINTS=0 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe "$tmp/prog.$2" \
			-e line:step -o /dev/null ;;
	sonde-step)
		SONDE_REMOTE_TRACEPOINTS=0 SONDE_REMOTE_EMULATE=0 "$SONDE" probe --target "tcp:127.0.0.1:$port" \
			--exe "$tmp/prog.$2" -e line:step -o /dev/null ;;
	gdb)
		printf 'set pagination off\nset confirm off\ntarget remote 127.0.0.1:%s\nbreak step\ncommands\nsilent\ncontinue\nend\ncontinue\n' \
			"$port" > "$tmp/gdb.cmd"
		"$GDB" -q -batch -x "$tmp/gdb.cmd" "$tmp/prog.$2" > /dev/null 2>&1 ;;
	esac
	local t1; t1=$(date +%s.%N)
	wait "$stub" 2>/dev/null
	stub=
	python3 -c "print($t1 - $t0)"
}

per_hit() {  # TOOL KIND [HITS]: microseconds per hit
	local a b n=${3:-$N}
	a=$(run "$1" "$2" 1)
	b=$(run "$1" "$2" "$n")
	python3 -c "print('%.3f' % max(0.0, ($b - $a) / ($n - 1) * 1e6))"
}

# round_trip KIND: microseconds per request and reply (`p` of the pc) on a
# stopped target, in no-ack mode.
round_trip() {
	local port; port=$(free_port)
	start_stub "$1" "$port" 1
	python3 - "$port" "$1" <<'EOF'
import re, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
buf = b""
noack = False
def req(p):
    global buf
    s.sendall(b"$" + p.encode() + b"#%02x" % (sum(p.encode()) & 0xff))
    while True:
        m = re.search(rb"\$([^#]*)#..", buf)
        if m:
            buf = buf[m.end():]
            if not noack:
                s.sendall(b"+")
            return m.group(1)
        d = s.recv(65536)
        if not d:
            sys.exit(1)
        buf += d
req("qSupported:swbreak+")
req("QStartNoAckMode")
noack = True
req("?")
pc = "p20" if sys.argv[2] == "qemu" else "p10"
n = 2000
t0 = time.perf_counter()
for _ in range(n):
    req(pc)
print("%.0f" % ((time.perf_counter() - t0) / n * 1e6))
s.close()
EOF
	kill "$stub" 2>/dev/null
	wait "$stub" 2>/dev/null
	stub=
}

ratio() { python3 -c "r = $1 / $2 if $2 > 0 else 0; print(('%.0f' if r >= 100 else '%.1f') % r if r else 'n/a (below the noise)')"; }

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
	# sonde counts line:step in the target (no stop per hit): the cost per
	# hit is far below the noise of starting a stub, so it is measured over
	# NT = 100 N hits on QEMU, 5000 N on gdbserver (native speed).  On
	# gdbserver, the stub's tracepoints beside it (SONDE_REMOTE_IN_TARGET=0).
	NT=$((N * 100))
	[ $kind = gdbserver ] && NT=$((N * 5000))
	s=$(per_hit sonde $kind $NT)
	how="counted in the target, over $NT hits"
	tpv=""
	[ $kind = gdbserver ] && tpv=$(per_hit sonde-tp $kind)
	b=$(per_hit sonde-bp $kind)
	st=$(per_hit sonde-step $kind)
	g=$(per_hit gdb $kind)
	rt=$(round_trip $kind)
	echo "$kind, N=$N hits: sonde line:step ($how) $s us per hit (gdb/sonde $(ratio "$g" "$s"));" \
		"sonde with breakpoints $b us (gdb/sonde $(ratio "$g" "$b"));" \
		"sonde with breakpoints, stepping the instruction $st us (gdb/sonde $(ratio "$g" "$st"));" \
		"${tpv:+sonde with gdbserver tracepoints $tpv us (gdb/sonde $(ratio "$g" "${tpv:-0}"));}" \
		"$GDB silent breakpoint $g us;" \
		"one round trip $rt us"
done

#!/usr/bin/env bash
# ucsim_bench.sh — cost per hit of a line probe on 8051 firmware under
# ucsim (s51), counted in the chip (--target-ram: an LCALL into a counting
# stub, no stop) side by side with the same probe on the simulator's
# breakpoint (a stop and a `run` through the console per hit), on the same
# simulator build.  tests/progs/mcs51_fw.c is built with -DN_WORK=N (the
# line `c_data = ...` runs N times) and with -DN_WORK=1; each figure is
# (wall time with N hits - wall time with 1 hit) / (N - 1), a fresh
# simulator per run.  Also the firmware's own run time without sonde and
# the cycles a counted hit adds (the simulator's clock, from the stubs'
# instructions).  Prints figures; never fails on timing.
#   BUILD=build bash bench/ucsim_bench.sh [N]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$root/build}
SONDE=${SONDE:-$BUILD/bin/sonde}
N=${1:-200}
CON=$root/tests/tools/ucsim_console.py
tmp=$(mktemp -d /tmp/sonde-ucsim-bench.XXXXXX)
sim=
trap '[ -n "$sim" ] && kill "$sim" 2>/dev/null; rm -rf "$tmp"' EXIT
src=$root/tests/progs/mcs51_fw.c
L=$(grep -n "c_data = (unsigned char)" "$src" | cut -d: -f1)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for n in 1 "$N"; do
	mkdir -p "$tmp/$n"
	sdcc --debug -mmcs51 -DN_WORK="$n" -o "$tmp/$n/" "$src" >/dev/null || { echo "sdcc failed"; exit 1; }
done

start() {
	port=$(free_port)
	s51 -P -b -I 'if=xram[0xffff]' -Z "$port" "$1" >/dev/null 2>&1 &
	sim=$!
	python3 "$CON" "$port" wait
}
stop() { kill "$sim" 2>/dev/null; wait "$sim" 2>/dev/null; sim=; }
now() { date +%s.%N; }

# run_sonde N EXTRA...: wall seconds of one probed run of the N build
run_sonde() {
	local n=$1
	shift
	start "$tmp/$n/mcs51_fw.ihx"
	local t0 t1
	t0=$(now)
	"$SONDE" probe --target "ucsim:127.0.0.1:$port" --exe "$tmp/$n/mcs51_fw.ihx" "$@" -e "line:mcs51_fw.c:$L" \
		--format=json >"$tmp/out.json" 2>"$tmp/err" || { cat "$tmp/err"; }
	t1=$(now)
	stop
	python3 -c "import json; d=json.load(open('$tmp/out.json')); print(d['probes'][0]['hits'], end=' ')" 2>/dev/null
	echo "$t1 - $t0" | bc -l
}

echo "ucsim $(s51 -v 2>&1 | head -1), N=$N hits, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
for mode in breakpoint counted; do
	extra=()
	[ $mode = counted ] && extra=(--target-ram 0x4000:0x400)
	r1=$(run_sonde 1 "${extra[@]}")
	rn=$(run_sonde "$N" "${extra[@]}")
	h1=${r1% *} t1=${r1#* } hn=${rn% *} tn=${rn#* }
	per=$(echo "($tn - $t1) / ($N - 1) * 1000000" | bc -l)
	printf "%-11s hits %s / %s   wall %.3f s / %.3f s   per hit %.0f us\n" "$mode" "$h1" "$hn" "$t1" "$tn" "$per"
	eval "per_$mode=$per"
done
# a counted hit costs the simulator some 50 instructions, far below what
# this wall-clock difference resolves: the ratio only when it is positive
if [ "$(echo "$per_counted > 0" | bc -l)" = 1 ]; then
	printf "breakpoint / counted: %.0fx (the counted figure is at the resolution of N vs 1)\n" \
		"$(echo "$per_breakpoint / $per_counted" | bc -l)"
else
	echo "breakpoint / counted: counted hits below the resolution of N vs 1 (install and reads dominate)"
fi

# the cycles a counted hit costs the firmware: the simulator's clock at its end
for mode in plain counted; do
	start "$tmp/$N/mcs51_fw.ihx"
	if [ $mode = counted ]; then
		"$SONDE" probe --target "ucsim:127.0.0.1:$port" --exe "$tmp/$N/mcs51_fw.ihx" --target-ram 0x4000:0x400 \
			-e "line:mcs51_fw.c:$L" >/dev/null 2>&1
	else
		python3 "$CON" "$port" run
	fi
	python3 - "$port" "$mode" <<'EOF'
import socket, sys, re
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
b = b""
while b.count(b"\0") < 2 or b"uCsim" not in b:
    b += s.recv(65536)
s.sendall(b"state\n")
b = b""
while not b.endswith(b"\0"):
    b += s.recv(65536)
m = re.search(rb"Total time since last reset= \S+ sec \((\d+) clks\)", b)
print(m.group(1).decode() if m else 0)
EOF
	stop
done >"$tmp/clks"
read -r plain counted < <(tr '\n' ' ' <"$tmp/clks")
echo "firmware's run: $plain clks without sonde, $counted with the counted probe: $(((counted - plain) / N)) clks per counted hit"

#!/usr/bin/env bash
# system_probe_bench.sh — a --system probe hit against bpftrace's uprobe
# on the same function and against sonde's agent probe on one process, side
# by side in one run (issue 42).  The target (bench/system_target.c) times
# its own N calls of a shared library's function once the probes are in, so
# no tool's start-up or placement is in the figures; each row is the fastest
# of REPS runs, per call, minus the plain run's.  Root only (system-wide
# uprobes).  Prints figures; never fails on timing.
#   BUILD=build bash bench/system_probe_bench.sh [N]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$root/build}
SONDE=${SONDE:-$BUILD/bin/sonde}
N=${1:-200000}
REPS=${REPS:-3}
[ "$(id -u)" = 0 ] || { echo "system_probe_bench: needs root"; exit 0; }
tmp=$(mktemp -d /tmp/sonde-system-bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
gcc -O1 -g -fPIC -shared -o libsys_lib.so "$root/tests/progs/sys_lib.c" &&
	gcc -O2 -o target "$root/bench/system_target.c" -L. -lsys_lib -Wl,-rpath,"$tmp" || exit 1
LIB=$tmp/libsys_lib.so
L=$(grep -n '/\* odd \*/' "$root/tests/progs/sys_lib.c" | cut -d: -f1)

# run TOOL-PREFIX: one timed run; a background tool is placed first (its
# "ready" line on stderr or stdout, WAIT the text), then the target goes
one() { # WAIT CMD... : ns per call of one run under CMD (NONE: plain)
	local wait=$1; shift
	rm -f go tool.out
	local tpid=
	if [ "$1" != NONE ]; then
		"$@" >tool.out 2>&1 &
		tpid=$!
		# bounded: a tool that died or never says it is ready ends the row
		for _ in $(seq 3000); do
			grep -q "$wait" tool.out 2>/dev/null && break
			kill -0 $tpid 2>/dev/null || { echo "tool exited: $(head -3 tool.out)" >&2; echo 0; return; }
			sleep 0.01
		done
	fi
	./target "$N" go >t.out &
	local p=$!
	touch go
	wait $p
	# TERM: a background job of a script ignores SIGINT (bpftrace keeps it so)
	[ -n "$tpid" ] && { kill -TERM $tpid; wait $tpid 2>/dev/null; }
	awk '{print $1}' t.out
}
best() { # WAIT CMD...
	local b=
	for _ in $(seq "$REPS"); do
		v=$(one "$@")
		b=$(python3 -c "print(min(x for x in [$v, ${b:-1e18}]))")
	done
	echo "$b"
}
plain=$(best - NONE)
row() { # LABEL WAIT CMD...
	local label=$1; shift
	local v
	v=$(best "$@")
	printf '%-58s %9.1f ns per call (%.1f above plain)\n' "$label" "$v" "$(python3 -c "print($v - $plain)")"
}
echo "== $N calls of sys_work in a shared library (its own clock), fastest of $REPS; $(nproc) CPUs, $(uname -r)"
printf '%-58s %9.1f ns per call\n' "plain" "$plain"
row "sonde probe --system func (uprobe+uretprobe, counted, timed)" "probes in every process" \
	"$SONDE" probe --system -e "func:$LIB:sys_work"
row "sonde probe --system line (uprobe, counted by process)" "probes in every process" \
	"$SONDE" probe --system -e "line:$LIB:sys_lib.c:$L"
if command -v bpftrace >/dev/null; then
		# BEGIN runs once every probe is attached ("Attaching" is said before)
	row "bpftrace uprobe: @[pid] = count()" "sonde-ready" \
		bpftrace -B line -e "BEGIN { printf(\"sonde-ready\\n\"); } uprobe:$LIB:sys_work { @[pid] = count(); }"
	row "bpftrace uprobe+uretprobe: hist(duration)" "sonde-ready" \
		bpftrace -B line -e "BEGIN { printf(\"sonde-ready\\n\"); } uprobe:$LIB:sys_work { @s[tid] = nsecs; } uretprobe:$LIB:sys_work /@s[tid]/ { @d = hist(nsecs - @s[tid]); delete(@s[tid]); }"
else
	echo "bpftrace: not installed"
fi
# the agent on one process: launched, its probes in before main
rm -f go
best_agent=
for _ in $(seq "$REPS"); do
	rm -f go
	"$SONDE" probe -e func:sys_work -o /dev/null -- ./target "$N" go >t.out 2>/dev/null &
	p=$!
	touch go
	wait $p
	v=$(awk '{print $1}' t.out)
	best_agent=$(python3 -c "print(min(x for x in [$v, ${best_agent:-1e18}]))")
done
printf '%-58s %9.1f ns per call (%.1f above plain)\n' "sonde probe func (agent, one process, entry+return)" "$best_agent" \
	"$(python3 -c "print($best_agent - $plain)")"

#!/usr/bin/env bash
# probe_enable.sh — `disable ID` / `enable ID` in an interactive session while
# the program runs (tests/progs/phases_ctl.c: three phases of work() calls,
# each started by the test, and a second thread calling other() all along):
# work()'s func probe is disabled between phase 1 and phase 2 and enabled
# again before phase 3, so it counts phases 1 and 3 exactly (the program
# prints them) and says `disabled` meanwhile; the other probe, left alone,
# counts every call of the running thread; the program's output is
# unchanged.  On the agent (the default) and on --engine=ptrace; the agent's
# refusal for a var probe; bad commands.
source "$ROOT/tests/lib.sh"

gcc -O2 -g -I"$PROGS" -o ph "$PROGS/phases_ctl.c" -lpthread || { notok build "gcc failed"; exit 0; }

# wait_for FILE PATTERN: until FILE has a line matching PATTERN (30 s at most).
wait_for() {
	for _ in $(seq 300); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

session() { # ENGINE-ARGS...: the three phases, disable after 1, enable after 2
	local tag=$1; shift
	local d=run.$tag
	rm -rf "$d"; mkdir "$d"; mkfifo "$d/cmd"
	exec 4<> "$d/cmd"   # held open here: writes never block, and sonde sees no end of input
	(cd "$d" && "$SONDE" probe --interactive "$@" -e func:work -e func:other --format=json -o out.json \
		-- ../ph 1000 700 500 < cmd > prog.out 2> sonde.err) &
	local spid=$!
	touch "$d/go1"; wait_for "$d/done1" . || true
	[ -e "$d/done1" ] || { notok "$tag: phase 1 ran" "no done1"; kill $spid; return 1; }
	echo "disable 1" >&4
	wait_for "$d/sonde.err" "^disabled 1" || { notok "$tag: disable answered" "$(tail -3 "$d/sonde.err")"; kill $spid; return 1; }
	echo "list" >&4
	wait_for "$d/sonde.err" "disabled	func:work" || true
	check "$tag: list says the probe is disabled" grep -q "^1	disabled	func:work" "$d/sonde.err"
	echo "disable 1" >&4
	wait_for "$d/sonde.err" "already disabled" || true
	check "$tag: disabling it twice is an error" grep -q "error: probe 1 is already disabled" "$d/sonde.err"
	touch "$d/go2"; wait_for "$d/done2" . || true
	echo "enable 1" >&4
	wait_for "$d/sonde.err" "^enabled 1" || { notok "$tag: enable answered" "$(tail -3 "$d/sonde.err")"; kill $spid; return 1; }
	touch "$d/go3"
	wait_for "$d/prog.out" "^phase1" || true
	echo "quit" >&4
	wait $spid
	local rc=$?
	exec 4>&-
	check "$tag: sonde exits 0" test $rc -eq 0
	check "$tag: program output as without sonde (counts printed)" grep -q "^phase1 1000 phase2 700 phase3 500 other [0-9]" "$d/prog.out"
	local other; other=$(awk '{print $8}' "$d/prog.out")
	check "$tag: work counted phases 1 and 3 (1500 calls), other every call ($other)" jq_py "$d/out.json" \
		"p=d['probes']; assert (p[0]['calls'],p[0]['returns'],p[0]['state'],p[1]['calls'],p[1]['returns'])==(1500,1500,'active',$other,$other), p"
}

session agent
session ptrace --engine=ptrace

# The agent refuses to disable a var probe (its numbers are not site counters).
mkdir -p run.var && cd run.var && mkfifo cmd
exec 3<> cmd
("$SONDE" probe --interactive -e "var:work:i" -o /dev/null -- ../ph 10 10 10 < cmd > prog.out 2> sonde.err) &
spid=$!
echo "disable 1" >&3
wait_for sonde.err "error:" || true
check "agent: a var probe cannot be disabled, said" grep -q "error: the agent engine cannot disable var probes" sonde.err
echo "disable 9" >&3
echo "enable x" >&3
wait_for sonde.err "usage: enable ID" || true
check "no such probe" grep -q "error: no probe with id 9" sonde.err
check "bad id: usage" grep -q "error: usage: enable ID" sonde.err
touch go1 go2 go3
wait_for prog.out "^phase1" || true
echo quit >&3
wait $spid
exec 3>&-
check "the program ran on to its end" grep -q "^phase1 10 phase2 10 phase3 10" prog.out

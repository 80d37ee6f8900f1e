#!/usr/bin/env bash
# probe_enable.sh — `disable ID` / `enable ID` in an interactive session while
# the program runs (tests/progs/phases_ctl.c: three phases of work() calls,
# each started by the test, and a second thread calling other() all along):
# work()'s func probe is disabled between phase 1 and phase 2 and enabled
# again before phase 3, so it counts phases 1 and 3 exactly (the program
# prints them) and says `disabled` meanwhile; the other probe, left alone,
# counts every call of the running thread; the program's output is
# unchanged.  The same for var, assert, time, plugin and stack probes, whose
# numbers the agent makes in the program.  On the agent (the default) and on
# --engine=ptrace; bad commands.
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

# session TAG IDS PROBE-ARGS... -- ENGINE-ARGS...: the three phases (1000,
# 700, 500 calls of work()); the probes IDS (comma-separated) are disabled
# after phase 1 and enabled again after phase 2.  Leaves run.TAG/out.json.
wait_file() { # FILE: until it exists (30 s at most)
	for _ in $(seq 300); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

session() {
	local tag=$1 ids=$2; shift 2
	local probes=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do probes+=("$1"); shift; done
	shift
	local d=run.$tag
	rm -rf "$d"; mkdir "$d"; mkfifo "$d/cmd"
	exec 4<> "$d/cmd"   # held open here: writes never block, and sonde sees no end of input
	(cd "$d" && "$SONDE" probe --interactive "$@" "${probes[@]}" --format=json -o out.json \
		-- ../ph 1000 700 500 < cmd > prog.out 2> sonde.err) &
	local spid=$!
	touch "$d/go1"; wait_file "$d/done1" || true
	[ -e "$d/done1" ] || { notok "$tag: phase 1 ran" "no done1"; kill $spid; return 1; }
	local id first=${ids%%,*}
	for id in ${ids//,/ }; do
		echo "disable $id" >&4
		wait_for "$d/sonde.err" "^disabled $id" || { notok "$tag: disable $id answered" "$(tail -3 "$d/sonde.err")"; kill $spid; return 1; }
	done
	echo "list" >&4
	wait_for "$d/sonde.err" "^$first	disabled	" || true
	check "$tag: list says probe $first is disabled" grep -q "^$first	disabled	${probes[$((2 * first - 1))]}" "$d/sonde.err"
	echo "disable $first" >&4
	wait_for "$d/sonde.err" "already disabled" || true
	check "$tag: disabling it twice is an error" grep -q "error: probe $first is already disabled" "$d/sonde.err"
	touch "$d/go2"; wait_file "$d/done2" || true
	for id in ${ids//,/ }; do
		echo "enable $id" >&4
		wait_for "$d/sonde.err" "^enabled $id" || { notok "$tag: enable $id answered" "$(tail -3 "$d/sonde.err")"; kill $spid; return 1; }
	done
	touch "$d/go3"
	wait_for "$d/prog.out" "^phase1" || true
	echo "quit" >&4
	wait $spid
	local rc=$?
	exec 4>&-
	check "$tag: sonde exits 0" test $rc -eq 0
	check "$tag: program output as without sonde (counts printed)" grep -q "^phase1 1000 phase2 700 phase3 500 other [0-9]" "$d/prog.out"
}

# func probes: work()'s disabled in phase 2, other()'s left alone.
for eng in agent ptrace; do
	opt=; [ $eng = ptrace ] && opt=--engine=ptrace
	session $eng 1 -e func:work -e func:other -- $opt || continue
	other=$(awk '{print $8}' run.$eng/prog.out)
	check "$eng: work counted phases 1 and 3 (1500 calls), other every call ($other)" jq_py run.$eng/out.json \
		"p=d['probes']; assert (p[0]['calls'],p[0]['returns'],p[0]['state'],p[1]['calls'],p[1]['returns'])==(1500,1500,'active',$other,$other), p"
done

# Kinds whose numbers the agent makes in the program (var, assert, time):
# var and assert see i = 0..999 and 0..499 (phases 1 and 3): 1500 values
# summing to 499500 + 124750, 400 of them (600..999) failing i < 600.  Two
# time probes at work(): the second measures the interval from the first's
# hit of the same call; disabled in phase 2, it has the 1500 intervals of
# phases 1 and 3; the first, left on, every one of the 2200 hits.
for eng in agent ptrace; do
	opt=; [ $eng = ptrace ] && opt=--engine=ptrace
	session own-$eng 1,2,4 -e var:work:i -e 'assert:work:i < 600' -e time:work -e time:work -- $opt || continue
	check "$eng: var counted the 1500 values of phases 1 and 3" jq_py run.own-$eng/out.json \
		"p=d['probes'][0]; assert (p['state'],p['hits'],p['count'],p['sum'],p['min'],p['max'],p['last'])==('active',1500,1500,624250,0,999,499), p"
	check "$eng: assert evaluated 1500, 400 failures" jq_py run.own-$eng/out.json \
		"p=d['probes'][1]; assert (p['hits'],p['evaluated'],p['failures'],p['passes'])==(1500,1500,400,1100), p"
	check "$eng: time probe left on: 2200 hits; disabled one: 1500 hits, 1500 intervals" jq_py run.own-$eng/out.json \
		"p=d['probes']; assert (p[2]['hits'],p[3]['hits'],p[3]['intervals'],p[3]['interval_from'])==(2200,1500,1500,3), p[2:]"
done

# A plugin probe (pre and post handlers; in the program on the agent).
cc -shared -fPIC -I"$ROOT/include" -o plug2.so "$PROGS/probe_plugin2.c" || { notok "plugin build" "cc failed"; exit 0; }
field() { tr ' ' '\n' | awk -F= -v k="$1" '$1==k {print $2}'; }
for eng in agent ptrace; do
	opt=; [ $eng = ptrace ] && opt=--engine=ptrace
	session plug-$eng 1 -e plugin:work -- $opt --plugin "$PWD/plug2.so" || continue
	rep=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['probes'][0].get('report',''))" run.plug-$eng/out.json)
	check "$eng: plugin's pre and post ran 1500 times (phases 1 and 3): $rep" \
		test "$(echo "$rep" | field pre)" = 1500 -a "$(echo "$rep" | field post)" = 1500
	check "$eng: plugin probe's hits: 1500" jq_py run.plug-$eng/out.json "p=d['probes'][0]; assert p['hits']==1500, p"
done

# A stack probe (on the agent the program copies its stacks, 2 KiB each so
# that a phase's 1000 fit in the thread's ring; disabled, it copies none):
# the stacks of phases 1 and 3, 1500, all work <- main.
for eng in agent ptrace; do
	opt=--stack-copy=2K; [ $eng = ptrace ] && opt=--engine=ptrace
	session stack-$eng 1 -e stack:work -- $opt || continue
	check "$eng: stack probe counted the 1500 stacks of phases 1 and 3, work <- main" jq_py run.stack-$eng/out.json \
		"p=d['probes'][0]; s=p['stacks']; assert (p['hits'],p['lost'],sum(x['count'] for x in s))==(1500,0,1500) and all([f['name'] for f in x['frames'][:2]]==['work','main'] for x in s), p"
done

# Bad commands.
mkdir -p run.var && cd run.var && mkfifo cmd
exec 3<> cmd
("$SONDE" probe --interactive -e "var:work:i" -o /dev/null -- ../ph 10 10 10 < cmd > prog.out 2> sonde.err) &
spid=$!
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

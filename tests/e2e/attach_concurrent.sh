#!/usr/bin/env bash
# attach_concurrent.sh — several sessions on one process at once
# (tests/progs/attach_again.c, which counts its own calls; a sonde-cc build
# and a plain gcc build).  A `sonde probe -p` (func:leaf, line: in leaf,
# var: of leaf's argument) during a `sonde record -p` (profile, then
# --trace), and during a launched `sonde record --trace`: the probes see the
# round made while they ran, the recording every round made while it ran,
# both as the program counted (the var probe's count and sum from
# arithmetic: 400 middle(100) calls a round, each passing 0..99).  Refused,
# saying which session holds what, the process unchanged: a `record -p`
# while a probe session runs (after it, it records), and a second `record
# -p` while one runs.  Needs ptrace of a non-child.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
need_ptrace "attach concurrent"
ATTACH_PROG=./aa
LEAF_LINE=28 # atomic_fetch_add_explicit(&n_leaf, ...) in leaf (tests/progs/attach_again.c)

rounds_done() { for _ in $(seq 1000); do [ "$(grep -c '^round' "$1")" -ge "$2" ] && return 0; sleep 0.02; done; return 1; }
# leaf_sum FILE FROM TO: the leaf calls of rounds FROM..TO as printed
leaf_sum() { grep '^round' "$1" | sed -n "$2,$3p" | sed -E 's/.* leaf ([0-9]+) .*/\1/' | awk '{s += $1} END {print s + 0}'; }
# probes_ok TAG JSON N: func and line probes saw N hits, the var probe N values summing to N / 100 * 4950
probes_ok() {
	check "$1: func:leaf, line: in leaf and var: of its argument each saw the $3 calls made while they ran" jq_py "$2" \
		"p=d['probes']; n=$3; assert [x.get('calls', x.get('hits', x.get('count'))) for x in p[:2]] == [n, n], [(x['spec'], x.get('calls'), x.get('hits')) for x in p]; v=p[2]; assert v['count'] == n and v['sum'] == n // 100 * 4950, v"
}

for build in sonde-cc gcc; do
	if [ $build = sonde-cc ]; then "$SONDE_CC_BIN" -O2 -g -pthread -I"$PROGS" -o aa "$PROGS/attach_again.c"; else
		gcc -O2 -g -pthread -I"$PROGS" -o aa "$PROGS/attach_again.c"; fi || { notok build $build; exit 0; }
	for mode in profile trace; do
		T="$build, record -p${mode/profile/} ${mode/profile/}"
		T="$build, record -p $([ $mode = trace ] && echo --trace)"
		start "$build$mode"
		record_attached "r$build$mode" $([ $mode = trace ] && echo --trace) || notok "$T: attached" "$(tail -2 r$build$mode.err)"
		probe_attached "$pid" "p$build$mode.err" -e func:leaf -e "line:attach_again.c:$LEAF_LINE" \
			-e "var:attach_again.c:$LEAF_LINE:x" --format=json -o "p$build$mode.json"
		grep -q '^sonde: probes in process' "p$build$mode.err" || notok "$T: probe -p during it" "$(tail -2 "p$build$mode.err")"
		echo go >&3; rounds_done "$build$mode.out" 1
		kill -INT $sonde_pid; wait $sonde_pid
		check "$T: the probe session ends with status 0" test $? -eq 0
		echo go >&3; rounds_done "$build$mode.out" 2
		kill -INT $sp; wait $sp
		check "$T: the recording ends with status 0" test $? -eq 0
		probes_ok "$T" "p$build$mode.json" "$(leaf_sum "$build$mode.out" 1 1)"
		"$SONDE" report -i "r$build$mode.data" --format=json > "r$build$mode.json" 2>&1
		n=$(leaf_sum "$build$mode.out" 1 2)
		check "$T: the recording saw the $n leaf calls of both rounds, nothing lost" jq_py "r$build$mode.json" \
			"f={x['name']: x['calls'] for x in d['functions']}; assert f.get('leaf') == $n and d['lost_events'] == 0, (f.get('leaf'), d['lost_events'])"
		finish
		check "$T: status 3, the program's own" grep -qx "status 3" "$build$mode.out"
	done
done

# ---- a probe -p during a launched record --trace (the plain build) ----
launch_recorded l --trace
probe_attached "$pid" pl.err -e func:leaf -e "line:attach_again.c:$LEAF_LINE" -e "var:attach_again.c:$LEAF_LINE:x" \
	--format=json -o pl.json
echo go >&3; rounds_done l.out 1
kill -INT $sonde_pid; wait $sonde_pid
echo go >&3; rounds_done l.out 2
exec 3>&-
wait $lp
check "launched record --trace: ends with the program's status (3)" test $? -eq 3
probes_ok "probe -p during a launched record --trace" pl.json "$(leaf_sum l.out 1 1)"
"$SONDE" report -i l.data --format=json > lr.json 2>&1
n=$(leaf_sum l.out 1 2)
check "launched record --trace: its $n leaf calls, nothing lost" jq_py lr.json \
	"f={x['name']: x['calls'] for x in d['functions']}; assert f.get('leaf') == $n and d['lost_events'] == 0, (f.get('leaf'), d['lost_events'])"

# ---- refused: record -p while probes run; a second record -p ----
start ref
echo go >&3; echo go >&3; echo go >&3
finish
start busy
probe_attached "$pid" pb.err -e func:leaf --format=json -o pb.json
"$SONDE" record -p "$pid" -o no.data 2> no.err
check "record -p while a probe session runs: exit 2" test $? -eq 2
check "... says the probe session holds the functions' entries" \
	grep -q "^sonde: error: the agent could not start in process $pid (a 'sonde probe -p' session runs in it: its probes hold" no.err
echo go >&3; rounds_done busy.out 1
kill -INT $sonde_pid; wait $sonde_pid
check "the probe session goes on exact (leaf: $(leaf_sum busy.out 1 1) calls)" jq_py pb.json "assert d['probes'][0]['calls'] == $(leaf_sum busy.out 1 1)"
record_attached yes || notok "record -p after the probe session" "$(tail -2 yes.err)"
"$SONDE" record -p "$pid" -o no2.data 2> no2.err
check "a second record -p while one runs: exit 2" test $? -eq 2
check "... says it is being recorded now" grep -q "^sonde: error: the agent could not start in process $pid (it is being recorded now: .*another 'sonde record -p'" no2.err
echo go >&3; rounds_done busy.out 2
kill -INT $sp; wait $sp
"$SONDE" report -i yes.data --format=json > yes.json 2>&1
check "record -p after the probe session: exact (leaf: $(leaf_sum busy.out 2 2) calls)" jq_py yes.json \
	"f={x['name']: x['calls'] for x in d['functions']}; assert f.get('leaf') == $(leaf_sum busy.out 2 2), f.get('leaf')"
echo go >&3; rounds_done busy.out 3
finish
check "after all that: output and status equal a run without sonde" cmp -s ref.out busy.out

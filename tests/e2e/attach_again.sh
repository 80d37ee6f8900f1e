#!/usr/bin/env bash
# attach_again.sh — `sonde record -p` again and again on one running
# process (tests/progs/attach_again.c: a sonde-cc build, then a plain gcc
# build whose functions each attach patches without a rebuild; a worker
# thread that lives as long as the program, both threads inside serve /
# worker_loop from before the first attach to the end).  12 cycles in a row
# (8 on the plain build): profile, --trace, --trace -N leaf, --locks and
# `sonde probe -p`, four (three) ended by SIGKILL of sonde, a round of work
# nobody records between them.  Checks: each recording holds exactly the
# round made inside it, as the program counted it (calls, --locks's
# acquisitions, probe hits), nothing of an earlier one; the calls running at
# each attach (serve, worker_loop: under frames an earlier recording hooked)
# are found; one runtime loaded, at most one session mapped after each
# cycle; the record cycles after the first add at most 1 MiB of resident
# memory in all (a probe cycle's growth is printed: the probe engine keeps
# its areas); output and exit status equal a run without sonde.  Then a
# process launched under `sonde record` whose sonde was SIGKILLed is
# attached twice (plain and sonde-cc builds), each recording its own round;
# while its sonde runs, an attach is refused, saying why.
# Needs ptrace of a non-child: root, or kernel.yama.ptrace_scope 0.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
need_ptrace "attach again"
ATTACH_PROG=./aa

# The cycles: MODE KILL (1: SIGKILL of sonde once the round is done).
# The sonde-cc build gets 12 cycles, the plain build (slower attaches:
# its functions are patched each time) the first 8.
all_cycles=(
	"profile 0" "trace 0" "locks 0" "probe 0" "profile 1" "trace-N 0"
	"trace 1" "locks 1" "profile 0" "probe 0" "profile 1" "locks 0"
)

# cycles B: the cycles on ./aa, built as B says; the reference run first.
cycles_on() {
local B=$1
local cycles=("${all_cycles[@]:0:$2}")
local rounds=$(( ${#cycles[@]} * 2 )) # one round inside each cycle, one between
# ---- reference: the same rounds without sonde ----
start ref
for _ in $(seq $rounds); do echo go >&3; done
finish
check "$B: reference run: $rounds rounds, status 3" bash -c "[ \$(grep -c '^round' ref.out) = $rounds ] && grep -qx 'status 3' ref.out"

# round_done K: wait for the program's K-th round line.
round_done() {
	for _ in $(seq 1000); do [ "$(grep -c '^round' run.out)" -ge "$1" ] && return 0; sleep 0.02; done
	return 1
}
rss() { awk '/^VmRSS/ {print $2}' /proc/$pid/status; }
sessions_mapped() { grep -c 'sonde-session' /proc/$pid/maps; }

start run
k=0
grown=0
before=
i=0
for c in "${cycles[@]}"; do
	i=$((i + 1))
	set -- $c
	mode=$1 kill=$2 name="c$i"
	case $mode in
	profile) opts=() ;;
	trace) opts=(--trace) ;;
	trace-N) opts=(--trace -N leaf) ;;
	locks) opts=(--locks) ;;
	esac
	if [ "$mode" = probe ]; then
		probe_attached "$pid" "$name.err" -e func:leaf --format=json -o "$name.json"
		sp=$sonde_pid
		grep -q '^sonde: probes in process' "$name.err" || notok "$B: cycle $i ($mode): attached" "$(tail -2 "$name.err")"
	else
		record_attached "$name" "${opts[@]}" || notok "$B: cycle $i ($mode): attached" "$(tail -2 "$name.err")"
	fi
	k=$((k + 1))
	echo go >&3
	round_done $k || notok "$B: cycle $i: round $k" "the program did not print it"
	if [ "$kill" = 1 ]; then
		kill -KILL $sp
		wait $sp 2>/dev/null
		[ "$mode" = probe ] || check "$B: cycle $i ($mode, SIGKILL of sonde): the agent saw it and ended" agent_ended "$pid"
	else
		kill -INT $sp
		wait $sp
		check "$B: cycle $i ($mode): sonde ends with status 0" test $? -eq 0
		check "$B: cycle $i ($mode): the agent has ended" agent_ended "$pid"
		own=$(grep '^round' run.out | sed -n "${k}p")
		case $mode in
		probe)
			check "$B: cycle $i (probe -p): leaf's hits equal the round's leaf calls ($own)" jq_py "$name.json" \
				"import re; n=int(re.search(r'leaf (\d+)', '''$own''').group(1)); p=d['probes'][0]; assert p['calls'] == n, (p['calls'], n)" ;;
		*)
			"$SONDE" report -i "$name.data" --format=json > "$name.rep" 2> "$name.rerr"
			python3 - "$name.rep" "$own" "$mode" "$i" "$B" <<'PY'
import json, re, sys
rep, own, mode, i, B = sys.argv[1:6]
ok = lambda c, n, why="": print(("ok - " if c else "not ok - ") + n + ("" if c else ": " + why))
want = {m.group(1): int(m.group(2)) for m in re.finditer(r"(\w+) (\d+)", own.split(":", 1)[1])}
want.pop("hot_lock", None)
want["work"] = 2 # one per thread a round
if mode == "trace-N":
    want.pop("leaf")
d = json.load(open(rep))
f = {x["name"]: x["calls"] for x in d["functions"]}
got = {n: f.get(n, 0) for n in want}
ok(got == want, f"{B}: cycle {i} ({mode}): the calls are the round's own, nothing of an earlier recording ({want})", str(got))
if mode == "trace-N":
    ok("leaf" not in f, f"{B}: cycle {i} (trace -N leaf): no leaf", str(f.get("leaf")))
ok(d["lost_events"] == 0, f"{B}: cycle {i} ({mode}): nothing lost", str(d["lost_events"]))
PY
			"$SONDE" info -i "$name.data" --format=json > "$name.info" 2>&1
			check "$B: cycle $i ($mode): the calls running at the attach are found (serve, worker_loop: under frames an earlier session hooked)" \
				jq_py "$name.info" "r=d['attached_running']; assert any('serve' in t['calls'] for t in r) and any(t['calls'] == ['worker_loop'] for t in r), r"
			if [ "$mode" = locks ]; then
				"$SONDE" locks -i "$name.data" --format=json > "$name.locks" 2>&1
				check "$B: cycle $i (locks): hot_lock's acquisitions are the round's ($own)" jq_py "$name.locks" \
					"import re; n=int(re.search(r'hot_lock (\d+)', '''$own''').group(1)); L={l['name']: l['acquisitions'] for l in d['locks']}; assert L.get('hot_lock') == n, (L, n)"
			fi ;;
		esac
	fi
	# a round nobody records
	k=$((k + 1))
	echo go >&3
	round_done $k || notok "$B: after cycle $i: round $k" "the program did not print it"
	# the resident memory a record cycle adds (probe -p's is printed: its
	# engine keeps each session's area, src/rt/probes.c)
	now=$(rss)
	[ -n "${before:-}" ] && [ "$mode" != probe ] && grown=$(( grown + now - before ))
	[ "$mode" = probe ] && echo "# $B: probe -p cycle $i added $(( now - before )) kB resident"
	before=$now
	echo "# after cycle $i ($mode): VmRSS $(rss) kB, $(grep -c . /proc/$pid/maps) mappings"
	[ "$mode" = probe ] || check "$B: after cycle $i: one runtime, at most one session mapped" \
		bash -c "[ \$(grep libsonde-rt /proc/$pid/maps | awk '{print \$6}' | sort -u | wc -l) = 1 ] && [ \$(grep -c 'sonde-session' /proc/$pid/maps) -le 1 ]"
done
check "$B: the record cycles after the first added ${grown} kB of resident memory in all (at most 1 MiB)" \
	test "${grown}" -le 1024 -a "${grown}" -ge -1024
finish
check "$B: the program's output and exit status equal the unattached run's" cmp -s ref.out run.out

}

"$SONDE_CC_BIN" -O2 -g -pthread -I"$PROGS" -o aa "$PROGS/attach_again.c" || { notok build "sonde-cc"; exit 0; }
cycles_on "sonde-cc build" 12
# a program never built for sonde: its functions patched without a rebuild at each attach
gcc -O2 -g -pthread -I"$PROGS" -o aa "$PROGS/attach_again.c" || { notok build "gcc"; exit 0; }
cycles_on "plain gcc build" 8

# ---- a launched recording whose sonde was SIGKILLed: attached again ----
# launched_orphan B: ./aa launched under `sonde record`, that sonde
# SIGKILLed (the launched runtime has no watcher: nobody reads its session
# any more); then two `record -p`, a round in each: each holds the round's
# calls as the program counted them; the program runs to its end.
launched_orphan() {
	local B=$1 lp j
	launch_recorded o
	echo go >&3 # a round under the launched recording
	wait_for o.out '^round 1:'
	kill -KILL $lp
	wait $lp 2>/dev/null
	for j in 1 2; do
		if ! record_attached "orphan$j"; then
			notok "$B, launched, its sonde SIGKILLed: attach $j" "$(tail -2 orphan$j.err)"
			kill -KILL $sp 2>/dev/null
			continue
		fi
		echo go >&3
		wait_for o.out "^round $((j + 1)):" || notok "$B: orphan round $((j + 1))" "not printed"
		kill -INT $sp
		wait $sp
		check "$B, launched, its sonde SIGKILLed: attach $j: sonde ends with status 0" test $? -eq 0
		grep '^round' o.out | sed -n "$((j + 1))p" > orphan$j.own
		"$SONDE" report -i "orphan$j.data" --format=json > "orphan$j.rep" 2>&1
		check "$B, launched, its sonde SIGKILLed: attach $j records the round made inside it ($(cat orphan$j.own))" \
			python3 - "orphan$j.rep" "orphan$j.own" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
w = {m.group(1): int(m.group(2)) for m in re.finditer(r"(\w+) (\d+)", open(sys.argv[2]).read().split(":", 1)[1])}
f = {x["name"]: x["calls"] for x in d["functions"]}
bad = {k: (f.get(k, 0), w[k]) for k in ("leaf", "middle", "round_once") if f.get(k, 0) != w[k]}
print(bad or "", d["lost_events"] or "")
sys.exit(1 if bad or d["lost_events"] else 0)
PY
	done
	echo more >&3
	exec 3>&-
	wait_for o.out '^end$'
	check "$B, launched, its sonde SIGKILLed: the program ran to its end, every round printed" \
		bash -c "[ \$(grep -c '^round' o.out) = 3 ] && grep -qx end o.out"
}
launched_orphan "plain gcc build"
"$SONDE_CC_BIN" -O2 -g -pthread -I"$PROGS" -o aa "$PROGS/attach_again.c" || { notok build "sonde-cc"; exit 0; }
launched_orphan "sonde-cc build"

# ---- a launched recording is refused while its sonde runs, saying why ----
launch_recorded l
"$SONDE" record -p "$pid" -o again.data 2> again.err
rc=$?
check "an attach to a process launched under sonde record: exit 2" test $rc -eq 2
check "... says it is being recorded" grep -q "^sonde: error: the agent could not start in process $pid (it is being recorded now: started under a 'sonde record' that still runs" again.err
echo go >&3
exec 3>&-
wait $lp
check "the launched recording ends with the program's status (3)" test $? -eq 3

#!/usr/bin/env bash
# attach_trace.sh — `sonde record --trace -p PID` on a running sonde-cc build
# (tests/progs/attach_profile.c: 2 worker threads, waits on a FIFO, counts
# its own calls).  sonde attaches while it waits, the work runs, sonde is
# stopped with SIGINT.  Checks: the trace's calls per function (report JSON
# of the trace, and replay JSON) equal the program's own counts, nothing
# lost; the output and exit status equal an unattached run's; replay and
# the chrome / perfetto exports read it; --duration.  Then SIGKILL of sonde
# while tracing, 5 rounds, with work enough to fill the rings (nobody
# drains them any more): the program finishes with its normal output and
# status.  Then -F with -p (only middle and the leaf calls inside it, as
# the program's counts say), and --domain with -p refused as a usage error.
# And a plain build under --trace --timing=auto: the trace keeps its trees
# (sonde info: trace + profile), each count the program's.
# Needs ptrace of a non-child: root, or kernel.yama.ptrace_scope 0.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
need_ptrace "attach trace"
"$SONDE_CC_BIN" -O2 -g -pthread -I"$PROGS" -o ap "$PROGS/attach_profile.c" || { notok build "sonde-cc"; exit 0; }

reference_run 3

# ---- attached, ended by SIGINT ----
start att
record_attached "att" --trace || notok "attach" "sonde did not start: $(cat att.err)"
echo go >&3
wait_for att.out "^phase 1"
kill -INT $sp
wait $sp
rc=$?
check "sonde ends on SIGINT with status 0" test $rc -eq 0
check "the agent has ended (its watcher thread is gone)" agent_ended "$pid"
finish
check "output and exit status equal the unattached run's" cmp -s ref.out att.out
"$SONDE" info -i att.data --format=json > info.json 2>&1
check "sonde info: a trace, attached to $pid" \
	jq_py info.json "sys.exit(0 if d['mode'] == 'trace' and d['attached_pid'] == $pid else 1)"
"$SONDE" report -i att.data --format=json > rep.json 2> rep.err
"$SONDE" replay -i att.data --format=json > replay.json 2> replay.err
python3 - <<'PY' || notok "the checks ran to their end" "the check script failed"
import json, os, re, sys, collections; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import say, done
own = {}
for line in open("att.out"):
    m = re.match(r"phase 1: leaf (\d+) middle (\d+) rec (\d+) worker (\d+) phase (\d+)", line)
    if m:
        own = dict(zip(["leaf", "middle", "rec", "worker", "phase"], map(int, m.groups())))
say(bool(own), "the program printed its own counts")
d = json.load(open("rep.json"))
f = {x["name"]: x["calls"] for x in d["functions"]}
for name, n in own.items():
    say(f.get(name) == n, f"report of the trace: {name}: {n} calls, as the program counted", f"sonde says {f.get(name)}")
say(d["lost_events"] == 0, "nothing lost", str(d["lost_events"]))
r = collections.Counter(c["name"] for c in json.load(open("replay.json"))["calls"])
for name, n in own.items():
    say(r.get(name) == n, f"replay of the trace: {name}: {n} calls", f"replay has {r.get(name)}")
done()
PY
check "chrome export of the attached trace" "$SONDE" export -i att.data --format=chrome -o att.chrome.json
check "chrome export: leaf slices as the program counted" python3 -c "import json,re,sys
own=int(re.search(r'phase 1: leaf (\d+)', open('att.out').read()).group(1))
ev=json.load(open('att.chrome.json'))['traceEvents']
sys.exit(0 if sum(1 for e in ev if e.get('ph')=='X' and e.get('name')=='leaf')==own else 1)"
check "perfetto export of the attached trace" "$SONDE" export -i att.data --format=perfetto -o att.pb

# ---- --trace --timing=auto of a plain build (patched): its trees kept beside the timeline ----
if gcc -O2 -g -pthread -I"$PROGS" -o ap-plain "$PROGS/attach_profile.c"; then
	ATTACH_PROG=./ap-plain run_plain pref
	ATTACH_PROG=./ap-plain start auto
	record_attached auto --trace --timing=auto || notok "attach --trace --timing=auto" "$(cat auto.err)"
	echo go >&3
	wait_for auto.out "^phase 1"
	kill -INT $sp
	wait $sp
	rc=$?
	check "--trace --timing=auto: sonde ends on SIGINT with status 0" test $rc -eq 0
	finish
	"$SONDE" info -i auto.data --format=json > auto.info.json 2>&1
	"$SONDE" report -i auto.data --format=json > auto.rep.json 2> auto.rep.err
	python3 - <<'PY' || notok "the --timing=auto checks ran to their end" "the check script failed"
import json, os, re, sys; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import say, done
own = {}
for line in open("auto.out"):
    m = re.match(r"phase 1: leaf (\d+) middle (\d+) rec (\d+) worker (\d+) phase (\d+)", line)
    if m:
        own = dict(zip(["leaf", "middle", "rec", "worker", "phase"], map(int, m.groups())))
say(bool(own), "--trace --timing=auto: the program printed its own counts")
i = json.load(open("auto.info.json"))
say(i.get("mode") == "trace + profile", "--trace --timing=auto: sonde info: a trace with its trees", str(i.get("mode")))
f = {x["name"]: x["calls"] for x in json.load(open("auto.rep.json"))["functions"]}
for name, n in own.items():
    say(f.get(name) == n, f"--trace --timing=auto attached: {name}: {n} calls, as the program counted", f"sonde says {f.get(name)}")
done()
PY
	check "--trace --timing=auto: output and exit status equal an unattached run's" cmp -s pref.out auto.out
else
	notok "gcc builds attach_profile.c" "failed"
fi

# ---- --duration ----
start dur
"$SONDE" record --trace -p "$pid" -o dur.data --duration 0.5 2> dur.err
rc=$?
check "--duration 0.5: sonde ends by itself with status 0" test $rc -eq 0
check "--duration: the agent has ended" agent_ended "$pid"
echo go >&3
finish
check "--duration: output and status unchanged" cmp -s ref.out dur.out
check "--duration: replay reads the (empty) trace" bash -c "\"$SONDE\" replay -i dur.data --format=json > /dev/null"

# ---- SIGKILL of sonde while tracing: the rings fill and nobody drains them ----
run_plain kref 3000000
for round in 1 2 3 4 5; do
	start "k$round" 3000000
	record_attached "k$round" --trace || true
	echo go >&3
	sleep 0.$((round * 2))
	kill -KILL $sp
	wait $sp 2>/dev/null
	check "round $round: the program finishes its work after sonde's SIGKILL" wait_for "k$round.out" "^phase 1"
	check "round $round: the agent saw sonde die and ended" agent_ended "$pid"
	finish
	check "round $round: SIGKILL of sonde mid-trace: same output and status" cmp -s kref.out "k$round.out"
done

# ---- -F with -p: only calls inside middle() (each makes 990 leaf calls: attach_profile.c) ----
start flt
record_attached "flt" --trace -F middle || true
echo go >&3
wait_for flt.out "^phase 1"
kill -INT $sp
wait $sp
finish
check "-F with -p: output and status unchanged" cmp -s ref.out flt.out
check "-F with -p: sonde says what the filters kept out" grep -q "^sonde: trace filters: " flt.err
"$SONDE" report -i flt.data --format=json > flt.json 2>&1
check "-F middle with -p: middle as counted, leaf 990 per middle call, nothing else" python3 -c "import json,re,sys
m=int(re.search(r'phase 1: .*middle (\d+)', open('flt.out').read()).group(1))
f={x['name']:x['calls'] for x in json.load(open('flt.json'))['functions']}
sys.exit(0 if f=={'middle':m,'leaf':990*m} else 1)"

# ---- usage: --domain is for launched traces ----
start dom
"$SONDE" record --trace --domain auto -p "$pid" -o dom.data 2> dom.err
rc=$?
check "--domain with -p: usage error (exit 1), one line" \
	bash -c "test $rc -eq 1 && grep -qx \"sonde: error: --domain does not apply to record -p (use -F / -N)\" dom.err"
check "--domain with -p: the process was not touched (no runtime loaded)" bash -c "! grep -q libsonde-rt /proc/$pid/maps"
echo go >&3
finish

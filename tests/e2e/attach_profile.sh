#!/usr/bin/env bash
# attach_profile.sh — `sonde record -p PID` on a running sonde-cc build
# (tests/progs/attach_profile.c, 2 worker threads).  The program waits on a
# FIFO before its work and counts its own calls; sonde attaches while it
# waits, it is released, sonde is stopped with SIGINT after the work, then
# the program runs its work a second time (calls after sonde ended) and
# exits.  Checks: sonde's call counts equal the program's own, both
# invariants, output and exit status equal an unattached run's, `sonde info`
# says attached.  Then SIGKILL of sonde while attached and in the middle of
# the work, 3 rounds: the program finishes with its normal output and
# status.  Then the errors.  Needs ptrace of a non-child: root, or
# kernel.yama.ptrace_scope 0.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
need_ptrace "attach profile"
"$SONDE_CC_BIN" -O2 -g -pthread -I"$PROGS" -o ap "$PROGS/attach_profile.c" || { notok build "sonde-cc"; exit 0; }

reference_run 3

# ---- attached ----
start att
record_attached "att" || notok "attach" "sonde did not start: $(cat att.err)"
check "while recording, the agent's watcher thread runs" agent_running "$pid"
echo go >&3
wait_for att.out "^phase 1"
kill -INT $sp
wait $sp
rc=$?
check "sonde ends on SIGINT with status 0" test $rc -eq 0
check "the program still runs after sonde ended" kill -0 "$pid"
check "the agent has ended (its watcher thread is gone)" agent_ended "$pid"
check "the agent's end gave back the threads' perf events (no [perf_event] mapping left)" \
	bash -c "! grep -q perf_event /proc/$pid/maps"
finish
check "output and exit status equal the unattached run's (later calls work)" cmp -s ref.out att.out
"$SONDE" info -i att.data > info.txt 2>&1
check "sonde info says the recording was attached" grep -q "^attached: *to running process $pid at [0-9T:-]*Z (sonde record -p; ended: detached" info.txt
check "sonde info: the exit status is not known (the process ran on)" grep -q "^exit status: *? (the process ran on after sonde left it)" info.txt
"$SONDE" info -i att.data --format=json > info.json 2>&1
check "sonde info --format=json: exit_status null (the process ran on)" jq_py info.json "assert d['exit_status'] is None, d.get('exit_status')"
"$SONDE" report -i att.data --format=json > rep.json 2> rep.err
python3 - "$pid" <<'PY'
import json, os, re, sys; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
own = {}
for line in open("att.out"):
    m = re.match(r"phase 1: leaf (\d+) middle (\d+) rec (\d+) worker (\d+) phase (\d+)", line)
    if m:
        own = dict(zip(["leaf", "middle", "rec", "worker", "phase"], map(int, m.groups())))
d = json.load(open("rep.json"))
f = {x["name"]: x["calls"] for x in d["functions"]}
say(bool(own), "the program printed its own counts")
for name, n in own.items():
    say(f.get(name) == n, f"{name}: {n} calls, as the program counted", f"sonde says {f.get(name)}")
say(d["lost_events"] == 0, "nothing lost", str(d["lost_events"]))
check_invariants(list(own), data="att.data")
done()
PY

# ---- the other two ends: --duration, and the process's own end ----
start dur
record_attached "dur" --duration 0.5 || true
t0=$(date +%s%N) # after sonde said it records (wait_for polls: up to ~0.1 s late)
wait $sp
rc=$?
t1=$(date +%s%N)
check "--duration 0.5: sonde ends by itself with status 0" test $rc -eq 0
check "--duration 0.5: after about 0.5 s (took $(( (t1 - t0) / 1000000 )) ms)" \
	test $(( (t1 - t0) / 1000000 )) -ge 200 -a $(( (t1 - t0) / 1000000 )) -le 10000
check "--duration: the agent has ended" agent_ended "$pid"
echo go >&3
finish
check "--duration: output and status unchanged" cmp -s ref.out dur.out

start ends
record_attached "ends" || true
ended_with_program ends
"$SONDE" report -i ends.data --format=json > ends.json 2>&1
check "the process's end: both phases recorded (leaf: 2 x 199800 calls, as printed)" \
	python3 -c "import json,re,sys
own=sum(int(m.group(1)) for m in re.finditer(r'leaf (\d+)', open('ends.out').read()))
f={x['name']:x['calls'] for x in json.load(open('ends.json'))['functions']}
sys.exit(0 if own and f.get('leaf')==own else 1)"
"$SONDE" info -i ends.data > ends.info 2>&1
check "the process's end: sonde info says so" grep -q "^attached: .*ended: process ended" ends.info

# ---- SIGKILL of sonde while attached, in the middle of the work ----
run_plain kref 3000000
for round in 1 2 3; do
	start "k$round" 3000000
	record_attached "k$round" || true
	echo go >&3
	sleep 0.$((round * 2))
	kill -KILL $sp
	wait $sp 2>/dev/null
	wait_for "k$round.out" "^phase 1" || true
	check "round $round: the agent saw sonde die and ended" agent_ended "$pid"
	finish
	check "round $round: SIGKILL of sonde mid-work: same output and status" cmp -s kref.out "k$round.out"
done

# ---- errors ----
gcc -O2 -o plain -x c - <<< '#include <unistd.h>
int main(void){for(int i=0;i<600;i++)sleep(1);return 0;}' || notok build "gcc plain"
./plain & plain=$!
sleep 0.2
"$SONDE" record --no-patch -p $plain -o plain.data 2> plain.err
rc=$?
cp /proc/$plain/maps plain.maps
kill $plain; wait $plain 2>/dev/null
check "not a sonde build, --no-patch: exit 2" test $rc -eq 2
check "not a sonde build: says so, suggests --locks and probe" \
	grep -q "^sonde: error: process $plain has no code built by sonde-cc (for its locks use 'sonde record --locks -p $plain', for probes 'sonde probe -p $plain'" plain.err
check "not a sonde build: the process was not touched (no runtime loaded)" \
	bash -c "grep -q libc plain.maps && ! grep -q libsonde-rt plain.maps"
true & gone=$!
wait $gone
"$SONDE" record -p $gone -o gone.data 2> gone.err
rc=$?
check "no such process: exit 2" test $rc -eq 2
check "no such process: one clear line" grep -qx "sonde: error: cannot attach to process $gone (no such process)" gone.err

#!/usr/bin/env bash
# attach_cxx.sh — C++ exceptions thrown through recorded frames while
# `sonde record -p` (profile and --trace) is attached to a sonde-c++ build
# (tests/progs/attach_cxx.cpp: 3 threads throw and catch through several
# instrumented frames, rethrow, run destructors that throw and catch
# inside themselves while unwinding; they wait on a FIFO and count their
# own calls).  sonde attaches while the program waits, phase 1 runs, sonde
# is stopped (SIGINT, or --duration), then phase 2 runs the same work and
# throws through the frames that were open at the end.  Checks: output and
# exit status equal an unattached run's; calls per function (exceptional
# exits included) as the program counted in phase 1, nothing lost, both
# invariants (profile); the trace's report and replay counts (--trace).
# Then SIGKILL of sonde in the middle of the work, 5 rounds: the program
# finishes with its normal output and status.  Needs ptrace of a non-child:
# root, or kernel.yama.ptrace_scope 0.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
need_ptrace "attach C++ exceptions"
# A program killed by std::terminate must give "not ok" lines, not end the
# script on SIGPIPE when the FIFO's reader is gone.
trap '' PIPE
command -v g++ > /dev/null || { skip "attach C++ exceptions" "g++ not installed"; exit 0; }
"$SONDE_CXX_BIN" -O2 -g -pthread -I"$PROGS" -o ap "$PROGS/attach_cxx.cpp" || { notok build "sonde-c++"; exit 0; }

reference_run 4
check "reference run: every thread caught its Stop" grep -q "^phase 2: .* stops 3$" ref.out

# ATTACHED MODE NAME [sonde options]: attach, phase 1, end by SIGINT (or
# by the options' --duration), phase 2 after the end.
attached() {
	local mode=$1 name=$2
	shift 2
	start "$name"
	record_attached "$name" "$@" || notok "$mode: attach" "sonde did not start: $(cat "$name.err")"
	echo go >&3
	wait_for "$name.out" "^phase 1"
	case " $* " in
	*" --duration "*) ;;
	*) kill -INT $sp ;;
	esac
	wait $sp
	check "$mode: sonde ends with status 0" test $? -eq 0
	check "$mode: the agent has ended (its watcher thread is gone)" agent_ended "$pid"
	finish
	check "$mode: output and exit status equal the unattached run's (throws after the end too)" \
		cmp -s ref.out "$name.out"
}

counts_py='
import json, os, re, sys, collections; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
name, mode = sys.argv[1], sys.argv[2]
own = {}
for line in open(name + ".out"):
    if line.startswith("phase 1:"):
        w = line.split(":", 1)[1].split()
        own = {w[i]: int(w[i + 1]) for i in range(0, len(w), 2)}
for k in ("caught", "rethrown", "inner_caught", "stops"):
    own.pop(k, None)
say(own.get("level1", 0) > 0 and own.get("inner", 0) > 0, f"{mode}: the program printed its own counts")
d = json.load(open(name + ".rep.json"))
f = collections.Counter()
for x in d["functions"]:
    f[x["name"].split("(")[0].replace("cx::", "")] += x["calls"]
for fn, n in own.items():
    say(f.get(fn) == n, f"{mode}: {fn}: {n} calls, as the program counted", f"sonde says {f.get(fn)}")
say(d["lost_events"] == 0, f"{mode}: nothing lost", str(d["lost_events"]))
if mode == "profile":
    check_invariants([x["name"] for x in d["functions"] if x["name"].startswith("cx::")], data=name + ".data",
                     label="(profile)")
else:
    r = collections.Counter(c["name"].split("(")[0].replace("cx::", "") for c in json.load(open(name + ".replay.json"))["calls"])
    for fn, n in own.items():
        say(r.get(fn) == n, f"{mode}: replay: {fn}: {n} calls", f"replay has {r.get(fn)}")
done()
'

attached profile att
"$SONDE" report -i att.data --format=json > att.rep.json 2> att.rep.err
python3 -c "$counts_py" att profile || notok "profile: the checks ran to their end" "the check script failed"

attached trace tr --trace
"$SONDE" report -i tr.data --format=json > tr.rep.json 2> tr.rep.err
"$SONDE" replay -i tr.data --format=json > tr.replay.json 2> tr.replay.err
python3 -c "$counts_py" tr trace || notok "trace: the checks ran to their end" "the check script failed"

# --duration: the end comes while the threads throw (phase 1 runs long).
run_plain dref 200000
start dur 200000
record_attached "dur" --duration 0.3 || true
echo go >&3
wait $sp
check "--duration 0.3 mid-work: sonde ends with status 0" test $? -eq 0
check "--duration: the agent has ended" agent_ended "$pid"
wait_for dur.out "^phase 1" || true
finish
check "--duration mid-work: output and status unchanged" cmp -s dref.out dur.out

# ---- SIGKILL of sonde in the middle of the work, profile and trace ----
for round in 1 2 3 4 5; do
	opt=""
	[ $((round % 2)) -eq 0 ] && opt=--trace
	start "k$round" 200000
	record_attached "k$round" $opt || true
	echo go >&3
	sleep 0.$((round * 1))
	kill -KILL $sp
	wait $sp 2> /dev/null
	check "round $round${opt:+ ($opt)}: the agent saw sonde die and ended" agent_ended "$pid"
	wait_for "k$round.out" "^phase 1" || true
	finish
	check "round $round${opt:+ ($opt)}: SIGKILL of sonde mid-work: same output and status" cmp -s dref.out "k$round.out"
done

#!/usr/bin/env bash
# attach_running.sh — `sonde record -p` (profile, then --trace) attached
# while the program (tests/progs/attach_running.c) is DEPTH levels deep in
# recursion with its main thread blocked in read() on a FIFO and a second
# thread in nanosleep().  Checks: the output (which prints the read's and
# nanosleep's return values and errno) and exit status equal a run without
# sonde (no EINTR leaked, the system calls restarted); `sonde info --format
# json` lists the calls running at the attach per thread, outermost first
# (main, DEPTH+1 deep, wait_line; napper); the calls running at the attach
# that were still running at the first event are in the recording with no
# call counted (profile: calls 0, the tree main > deep x DEPTH+1 > leaf;
# trace: slices flagged resumed), the later ones counted as the program
# counted them; both invariants.  Needs ptrace of a non-child: root, or
# kernel.yama.ptrace_scope 0.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
need_ptrace "attach running"
DEPTH=300
"$SONDE_CC_BIN" -O2 -g -pthread -I"$PROGS" -o ar "$PROGS/attach_running.c" || { notok build "sonde-cc"; exit 0; }

# run NAME: ./ar on NAME.fifo in the background until it blocks in read()
# at the bottom of the recursion (and its other thread sleeps); sets pid,
# runner; fd 3 is the FIFO's write end.
run() {
	rm -f "$1.fifo" "$1.pid"
	mkfifo "$1.fifo"
	(./ar "$1.fifo" "$1.pid" $DEPTH > "$1.out"; echo "status $?" >> "$1.out") &
	runner=$!
	exec 3>"$1.fifo"
	for _ in $(seq 250); do [ -s "$1.pid" ] && break; sleep 0.02; done
	pid=$(cat "$1.pid" 2>/dev/null) || { notok "start $1" "the program did not start"; exit 0; }
	# main in read (system call 0), the other thread in clock_nanosleep (230) or nanosleep (35)
	for _ in $(seq 250); do
		[ "$(cut -d' ' -f1 /proc/$pid/syscall 2>/dev/null)" = 0 ] &&
			cut -d' ' -f1 /proc/$pid/task/*/syscall 2>/dev/null | grep -qx -e 230 -e 35 && return 0
		sleep 0.02
	done
	notok "start $1" "the program did not block in read() and nanosleep()"
	exit 0
}
release() { echo go >&3; exec 3>&-; wait "$runner"; }

run ref
release
check "reference run: read returned 3 bytes, no nanosleep failed, status 5" \
	bash -c "grep -qx 'read returned 3 errno 0 (-)' ref.out && grep -qx 'nanosleep failures 0 errno 0' ref.out && grep -qx 'status 5' ref.out"

for mode in profile trace; do
	flag=; [ $mode = trace ] && flag=--trace
	run $mode
	record_attached "$mode" $flag || notok "$mode: attach" "sonde did not start: $(cat $mode.err)"
	sleep 0.2 # the other thread goes on sleeping, with the sleds on
	release
	for _ in $(seq 500); do kill -0 $sp 2>/dev/null || break; sleep 0.02; done
	kill -INT $sp 2>/dev/null
	wait $sp
	rc=$?
	check "$mode: sonde ends with the process, status 0" test $rc -eq 0
	check "$mode: no warning from sonde" bash -c "! grep -v 'recording process\|^sonde: recorded' $mode.err"
	check "$mode: output (read and nanosleep results) and exit status equal the run without sonde" cmp -s ref.out $mode.out
	"$SONDE" info -i $mode.data --format=json > $mode.info.json 2>&1
	"$SONDE" report -i $mode.data --format=json > $mode.rep.json 2>&1
	[ $mode = profile ] && "$SONDE" tree -i $mode.data --format=json > $mode.tree.json 2>&1
	[ $mode = trace ] && "$SONDE" replay -i $mode.data --format=json > $mode.replay.json 2>&1
	python3 - $mode $pid $DEPTH <<'PY' || notok "$mode: the checks ran to their end" "the check script failed"
import json, os, re, sys, collections; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import say, done, check_invariants
mode, pid, depth = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = open(f"{mode}.out").read()
leaf, ndeep = map(int, re.search(r"leaf (\d+) deep (\d+)", out).groups())
say(ndeep == depth + 1, f"{mode}: the program made {depth + 1} deep calls", str(ndeep))
info = json.load(open(f"{mode}.info.json"))
run = {t["tid"]: t["calls"] for t in info.get("attached_running", [])}
main = ["main"] + ["deep"] * (depth + 1) + ["wait_line"]
say(run.get(pid) == main, f"{mode}: info: main thread was running main > deep x {depth + 1} > wait_line",
    str(run.get(pid))[:300])
say(sorted(v for k, v in run.items() if k != pid) == [["napper"]], f"{mode}: info: the other thread was running napper",
    str(run))
say(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", info.get("attached_at") or ""), f"{mode}: info: when (UTC)",
    str(info.get("attached_at")))
f = {x["name"]: x for x in json.load(open(f"{mode}.rep.json"))["functions"]}
say(f.get("leaf", {}).get("calls") == leaf, f"{mode}: leaf: {leaf} calls, as the program counted",
    str(f.get("leaf", {}).get("calls")))
for name in ("main", "deep", "napper"):
    x = f.get(name)
    say(x is not None and x["calls"] == 0 and x["inclusive_ns"] > 0,
        f"{mode}: {name}, running at the attach, is there with its time and no call counted", str(x))
say(f.get("wait_line") is None, f"{mode}: wait_line, which returned before the thread's first event, is not", str(f.get("wait_line")))
if mode == "profile":
    t = [t for t in json.load(open("profile.tree.json"))["threads"] if t["tid"] == pid][0]
    chain, n = [], t["roots"]
    while n:
        chain.append((n[0]["name"], n[0]["calls"]))
        n = n[0].get("children")
    want = [("main", 0)] + [("deep", 0)] * (depth + 1) + [("leaf", leaf - 3000)]
    say(len(t["roots"]) == 1 and chain == want, f"profile: main thread's tree: main > deep x {depth + 1} > leaf",
        str(chain[:3]) + "..." + str(chain[-3:]))
    check_invariants(["main", "deep", "leaf", "napper"], data="profile.data", label="(profile)")
else:
    c = collections.Counter((x["name"], bool(x.get("resumed"))) for x in json.load(open("trace.replay.json"))["calls"])
    want = {("leaf", False): leaf, ("deep", True): depth + 1, ("main", True): 1, ("napper", True): 1}
    say(dict(c) == want, "trace: replay: the running calls flagged resumed, the others not", str(dict(c)))
done()
PY
done

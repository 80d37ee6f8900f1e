#!/usr/bin/env bash
# attach_locks.sh — `sonde record --locks -p PID` on a running program built
# with plain gcc (tests/progs/attach_locks.c and its library
# attach_locks_lib.c).  The program takes a lock and gets a thread blocked
# on it before the attach, then waits on a FIFO; sonde attaches while it
# waits, it is released: the lock is released (after the attach), 4 threads
# make 50000 lock/unlock pairs each on hot_lock, a library is dlopen'ed (by
# bare name, found through the program's DT_RUNPATH) and makes its own lock
# calls; the program prints its own counts.  sonde is stopped with SIGINT,
# the program runs its work again (after sonde ended) and exits.
# Checks: sonde's acquisitions equal the program's counts; the releases of
# holds taken before the attach are unmatched, and nothing is negative;
# output and exit status equal an unattached run's; the program's GOT entry
# is sonde's while attached and libc's after (the program checks it itself).
# Then --duration, the process's end, SIGKILL of sonde mid-work (5 rounds),
# a second attach (it records), and the errors.  Needs ptrace of a non-child: root, or
# kernel.yama.ptrace_scope 0.
source "$ROOT/tests/lib.sh"

source "$ROOT/tests/attach_lib.sh"
need_ptrace "attach locks"
ATTACH_PROG=./al
gcc -O2 -pthread -o al "$PROGS/attach_locks.c" -Wl,-rpath,'$ORIGIN' -ldl || { notok build "gcc attach_locks"; exit 0; }
gcc -O2 -shared -fPIC -Wl,-z,relro,-z,now -o libattach_locks.so "$PROGS/attach_locks_lib.c" ||
	{ notok build "gcc attach_locks_lib"; exit 0; }

reference_run 3
check "reference run: its GOT entry is libc's" grep -qx "phase 1 got libc" ref.perr

# ---- attached ----
start att
record_attached "att" --locks || notok "attach" "sonde did not start: $(cat att.err)"
check "while recording, the agent's watcher thread runs" agent_running "$pid"
echo go >&3
wait_for att.out "^phase 1"
kill -INT $sp
wait $sp
rc=$?
check "sonde ends on SIGINT with status 0" test $rc -eq 0
check "the program still runs after sonde ended" kill -0 "$pid"
check "the agent has ended (its watcher thread is gone)" agent_ended "$pid"
finish
check "output and exit status equal the unattached run's (later lock calls work)" cmp -s ref.out att.out
check "while attached, the program's GOT entry of pthread_mutex_lock was redirected" grep -qx "phase 1 got redirected" att.perr
check "after sonde ended, it is libc's again" grep -qx "phase 2 got libc" att.perr
check "a child forked while attached has libc's at once (it is not recorded)" grep -qx "phase 1 child got libc" att.perr
"$SONDE" info -i att.data > info.txt 2>&1
check "sonde info says the recording was attached" grep -q "^attached: *to running process $pid at [0-9T:-]*Z (sonde record -p; ended: detached" info.txt
check "sonde info says releases of locks taken before the attach are unmatched" \
	grep -q "^attached: .*; releases of locks taken before it are unmatched)" info.txt
"$SONDE" report -i att.data --format=json > rep.json 2> rep.err
check "sonde report reads the recording" test -s rep.json
"$SONDE" locks -i att.data --format=json > locks.json 2> locks.err
python3 - "$pid" <<'PY'
import json, re, sys
pid = int(sys.argv[1])
out = open("att.out").read()
m = re.search(r"phase 1: hot_lock (\d+) lib_lock (\d+)", out)
w = re.search(r"the waiter took it (\d+) more times", out)
ok = lambda c, n, why="": print(("ok - " if c else "not ok - ") + n + ("" if c else ": " + why))
ok(bool(m and w), "the program printed its own counts")
hot, lib, rounds = (int(m.group(1)), int(m.group(2)), int(w.group(1))) if m and w else (-1, -1, -1)
d = json.load(open("locks.json"))
L = {l["name"]: l for l in d["locks"] if l["pid"] == pid}
ok(len(L) == len(d["locks"]), "only the attached process's locks", str([(l["name"], l["pid"]) for l in d["locks"]]))
def acq(n): return L.get(n, {}).get("acquisitions")
ok(hot == 4 * 50000, "the program made 4 x 50000 pairs on hot_lock", str(hot))
ok(acq("hot_lock") == hot, f"hot_lock: {hot} acquisitions, as the program counted", f"sonde says {acq('hot_lock')}")
ok(L.get("hot_lock", {}).get("releases") == hot, "hot_lock: as many releases, none unmatched",
   str(L.get("hot_lock")))
ok(acq("lib_lock") == lib, f"lib_lock (library dlopen'ed after the attach): {lib} acquisitions, as counted",
   f"sonde says {acq('lib_lock')}")
h = L.get("held_lock", {})
# Two holds began before the attach: main's (released after it) and the
# waiter's first (it was blocked in the kernel at the attach).
ok(h.get("acquisitions") == rounds, f"held_lock: {rounds} acquisitions seen (the ones after the attach)", str(h))
ok(h.get("unmatched_releases") == 2 and h.get("releases") == rounds + 2,
   "held_lock: the 2 releases of holds taken before the attach are unmatched", str(h))
neg = []
def walk(x, path):
    if isinstance(x, dict):
        for k, v in x.items(): walk(v, path + "." + k)
    elif isinstance(x, list):
        for i, v in enumerate(x): walk(v, path + f"[{i}]")
    elif isinstance(x, (int, float)) and not isinstance(x, bool) and x < 0:
        neg.append(path)
walk(d, "")
ok(not neg, "no negative value in the lock profile (holds and waits across the attach)", ", ".join(neg[:5]))
ok(d["lost_events"] == 0 and d["untracked_locks"] == 0, "nothing lost", str(d["lost_events"]))
PY

# ---- the other two ends: --duration, and the process's own end ----
start dur
record_attached "dur" --locks --duration 0.5 || true
t0=$(date +%s%N)
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
check "--duration: the GOT entry is libc's in both phases" \
	bash -c "grep -qx 'phase 1 got libc' dur.perr && grep -qx 'phase 2 got libc' dur.perr"

start ends
record_attached "ends" --locks || true
ended_with_program ends
"$SONDE" locks -i ends.data --format=json > ends.json 2>&1
check "the process's end: both phases recorded (hot_lock: the sum of the printed counts)" \
	python3 -c "import json,re,sys
own=sum(int(m.group(1)) for m in re.finditer(r'hot_lock (\d+)', open('ends.out').read()))
L={l['name']:l['acquisitions'] for l in json.load(open('ends.json'))['locks']}
sys.exit(0 if own == 400000 and L.get('hot_lock')==own else 1)"

# ---- a second attach: records again (tests/e2e/attach_again.sh has the counts) ----
start twice
"$SONDE" record --locks -p "$pid" -o t1.data --duration 0.2 2> t1.err
"$SONDE" record --locks -p "$pid" -o t2.data --duration 0.2 2> t2.err
rc=$?
check "a second attach: exit 0" test $rc -eq 0
check "a second attach: it records" grep -q "^sonde: recording process $pid" t2.err
echo go >&3
finish
check "after two attaches: output and status unchanged" cmp -s ref.out twice.out

# ---- SIGKILL of sonde while attached, in the middle of the work ----
run_plain kref 5000000
for round in 1 2 3 4 5; do
	start "k$round" 5000000
	record_attached "k$round" --locks || true
	echo go >&3
	sleep 0.$round
	grep -q "^phase 1" "k$round.out" && early=0 || early=1
	kill -KILL $sp
	wait $sp 2>/dev/null
	check "round $round: sonde was killed in the middle of the work (4 x 5000000 pairs)" test $early -eq 1
	check "round $round: the agent saw sonde die and ended" agent_ended "$pid"
	wait_for "k$round.out" "^phase 1" || true
	finish
	check "round $round: SIGKILL of sonde mid-work: same output and status" cmp -s kref.out "k$round.out"
	check "round $round: the GOT entry is libc's again after it" grep -qx "phase 2 got libc" "k$round.perr"
done

# ---- errors ----
true & gone=$!
wait $gone
"$SONDE" record --locks -p $gone -o gone.data 2> gone.err
rc=$?
check "no such process: exit 2" test $rc -eq 2
check "no such process: one clear line" grep -qx "sonde: error: cannot attach to process $gone (no such process)" gone.err
if gcc -static -O2 -o static -x c - <<< '#include <unistd.h>
int main(void){for(int i=0;i<600;i++)sleep(1);return 0;}' 2>/dev/null; then
	./static & st=$!
	sleep 0.2
	"$SONDE" record --locks -p $st -o st.data 2> st.err
	rc=$?
	kill -0 $st 2>/dev/null && alive=1 || alive=0
	kill $st; wait $st 2>/dev/null
	check "static binary: exit 2" test $rc -eq 2
	check "static binary: says there is no dlopen" grep -q "^sonde: error: no dlopen in process $st (no dynamic C library is mapped" st.err
	check "static binary: the process still runs" test $alive -eq 1
else
	skip "static binary" "no static C library to link one (libc6-dev's libc.a)"
fi
sleep 600 & sl=$!
"$SONDE" record --locks=events -p $sl -o ev.data 2> ev.err
rc=$?
kill $sl; wait $sl 2>/dev/null
check "--locks=events -p: a usage error (exit 1), said clearly" \
	bash -c "test $rc -eq 1 && grep -q '^sonde: error: record -p does not stream lock events yet' ev.err"

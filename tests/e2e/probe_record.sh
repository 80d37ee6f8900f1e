#!/usr/bin/env bash
# probe_record.sh — sonde probe -o DIR --record on programs built with plain
# gcc -O2 -g: the hits go into a sonde recording that `sonde info` describes
# and `sonde export` puts on the timeline (Chrome JSON and Perfetto protobuf,
# decoded below): one slice per call of the func probe, one instant per hit
# of the var probe with the variable's value, per-thread tracks, time stamps
# in order; `sonde report` says there is no function profile; damaged
# recordings give the reader's clean errors.
source "$ROOT/tests/lib.sh"

src="$PROGS/probe_loop.c"
gcc -O2 -g -o loop "$src" || { notok build "gcc failed"; exit 0; }
gcc -O2 -g -o threads "$PROGS/probe_threads.c" -lpthread || { notok build "gcc failed"; exit 0; }
L_VAR=$(grep -n MARK_VAR "$src" | head -1 | cut -d: -f1)

# The same checks on both engines: the agent (the default: the program
# writes its hits into rings sonde drains) and ptrace; the expected values
# are the program's own.
engine_checks() {
	ENG=$1
	EOPT=--engine=$1
	mkdir -p "$ENG" && cd "$ENG" || return
	../loop > plain.out
	"$SONDE" probe $EOPT -o rec --record -e func:work -e "var:probe_loop.c:$L_VAR:v" -- ../loop > probed.out 2> probed.err
	rc=$?
	check "$ENG: probe --record exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || cat probed.err
	check "$ENG: program output unchanged" cmp -s plain.out probed.out
	check "$ENG: summary table still printed (on stderr)" grep -q "func:work" probed.err
	check "$ENG: recording written" test -s rec/profile.sonde -a -s rec/events.sonde

	"$SONDE" info -i rec --format=json > info.json 2> info.err
	check "$ENG: info --format=json" test -s info.json
	check "$ENG: info: mode probes, holds probe hits" jq_py info.json \
		"assert d['mode']=='probes' and d['has_probe_hits'] and d['probe_records']==3000, d"
	check "$ENG: info: both probes with their specs and hit counts" jq_py info.json \
		"p=d['probes']; assert [(x['id'],x['spec'],x['kind'],x['hits']) for x in p]==[(1,'func:work','func',1000),(2,'var:probe_loop.c:$L_VAR:v','var',1000)], p"
	check "$ENG: info: one thread of the process" jq_py info.json \
		"assert len(d['threads'])==1 and d['threads'][0]['tid']==d['processes'][0]['pid'] and d['exit_status']==0, d"
	"$SONDE" info -i rec > info.txt 2>&1
	check "$ENG: info (table) says it holds probe hits" grep -q "^probe hits: *3000 events of 2 probes" info.txt

	"$SONDE" report -i rec > report.out 2> report.err
	rc=$?
	check "$ENG: report: exit 2 on a probe recording" test "$rc" -eq 2
	check "$ENG: report: says there is no function profile" grep -q "holds dynamic-probe hits.*not a function profile" report.err

	check "$ENG: chrome export" "$SONDE" export -i rec --format=chrome -o rec.json
	check "$ENG: perfetto export" "$SONDE" export -i rec --format=perfetto -o rec.pftrace

	# A multi-threaded program: four threads each call work() 200 times.
	"$SONDE" probe $EOPT -o trec --record -e func:work -- ../threads 4 200 0 > tprobed.out 2> tprobed.err
	check "$ENG: multi-threaded probe --record exits 0" test $? -eq 0
	check "$ENG: multi-threaded: info has the program's exit status and 4 threads" jq_py <("$SONDE" info -i trec --format=json) \
		"assert d['exit_status']==3 and len(d['threads'])==4 and d['probes'][0]['hits']==800, d"
	check "$ENG: multi-threaded chrome export" "$SONDE" export -i trec --format=chrome -o trec.json
	check "$ENG: multi-threaded perfetto export" "$SONDE" export -i trec --format=perfetto -o trec.pftrace

	python3 - "$L_VAR" "$ENG" <<-'PY'
	import json, sys, collections, struct
	fails = 0
	ENG = sys.argv[2]
	def say(ok, name, why=""):
	    name = f"{ENG}: {name}"
	    print(f"ok - {name}" if ok else f"not ok - {name}: {why}", flush=True)
	L = sys.argv[1]
	VAR = f"var:probe_loop.c:{L}:v"
	# Known behaviour of the program (not sonde's output): i = 0..999, work(i) once
	# per iteration, v = work(i) = 3i+1.
	expect_vals = [3 * i + 1 for i in range(1000)]

	# ---- Chrome ----
	d = json.load(open("rec.json"))
	ev = [e for e in d["traceEvents"] if e.get("cat") == "probe"]
	X = [e for e in ev if e["ph"] == "X" and e.get("cat") != "sched"]  # not the state tracks
	I = [e for e in ev if e["ph"] == "i"]
	say(len(X) == 1000 and all(e["name"] == "func:work" for e in X), "chrome: one slice per call of the func probe",
	    f"{len(X)} slices")
	say(all(e["dur"] >= 0 for e in X), "chrome: slices have durations", "")
	vals = [e["args"]["value"] for e in I if e["name"] == VAR]
	say(len(I) == 1000 and len(vals) == 1000, "chrome: one instant per var probe hit", f"{len(I)} instants")
	say(vals == expect_vals, "chrome: var probe values are the program's values, in order", str(vals[:5]))
	tids = {e["tid"] for e in ev}
	say(len(tids) == 1, "chrome: hits on the program's thread track", str(tids))
	ts = [e["ts"] for e in sorted(ev, key=lambda e: e["ts"])]
	its = [e["ts"] for e in I]
	say(all(a <= b for a, b in zip(its, its[1:])), "chrome: instant time stamps non-decreasing", "")
	# each work() call happens before the var probe of its iteration
	say(all(x["ts"] + x["dur"] <= i["ts"] + 1e-3 for x, i in zip(sorted(X, key=lambda e: e["ts"]), I)),
	    "chrome: each call ends before its iteration's var hit", "")
	say(d["otherData"]["sequence_gaps"] == 0 and d["otherData"]["probe_records"] == 3000,
	    "chrome: all probe records decoded, no sequence gap", str(d["otherData"]))

	# ---- Perfetto (decoded by tests/protobuf_read.py) ----
	import os as _os, sys as _sys
	_sys.path.insert(0, _os.environ["ROOT"] + "/tests")
	from protobuf_read import perfetto_read
	def perfetto(path):
	    P = perfetto_read(path)
	    return {u: t["tid"] for u, t in P["tracks"].items() if "tid" in t}, P["events"]
	try:
	    tracks, evs = perfetto("rec.pftrace")
	    ok = True
	except Exception as e:
	    tracks, evs, ok = {}, [], False
	say(ok and len(tracks) == 1, "perfetto: decodes, one thread track", str(tracks))
	inst = [e for e in evs if e[1] == 3]
	beg = [e for e in evs if e[1] == 1]
	end = [e for e in evs if e[1] == 2]
	say(len(inst) == 1000 and all(e[2] == VAR for e in inst), "perfetto: one TYPE_INSTANT per var probe hit",
	    f"{len(inst)}")
	say([e[4].get("value") for e in inst] == expect_vals, "perfetto: var values as debug annotations", "")
	say(all(e[4].get("probe") == 2 for e in inst), "perfetto: instants carry the probe id", "")
	say(len(beg) == 1000 and len(end) == 1000 and all(e[2] == "func:work" for e in beg),
	    "perfetto: one begin/end slice per call of the func probe", f"{len(beg)} begins, {len(end)} ends")
	say(all(e[0] in tracks for e in evs), "perfetto: events on the thread's track", "")
	pts = [e[3] for e in evs if e[1] in (1, 2, 3)]
	say(all(a <= b for a, b in zip(pts, pts[1:])), "perfetto: time stamps non-decreasing on the thread", "")
	depth, okn = 0, True
	for e in evs:
	    depth += 1 if e[1] == 1 else -1 if e[1] == 2 else 0
	    okn = okn and depth in (0, 1)
	say(okn and depth == 0, "perfetto: slices balanced", str(depth))

	# ---- multi-threaded ----
	d = json.load(open("trec.json"))
	X = [e for e in d["traceEvents"] if e.get("cat") == "probe" and e["ph"] == "X"]
	per = collections.Counter(e["tid"] for e in X)
	say(len(per) == 4 and set(per.values()) == {200}, "threads chrome: 200 slices on each of the 4 worker threads",
	    str(per))
	mono = all(all(a <= b for a, b in zip(t, t[1:]))
	           for t in ([e["ts"] for e in X if e["tid"] == tid] for tid in per))
	say(mono, "threads chrome: time stamps non-decreasing per thread", "")
	tracks, evs = perfetto("trec.pftrace")
	byt = collections.defaultdict(list)
	for e in evs:
	    byt[e[0]].append(e)
	say(sorted(len([e for e in v if e[1] == 1]) for v in byt.values()) == [200] * 4,
	    "threads perfetto: 200 slices on each thread track", str({k: len(v) for k, v in byt.items()}))
	say(all(tracks.get(k) for k in byt), "threads perfetto: every event on a named thread track", "")
	say(all(all(a[3] <= b[3] for a, b in zip(v, v[1:])) for v in byt.values()),
	    "threads perfetto: time stamps non-decreasing per thread", "")
	PY
	cd ..
}
engine_checks agent
engine_checks ptrace

# ---- the other kinds, on both engines: line, branch, assert (its values at
# a failure), time (the interval from the previous time probe) ----
L_RIP=$(grep -n MARK_RIP "$src" | head -1 | cut -d: -f1)
L_BR=$(grep -n MARK_BRANCH "$src" | head -1 | cut -d: -f1)
for eng in agent ptrace; do
	"$SONDE" probe --engine=$eng -o "k$eng" --record -e "line:probe_loop.c:$L_RIP" -e "branch:probe_loop.c:$L_BR" \
		-e "assert:probe_loop.c:$L_VAR:v % 2 == 1" -e "time:probe_loop.c:$L_RIP" -e "time:probe_loop.c:$L_VAR" \
		-- ./loop 300 > "k$eng.out" 2> "k$eng.err"
	check "$eng: kinds: probe --record exits 0" test $? -eq 0
	check "$eng: kinds: chrome export" "$SONDE" export -i "k$eng" --format=chrome -o "k$eng.json"
done
python3 - "$L_VAR" "$L_RIP" "$L_BR" <<'PY'
import json, sys, collections
L, LR, LB = sys.argv[1:4]
def say(ok, name, why=""):
    print(f"ok - {name}" if ok else f"not ok - {name}: {why}", flush=True)
# The program: i = 0..299, v = 3i+1 (odd for even i), note(i) when i % 3 == 0.
A = f"assert:probe_loop.c:{L}:v % 2 == 1"
expect_assert = ["pass" if i % 2 == 0 else f"fail: v={3 * i + 1}" for i in range(300)]
seqs = {}
for eng in ("agent", "ptrace"):
    try:
        ev = [e for e in json.load(open(f"k{eng}.json"))["traceEvents"] if e.get("cat") == "probe"]
    except Exception as e:
        ev = []
    by = collections.defaultdict(list)
    for e in ev:
        by[e["name"]].append(e.get("args", {}).get("value"))
    say(len(by[f"line:probe_loop.c:{LR}"]) == 300, f"{eng}: kinds: one instant per line hit",
        str(len(by[f"line:probe_loop.c:{LR}"])))
    br = collections.Counter(by[f"branch:probe_loop.c:{LB}"])
    say(sorted(br.values()) == [100, 200] and set(br) == {"taken", "not_taken"},
        f"{eng}: kinds: branch instants taken / not_taken as i % 3 says", str(br))
    say(by[A] == expect_assert, f"{eng}: kinds: assert pass / fail with the values, in order", str(by[A][:4]))
    t1, t2 = by[f"time:probe_loop.c:{LR}"], by[f"time:probe_loop.c:{L}"]
    say(len(t1) == 300 and all(v is None for v in t1), f"{eng}: kinds: first time probe: instants, no interval",
        str(t1[:3]))
    say(len(t2) == 300 and all(isinstance(v, int) and v >= 0 for v in t2),
        f"{eng}: kinds: second time probe: an interval (ns) at each hit", str(t2[:3]))
    seqs[eng] = [(e["name"], e["ph"], e.get("args", {}).get("value") if not e["name"].startswith("time:") else
                  e.get("args", {}).get("value") is None) for e in ev]
say(seqs["agent"] == seqs["ptrace"], "kinds: agent and ptrace record the same events in the same order",
    f"{len(seqs['agent'])} vs {len(seqs['ptrace'])}")
PY

# ---- a plugin probe (ABI 2: its handlers in the program on the agent) and a
# func probe at the same site, recorded on both engines: an instant per hit ----
if cc -shared -fPIC -I"$ROOT/include" -o plug2.so "$PROGS/probe_plugin2.c"; then
	for eng in agent ptrace; do
		"$SONDE" probe --engine=$eng --plugin ./plug2.so -o "pl$eng" --record -e "plugin:work:3" -e func:work \
			-- ./loop 100 > /dev/null 2> "pl$eng.err"
		check "$eng: plugin --record exits 0" test $? -eq 0
		"$SONDE" export -i "pl$eng" --format=chrome -o "pl$eng.json"
		check "$eng: plugin: 100 instants and 100 slices of work()" jq_py "pl$eng.json" "
import collections
c = collections.Counter((e['name'], e['ph']) for e in d['traceEvents'] if e.get('cat') == 'probe')
assert c == {('plugin:work:3', 'i'): 100, ('func:work', 'X'): 100}, c"
	done
else
	notok "plugin: build" "cc failed"
fi

# ---- attached (-p) on the agent, until --duration: 2 events per counted call ----
./threads 2 400 0 > at.plain
./threads 2 400 5000 at.pid > at.out &
runner=$!
for _ in $(seq 200); do [ -s at.pid ] && break; sleep 0.02; done
"$SONDE" probe -p "$(cat at.pid)" --duration 0.5 -o arec --record -e func:work > /dev/null 2> at.err
check "attached: probe --record exits 0" test $? -eq 0
wait "$runner"
check "attached: the program's output unchanged" cmp -s at.plain at.out
check "attached: a slice per counted call (a call in flight at the end may be only begun)" jq_py \
	<("$SONDE" info -i arec --format=json) \
	"h = d['probes'][0]['hits']; assert h > 0 and 2 * h - 2 <= d['probe_records'] <= 2 * h, d"

# ---- 8 threads x 20000 calls on the agent: every call's slice is there ----
./threads 8 20000 0 > t8plain.out
"$SONDE" probe -o t8 --record -e func:work -- ./threads 8 20000 0 > t8.out 2> t8.err
check "8 threads: probe --record exits 0" test $? -eq 0
check "8 threads: program output unchanged" cmp -s t8plain.out t8.out
"$SONDE" info -i t8 --format=json > t8info.json
check "8 threads: info: 8 threads, exit status 3, 2 events per call, nothing lost" jq_py t8info.json \
	"assert d['exit_status']==3 and len(d['threads'])==8 and d['probe_records']==2*8*20000 and not d['lost'], d"
check "8 threads: perfetto export" "$SONDE" export -i t8 --format=perfetto -o t8.pftrace
python3 - <<'PY'
import os, sys, collections
sys.path.insert(0, os.environ["ROOT"] + "/tests")
from protobuf_read import perfetto_read
P = perfetto_read("t8.pftrace")
beg, end = collections.Counter(), collections.Counter()
for e in P["events"]:
    (beg if e[1] == 1 else end if e[1] == 2 else collections.Counter())[e[0]] += 1
ok = len(beg) == 8 and set(beg.values()) == {20000} and beg == end
print(("ok - " if ok else "not ok - ") + "8 threads: 20000 begin/end slices on each of the 8 thread tracks"
      + ("" if ok else f": {dict(beg)} {dict(end)}"))
PY

# ---- sonde slower than the program: the agent drops and counts, the
# program never waits.  sonde is stopped (SIGSTOP) while one thread makes
# 3M calls (6M events, a ring holds 65536): recorded + lost = 2 per call ----
./threads 1 3000000 0 > fplain.out
"$SONDE" probe -o fl --record -e func:work -- ./threads 1 3000000 0 > fl.out 2> fl.err &
sonde_pid=$!
sleep 0.3
kill -STOP "$sonde_pid"
sleep 1
kill -CONT "$sonde_pid"
wait "$sonde_pid"
check "overflow: probe --record exits 0" test $? -eq 0
check "overflow: program output unchanged" cmp -s fplain.out fl.out
"$SONDE" info -i fl --format=json > flinfo.json
check "overflow: recorded + lost events = 2 per call" jq_py flinfo.json \
	"assert d['probe_records'] + d['lost'].get('ring_events_dropped', 0) == 2 * 3000000, d"
if jq_py flinfo.json "assert d['lost'].get('ring_events_dropped', 0) > 0" 2>/dev/null; then
	check "overflow: stderr says events were not recorded" grep -q "probe events were not recorded" fl.err
else
	skip "overflow: loss reported" "the program was done before sonde stopped (no event lost)"
fi

# ---- SIGKILL of sonde while recording: the program finishes normally ----
./threads 4 300000 0 > kplain.out
for r in 1 2 3; do
	sigkill_launched "sigkill $r while recording: program finished with its normal output" "kr$r.out" 0.$((r * 2)) total \
		kplain.out -- -o "kr$r" --record -e func:work \
		-e "line:probe_threads.c:$(grep -n MARK_WORK "$PROGS/probe_threads.c" | cut -d: -f1)" -- ./threads 4 300000 0
done

cd agent || exit 0

# ---- damaged recordings: the reader's errors, exit 2, no crash ----
cp -r rec bad1; python3 -c "
import os; p='bad1/events.sonde'; n=os.path.getsize(p); os.truncate(p, n - 100)"
"$SONDE" export -i bad1 --format=chrome -o /dev/null 2> bad1.err
rc=$?
check "truncated events: exit 2" test "$rc" -eq 2
check "truncated events: says truncated" grep -q "events.sonde: truncated at byte" bad1.err
cp -r rec bad2; python3 -c "
p='bad2/events.sonde'; b=bytearray(open(p,'rb').read()); b[200]^=0xff; open(p,'wb').write(b)"
"$SONDE" export -i bad2 --format=perfetto -o /dev/null 2> bad2.err
rc=$?
check "damaged events: exit 2" test "$rc" -eq 2
check "damaged events: checksum mismatch reported" grep -q "damaged record at byte .*checksum" bad2.err
cp -r rec bad3; python3 -c "
import os; p='bad3/profile.sonde'; n=os.path.getsize(p); os.truncate(p, n - 20)"
"$SONDE" info -i bad3 > /dev/null 2> bad3.err
rc=$?
check "truncated profile: exit 2" test "$rc" -eq 2
check "truncated profile: says truncated" grep -q "profile.sonde: truncated at byte" bad3.err

# ---- usage ----
"$SONDE" probe --record -e func:work -- ../loop > /dev/null 2> noout.err
rc=$?
check "--record without -o: usage error" test "$rc" -eq 1
check "--record without -o: says -o DIR" grep -q "needs -o DIR" noout.err
mkdir foreign; echo x > foreign/notes.txt
"$SONDE" probe -o foreign --record -e func:work -- ../loop > /dev/null 2> foreign.err
check "--record into a foreign directory refused" test $? -ne 0
check "foreign directory untouched" test -f foreign/notes.txt -a ! -e foreign/events.sonde
# A previous recording directory is reused.
"$SONDE" probe -o rec --record -e func:work -- ../loop 10 > /dev/null 2>&1
check "re-recording into a recording directory" jq_py <("$SONDE" info -i rec --format=json) \
	"assert d['probe_records']==20 and d['probes'][0]['hits']==10, d"

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

./loop > plain.out
"$SONDE" probe -o rec --record -e func:work -e "var:probe_loop.c:$L_VAR:v" -- ./loop > probed.out 2> probed.err
rc=$?
check "probe --record exits 0" test "$rc" -eq 0
[ "$rc" -eq 0 ] || cat probed.err
check "program output unchanged" cmp -s plain.out probed.out
check "summary table still printed (on stderr)" grep -q "func:work" probed.err
check "recording written" test -s rec/profile.sonde -a -s rec/events.sonde

"$SONDE" info -i rec --format=json > info.json 2> info.err
check "info --format=json" test -s info.json
check "info: mode probes, holds probe hits" jq_py info.json \
	"assert d['mode']=='probes' and d['has_probe_hits'] and d['probe_records']==3000, d"
check "info: both probes with their specs and hit counts" jq_py info.json \
	"p=d['probes']; assert [(x['id'],x['spec'],x['kind'],x['hits']) for x in p]==[(1,'func:work','func',1000),(2,'var:probe_loop.c:$L_VAR:v','var',1000)], p"
check "info: one thread of the process" jq_py info.json \
	"assert len(d['threads'])==1 and d['threads'][0]['tid']==d['processes'][0]['pid'] and d['exit_status']==0, d"
"$SONDE" info -i rec > info.txt 2>&1
check "info (table) says it holds probe hits" grep -q "^probe hits: *3000 events of 2 probes" info.txt

"$SONDE" report -i rec > report.out 2> report.err
rc=$?
check "report: exit 2 on a probe recording" test "$rc" -eq 2
check "report: says there is no function profile" grep -q "holds dynamic-probe hits.*not a function profile" report.err

check "chrome export" "$SONDE" export -i rec --format=chrome -o rec.json
check "perfetto export" "$SONDE" export -i rec --format=perfetto -o rec.pftrace

# A multi-threaded program: four threads each call work() 200 times.
"$SONDE" probe -o trec --record -e func:work -- ./threads 4 200 0 > tprobed.out 2> tprobed.err
check "multi-threaded probe --record exits 0" test $? -eq 0
check "multi-threaded: info has the program's exit status and 4 threads" jq_py <("$SONDE" info -i trec --format=json) \
	"assert d['exit_status']==3 and len(d['threads'])==4 and d['probes'][0]['hits']==800, d"
check "multi-threaded chrome export" "$SONDE" export -i trec --format=chrome -o trec.json
check "multi-threaded perfetto export" "$SONDE" export -i trec --format=perfetto -o trec.pftrace

python3 - "$L_VAR" <<'PY'
import json, sys, collections, struct
fails = 0
def say(ok, name, why=""):
    print(f"ok - {name}" if ok else f"not ok - {name}: {why}", flush=True)
L = sys.argv[1]
VAR = f"var:probe_loop.c:{L}:v"
# Known behaviour of the program (not sonde's output): i = 0..999, work(i) once
# per iteration, v = work(i) = 3i+1.
expect_vals = [3 * i + 1 for i in range(1000)]

# ---- Chrome ----
d = json.load(open("rec.json"))
ev = [e for e in d["traceEvents"] if e.get("cat") == "probe"]
X = [e for e in ev if e["ph"] == "X"]
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
"$SONDE" probe --record -e func:work -- ./loop > /dev/null 2> noout.err
rc=$?
check "--record without -o: usage error" test "$rc" -eq 1
check "--record without -o: says -o DIR" grep -q "needs -o DIR" noout.err
mkdir foreign; echo x > foreign/notes.txt
"$SONDE" probe -o foreign --record -e func:work -- ./loop > /dev/null 2> foreign.err
check "--record into a foreign directory refused" test $? -ne 0
check "foreign directory untouched" test -f foreign/notes.txt -a ! -e foreign/events.sonde
# A previous recording directory is reused.
"$SONDE" probe -o rec --record -e func:work -- ./loop 10 > /dev/null 2>&1
check "re-recording into a recording directory" jq_py <("$SONDE" info -i rec --format=json) \
	"assert d['probe_records']==20 and d['probes'][0]['hits']==10, d"

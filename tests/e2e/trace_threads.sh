# Timeline of a five-thread program with known call counts (tests/progs/trace_threads.c):
# the Chrome export holds exactly one slice per call, nested per thread, one track per
# thread with its pthread_setname_np name; the Perfetto export decodes (a small protobuf
# reader below) and holds the same slices; replay and report agree; trace-mode call
# counts equal profile-mode call counts.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O1 -g "$PROGS/trace_threads.c" -o trace_threads -lpthread || { notok build "sonde-cc failed"; exit 1; }
out=$("$SONDE" record --trace -o tr -- ./trace_threads 2>rec.err)
check "program output unchanged" test "$out" = "$(./trace_threads)"
check "chrome export" "$SONDE" export -i tr --format=chrome -o trace.json
check "perfetto export" "$SONDE" export -i tr --format=perfetto -o trace.pftrace
"$SONDE" replay -i tr >replay.txt 2>replay.err; check "replay runs" test -s replay.txt
"$SONDE" record -o prof -- ./trace_threads >/dev/null 2>&1
"$SONDE" report -i prof --format=json >prof.json 2>/dev/null
"$SONDE" report -i tr --format=json >trrep.json 2>/dev/null
python3 - <<'PY'
import json, collections, re
fails = 0
def say(ok, name, why=""):
    global fails
    print(f"ok - {name}" if ok else f"not ok - {name}: {why}", flush=True)
    fails += 0 if ok else 1

# Known behaviour of the program (not sonde's output):
expect = {"main": {"main": 1, "spawn": 1, "mid": 5, "leaf": 10}}
for k in range(1, 5):
    expect[f"worker-{k}"] = {"worker": 1, "mid": 10 * k, "leaf": 20 * k + k}

d = json.load(open("trace.json"))
ev = d["traceEvents"]
# the threads' own tracks (not their "TID state" tracks: cpu_split.sh)
names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name" and
         not e["args"]["name"].endswith(" state")}
X = [e for e in ev if e["ph"] == "X" and e.get("cat") != "sched"]  # not the state tracks (cpu_split.sh)
tids = sorted({e["tid"] for e in X})
say(len(tids) == 5, "five threads have slices", str(tids))
say(len(set(names)) == 5 and set(tids) <= set(names), "every thread has its own named track", str(names))
workers = sorted(v for v in names.values() if v.startswith("worker-"))
say(workers == [f"worker-{k}" for k in range(1, 5)], "worker tracks named by pthread_setname_np", str(workers))
def label(tid):
    n = names.get(tid, "")
    return n if n.startswith("worker-") else "main"
got = collections.defaultdict(collections.Counter)
for e in X:
    got[label(e["tid"])][e["name"]] += 1
for t, calls in expect.items():
    say(dict(got[t]) == calls, f"chrome: one slice per call on {t}", f"got {dict(got[t])}, expected {calls}")
# Nesting per thread: sort by start, longer first; each slice inside the open one.
bad = 0
for tid in tids:
    s = sorted((e for e in X if e["tid"] == tid), key=lambda e: (e["ts"], -e["dur"]))
    stack = []
    for e in s:
        b, en = e["ts"], e["ts"] + e["dur"]
        while stack and stack[-1] <= b + 1e-6 and not (stack[-1] >= en - 1e-6):
            stack.pop()
        if stack and en > stack[-1] + 0.0015:
            bad += 1
        stack.append(en)
say(bad == 0, "chrome: slices nest per thread", f"{bad} slices overlap their parent's end")
# leaf always has mid or worker or main as the enclosing slice: depth structure via replay
rep = open("replay.txt").read()
say(rep.count("leaf();") == 220, "replay: 220 leaf calls as one-line calls", str(rep.count("leaf();")))
say(rep.count("mid() {") == 105 and rep.count("} /* mid */") == 105, "replay: 105 nested mid calls", "")

# ---- Perfetto (decoded by tests/protobuf_read.py) ----
import os as _os, sys as _sys
_sys.path.insert(0, _os.environ["ROOT"] + "/tests")
from protobuf_read import perfetto_read
try:
    P = perfetto_read("trace.pftrace")
except Exception as e:
    P = {"framing": False, "packets": 0, "first_flags": None, "tracks": {}, "slices": [], "unclosed": 0, "unopened": 0}
say(P["framing"] and P["packets"] > 0, "perfetto: framing decodes (Trace.packet only)", f"{P['packets']} packets")
first_flags = P["first_flags"]
tracks = {u: (t["tid"], t["thread_name"]) for u, t in P["tracks"].items() if "tid" in t}
slices = [(tracks[u][0], n, b, e) for u, n, b, e in P["slices"] if u in tracks]  # the threads' own tracks
say(first_flags == 1, "perfetto: first packet clears incremental state", str(first_flags))
say(len(tracks) == 5 and sorted(n for _, n in tracks.values() if n.startswith("worker-")) == workers,
    "perfetto: one named thread track per thread", str(tracks))
say(P["unclosed"] == 0 and P["unopened"] == 0, "perfetto: every begin has its end",
    f"{P['unclosed']} begins without end, {P['unopened']} ends without begin")
pc = collections.Counter((t, n) for t, n, _, _ in slices)
cc = collections.Counter((e["tid"], e["name"]) for e in X)
say(pc == cc, "perfetto: same slices as chrome (per thread and function)", f"{pc} vs {cc}")
ps = sorted((t, n, b) for t, n, b, _ in slices)
cs = sorted((e["tid"], e["name"], round(e["ts"] * 1000)) for e in X)
off = max((abs(a[2] - b[2]) for a, b in zip(ps, cs)), default=0)
say(len(ps) == len(cs) and off <= 2, "perfetto: same start times as chrome (within 2 ns)", f"max diff {off} ns")

# ---- report on a trace recording: same counts as profile mode ----
try:
    tr = {f["name"]: f["calls"] for f in json.load(open("trrep.json"))["functions"]}
    pr = {f["name"]: f["calls"] for f in json.load(open("prof.json"))["functions"]}
    total = collections.Counter()
    for c in expect.values(): total.update(c)
    say(tr == dict(total), "report of the trace: call counts as the program makes them", f"{tr}")
    say(tr == pr, "trace-mode call counts equal profile-mode call counts", f"{tr} vs {pr}")
except Exception as e:
    say(False, "report of the trace", repr(e))
PY

# Locks together with function tracing: a program built with sonde-cc and
# recorded with --locks --trace keeps lock events and call events in the same
# rings; both decode (sonde locks agrees with its aggregates), and the
# timeline exports draw the lock waits and holds: on each thread's "TID locks"
# track, exactly one hold slice per acquisition the program makes on that
# thread, each wait slice ending where its hold begins, holds inside the
# function that takes them, lock tracks properly nested, and the Perfetto file
# (decoded by a small protobuf reader) holding the same lock slices.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O2 -g -pthread "$PROGS/lock_basic.c" -o lock_basic || { notok build "sonde-cc failed"; exit 1; }
plain=$(./lock_basic 2>/dev/null)
out=$("$SONDE" record --locks --trace -o rec -- ./lock_basic 2>prog.err)
check "program output unchanged" test "$out" = "$plain"
"$SONDE" locks -i rec --format=json >locks.json 2>locks.err || { notok "sonde locks" "$(cat locks.err)"; exit 0; }
python3 - locks.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
L = {l["name"]: l for l in d["locks"]}
def say(ok, name, why=""):
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else f": {why}"))
say(L.get("hot_lock", {}).get("acquisitions") == 80000, "hot_lock 80000 acquisitions with --trace", str(L.get("hot_lock")))
say(L.get("table_lock", {}).get("read_acquisitions") == 9000, "rwlock reads with --trace")
ev = d["events"]
say(ev["present"] and ev["mismatched"] == 0 and ev["compared"] > 0 and not ev["error"],
    "lock events decoded among call events, identical to the aggregates", str(ev))
say(d["lost_events"] == 0, "no lost events", str(d["lost_events"]))
PY
check "chrome export reads a trace with lock events" "$SONDE" export -i rec --format=chrome -o trace.json
check "perfetto export reads a trace with lock events" "$SONDE" export -i rec --format=perfetto -o trace.pftrace
python3 - <<'PY'
import json, collections
def say(ok, name, why=""):
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else f": {why}"), flush=True)
# Known behaviour of tests/progs/lock_basic.c (not sonde's output): per thread,
# hot() takes hot_lock 20000 times, queue_user() the make_queue() mutex 1000
# times, reader() table_lock 3000 times (read), writer() 500 times, spinner()
# spin 5000 times, c11_worker() c11_lock 1000 times; main takes busy_lock 50 times.
per_func = {"hot": ("hot_lock", 20000, 4), "queue_user": ("make_queue (lock_basic.c:47)", 1000, 2),
            "reader": ("table_lock", 3000, 3), "writer": ("table_lock", 500, 1),
            "spinner": ("spin", 5000, 2), "c11_worker": ("c11_lock", 1000, 2)}
try:
    d = json.load(open("trace.json"))
except Exception as e:
    say(False, "chrome export is JSON", repr(e)); raise SystemExit
ev = d["traceEvents"]
names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
F = [e for e in ev if e["ph"] == "X" and e.get("cat") == "func"]
K = [e for e in ev if e["ph"] == "X" and e.get("cat") == "lock"]
funcs_of = collections.defaultdict(set)
for e in F:
    funcs_of[e["tid"]].add(e["name"])
# lock track -> real tid, by its name "TID locks"
lock_tracks = {t: int(n.split()[0]) for t, n in names.items() if n.split()[1:2] == ["locks"]}
say(K and all(e["tid"] in lock_tracks for e in K), "chrome: lock slices on named \"TID locks\" tracks",
    f"{len(K)} slices, tracks {sorted(set(e['tid'] for e in K))[:5]}")
say(all(e["args"]["tid"] == lock_tracks.get(e["tid"]) for e in K), "chrome: lock track names its thread", "")
holds = collections.defaultdict(collections.Counter)   # real tid -> name -> count
for e in K:
    if not e["name"].startswith("wait "):
        holds[lock_tracks.get(e["tid"])][e["name"]] += 1
for fn, (lock, n, threads) in per_func.items():
    tids = [t for t in funcs_of if fn in funcs_of[t]]
    got = [holds[t][lock] for t in tids]
    say(len(tids) == threads and got == [n] * threads,
        f"chrome: {n} '{lock}' hold slices on each of the {threads} {fn}() threads", f"threads {tids}, holds {got}")
main_tid = [t for t in funcs_of if "main" in funcs_of[t]]
say(len(main_tid) == 1 and holds[main_tid[0]]["busy_lock"] == 50, "chrome: 50 busy_lock holds on main",
    str([holds[t]["busy_lock"] for t in main_tid]))
say(sum(c["hot_lock"] for c in holds.values()) == 80000, "chrome: 80000 hot_lock holds in all",
    str(sum(c["hot_lock"] for c in holds.values())))
# wait slices: each ends where a hold of the same lock begins on the same track
ns = lambda us: round(us * 1000)
starts = collections.defaultdict(set)
for e in K:
    if not e["name"].startswith("wait "):
        starts[(e["tid"], e["name"])].add(ns(e["ts"]))
# (a semaphore has no hold: nobody owns it; its waits, drawn when sem_wait
# blocks, which load makes happen, end where nothing begins)
W = [e for e in K if e["name"].startswith("wait ") and e["args"].get("result") != "timeout" and e["args"].get("wait") != "condition"
     and e["args"].get("kind") != "semaphore"]
hw = [e for e in W if e["name"] == "wait hot_lock"]
say(len(hw) > 0, "chrome: contention on hot_lock drawn as wait slices", str(len(hw)))
bad = [e for e in W if not any(abs(ns(e["ts"] + e["dur"]) - s) <= 2 for s in
       (x for x in starts[(e["tid"], e["name"][5:])] if abs(x - ns(e["ts"] + e["dur"])) <= 2))]
say(not bad, "chrome: each wait slice ends where its hold slice begins", f"{len(bad)} of {len(W)}: {bad[:2]}")
# holds of hot_lock lie inside a hot() slice of their thread
hot_iv = collections.defaultdict(list)
for e in F:
    if e["name"] == "hot":
        hot_iv[e["tid"]].append((ns(e["ts"]), ns(e["ts"] + e["dur"])))
out = 0
for e in K:
    if e["name"] == "hot_lock":
        b, en = ns(e["ts"]), ns(e["ts"] + e["dur"])
        if not any(s - 2 <= b and en <= t + 2 for s, t in hot_iv[lock_tracks[e["tid"]]]):
            out += 1
say(out == 0, "chrome: hot_lock holds lie inside their thread's hot() slice", f"{out} outside")
# lock tracks nest properly
bad = 0
for tr in set(e["tid"] for e in K):
    stack = []
    for e in sorted((e for e in K if e["tid"] == tr), key=lambda e: (ns(e["ts"]), -ns(e["dur"]))):
        b, en = ns(e["ts"]), ns(e["ts"] + e["dur"])
        while stack and stack[-1] <= b + 2:   # touching (wait, then hold), within rounding
            stack.pop()
        if stack and en > stack[-1] + 2:
            bad += 1; print("#", e, stack[-1])
        stack.append(en)
say(bad == 0, "chrome: lock slices nest on their tracks", f"{bad} cross their parent's end")

# ---- Perfetto (decoded by tests/protobuf_read.py) ----
import os as _os, sys as _sys
_sys.path.insert(0, _os.environ["ROOT"] + "/tests")
from protobuf_read import perfetto_read
try:
    P = perfetto_read("trace.pftrace")
except Exception as e:
    P = {"packets": 0, "tracks": {}, "slices": []}
say(P["packets"] > 0, "perfetto: framing decodes", "")
thread_tid = {u: t["tid"] for u, t in P["tracks"].items() if "tid" in t}
# the threads' child tracks named "TID locks" (their "TID state" tracks: cpu_split.sh)
child = {u: (t["parent"], t["name"]) for u, t in P["tracks"].items()
         if "tid" not in t and "parent" in t and "name" in t and t["name"].endswith(" locks")}
pslices = P["slices"]
say(child and all(par in thread_tid and name == f"{thread_tid[par]} locks" for par, name in child.values()),
    "perfetto: lock tracks are children of their thread's track, named \"TID locks\"", str(list(child.values())[:3]))
PK = [(thread_tid.get(child[u][0]), n, b, e) for u, n, b, e in pslices if u in child]
pc = collections.Counter((t, n) for t, n, _, _ in PK)
cc = collections.Counter((lock_tracks[e["tid"]], e["name"]) for e in K)
say(pc == cc, "perfetto: same lock slices as chrome (per thread and name)", f"{len(pc)} vs {len(cc)} keys")
ps = sorted((t, n, b, e - b) for t, n, b, e in PK)
cs = sorted((lock_tracks[e["tid"]], e["name"], ns(e["ts"]), ns(e["dur"])) for e in K)
off = max((max(abs(a[2] - b[2]), abs(a[3] - b[3])) for a, b in zip(ps, cs)), default=0)
say(len(ps) == len(cs) and off <= 3, "perfetto: same lock slice times as chrome (within 3 ns)", f"max diff {off} ns")
PY

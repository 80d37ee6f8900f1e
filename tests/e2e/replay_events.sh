# replay shows the lock operations and probe hits of a timeline beside its
# calls: tests/progs/lock_basic.c (plain gcc) under --locks=events takes
# hot_lock as often as its "counter=" says; probe_loop.c under sonde probe
# --record calls work() as often as its "count" says.
. "$ROOT/tests/lib.sh"
gcc -O2 -g -pthread -o lock_basic "$PROGS/lock_basic.c" || { notok build "gcc failed"; exit 1; }
"$SONDE" record --locks=events -o le.data -- ./lock_basic >lb.out 2>/dev/null || notok "record --locks=events" "failed"
"$SONDE" replay -i le.data --format=json >le.json 2>err.txt || notok "replay --format=json of lock events" "$(cat err.txt)"
"$SONDE" replay -i le.data >le.txt 2>err.txt || notok "replay of lock events" "$(cat err.txt)"
gcc -O2 -g -o loop "$PROGS/probe_loop.c" || { notok build "gcc failed"; exit 1; }
"$SONDE" probe -o pr.data --record -e func:work -- ./loop 25 >loop.out 2>/dev/null || notok "probe --record" "failed"
"$SONDE" replay -i pr.data --format=json >pr.json 2>err.txt || notok "replay --format=json of probe hits" "$(cat err.txt)"
"$SONDE" replay -i pr.data >pr.txt 2>err.txt || notok "replay of probe hits" "$(cat err.txt)"
python3 - <<'PY'
import json, re
def say(ok, name, why=""):
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else f": {why}"))
counter = int(re.search(r"counter=(\d+)", open("lb.out").read()).group(1))
d = json.load(open("le.json"))
hot = [e for e in d["locks"] if e["lock"] == "hot_lock"]
acq = sum(1 for e in hot if e["op"] == "acquire")
rel = [e for e in hot if e["op"] == "release"]
say(acq == counter, f"locks: hot_lock acquired {counter} times, as the program counted", f"{acq}")
say(len(rel) == counter and all(e["held_ns"] >= 0 for e in rel), "locks: as many releases, each with its hold time", f"{len(rel)}")
say(all(e["kind"] == "mutex" and e["tid"] > 0 for e in hot), "locks: kind and thread on each operation", str(hot[:1]))
txt = open("le.txt").read()
say(len(re.findall(r"\[mutex\] acquire hot_lock", txt)) == counter, "table: one line per acquisition of hot_lock", "")
count = int(re.search(r"count (\d+)", open("loop.out").read()).group(1))
p = json.load(open("pr.json"))["probes"]
b = [h for h in p if h["probe"] == "func:work" and h["event"] == "begin"]
e = [h for h in p if h["probe"] == "func:work" and h["event"] == "end"]
say(len(b) == count and len(e) == count, f"probes: func:work began and ended {count} times, as the program counted", f"{len(b)} {len(e)}")
say(all(h["duration_ns"] >= 0 for h in e), "probes: each end carries its duration", str(e[:1]))
say(len(re.findall(r"\[probe\] func:work begin", open("pr.txt").read())) == count, "table: one line per call of work()", "")
PY

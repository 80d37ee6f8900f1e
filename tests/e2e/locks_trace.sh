# Locks together with function tracing: a program built with sonde-cc and
# recorded with --locks --trace keeps lock events and call events in the same
# rings; both decode (sonde locks agrees with its aggregates, the timeline
# export reads past the lock records).
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

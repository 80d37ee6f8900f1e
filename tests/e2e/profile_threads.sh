# Exact call counts in a multi-threaded program, per thread and in total.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O2 -g -pthread "$PROGS/threads.c" -o threads || { notok build "sonde-cc failed"; exit 1; }
"$SONDE" record -- ./threads >out.txt 2>rec.err
check "output unchanged" grep -qx "threads done" out.txt
"$SONDE" report --threads --format=json >rep.json
python3 - <<'PY'
import json, sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
d = json.load(open("rep.json"))
f = {x["name"]: x for x in d["functions"]}
say(f["leaf"]["calls"] == 4 * 100000 + 10, "leaf: 400010 calls in total", str(f["leaf"]["calls"]))
say(f["middle"]["calls"] == 4, "middle: 4 calls", str(f["middle"]["calls"]))
per = [{x["name"]: x["calls"] for x in t["functions"]} for t in d["threads"]]
say(len(d["threads"]) == 5, "5 threads with profiles", str(len(d["threads"])))
say(sorted(p.get("leaf", 0) for p in per) == [10, 100000, 100000, 100000, 100000], "per-thread leaf counts exact", str(per))
say(d["lost_events"] == 0, "nothing lost", str(d["lost_events"]))
check_invariants(["leaf", "middle", "main"])
done()
PY

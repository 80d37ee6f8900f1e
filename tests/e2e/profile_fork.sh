# fork (child recorded as its own process) and exec of another instrumented program.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O1 -g "$PROGS/forks.c" -o forks &&
"$SONDE_CC_BIN" -O1 -g "$PROGS/leafprog.c" -o leafprog || { notok build "sonde-cc failed"; exit 1; }
"$SONDE" record -- ./forks >out.txt 2>rec.err
check "output unchanged" grep -qx "forks done 3" out.txt
python3 - <<'PY'
import sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
r = report()
for n, c in [("f", 3), ("g", 5), ("h", 2), ("leaf2", 4)]:
    say(r.get(n, {}).get("calls") == c, f"{n}: {c} calls", str(r.get(n)))
info = sonde_json("info")
pids = {p["pid"] for p in info["processes"]}
say(len(info["processes"]) == 3 and len(pids) == 2, "3 process images (parent, child, child after exec) over 2 pids", str(info["processes"]))
d = sonde_json("report", "--threads")
per = [({x["name"]: x["calls"] for x in t["functions"]}) for t in d["threads"]]
say({"g": 5} in [{k: v for k, v in p.items() if k == "g"} for p in per] and not any(p.get("f") and p.get("g") for p in per),
    "child's calls recorded in its own thread, not the parent's", str(per))
done()
PY
# A child that _exits at once is charged its own time only (issue 9): main's
# inclusive time in the child's thread is tiny next to the parent's 400 ms.
"$SONDE_CC_BIN" -O2 -g "$PROGS/fork_exit.c" -o fork_exit || { notok build "sonde-cc fork_exit failed"; exit 1; }
"$SONDE" record -o fe.data -- ./fork_exit >fe.txt 2>fe.err
check "fork_exit output unchanged" grep -qx "fork_exit done" fe.txt
python3 - <<'PY'
import sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
d = sonde_json("report", "--threads", data="fe.data")
mains = sorted(next(x["inclusive_ns"] for x in t["functions"] if x["name"] == "main") for t in d["threads"])
say(len(mains) == 2 and mains[1] >= 380e6 and mains[0] < 0.02 * mains[1],
    "forked child that _exits: its main charged its own time, not the parent's", str(mains))
done()
PY

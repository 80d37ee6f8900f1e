# Recursion: the innermost-activation rule and both invariants.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O1 -g "$PROGS/recursion.c" -o recursion || { notok build "sonde-cc failed"; exit 1; }
"$SONDE" record -- ./recursion >out.txt 2>rec.err
check "output unchanged" grep -qx "recursion done" out.txt
python3 - <<'PY'
import sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
import re
# The work the program measured itself: deep's, every's per level (outermost
# first), even's; on a loaded machine each can overshoot its nominal 20 / 5 ms.
m = [float(x) for x in re.search(r"measured (.*)", open("rec.err").read()).group(1).split()]
W, LV, WE = m[0], m[1:5], m[5]
r = report()
# near2: within rel, and what a loaded machine puts between a hook and the
# program's own clock read (profile_check.near_split)
near2 = near_split
def cc(n):
    x = callers_callees(n)
    return x["function"], {c["name"]: c for c in x["callers"]}, {c["name"]: c for c in x["callees"]}
# deep(5): all work in the deepest call.
f, callers, callees = cc("deep")
say(f["calls"] == 6, "deep: 6 calls", str(f["calls"]))
say(near2(f, "inclusive_ns", W, 0.1) and near2(f, "exclusive_ns", W, 0.1), "deep: inclusive = exclusive = W (counted once)", str(f))
say(callers["main"]["attributed_ns"] < 0.01 * W, "deep: outer activation (main -> deep) attributed 0", str(callers["main"]))
say(near2(callers["deep"], "attributed_ns", W, 0.1), "deep: self-caller attributed the whole inclusive", str(callers["deep"]))
say(callers["main"]["calls"] == 1 and callers["deep"]["calls"] == 5, "deep: caller call counts 1 + 5", str(callers))
say(callees.get("deep", {"attributed_ns": 0})["attributed_ns"] < 0.01 * W, "deep: callee deep attributed 0 (innermost is the top)", str(callees))
mcallees = {c["name"]: c for c in callers_callees("main")["callees"]}
say(near2(mcallees["deep"], "attributed_ns", W, 0.1), "main's callees view: deep gets its inclusive", str(mcallees.get("deep")))
# every(3): W/4 at each of 4 levels.
f, callers, callees = cc("every")
say(near2(f, "inclusive_ns", sum(LV), 0.1), "every: inclusive = its 4 levels' work counted once", str(f))
say(near2(callers["main"], "attributed_ns", LV[0], 0.15), "every: main attributed the outermost level only", str(callers["main"]))
say(near2(callers["every"], "attributed_ns", sum(LV[1:]), 0.1), "every: self-caller attributed the 3 inner levels", str(callers["every"]))
# even/odd mutual recursion: even(4) -> odd(3) -> even(2) -> odd(1) -> even(0) works.
fe, ce, ee = cc("even")
fo, co, eo = cc("odd")
say(fe["calls"] == 3 and fo["calls"] == 2, "even 3 calls, odd 2 calls", f"{fe['calls']} {fo['calls']}")
say(near2(fe, "inclusive_ns", WE, 0.1) and near2(fo, "inclusive_ns", WE, 0.1), "even and odd inclusive W each (once)", f"{fe} {fo}")
say(ce["main"]["attributed_ns"] < 0.01 * WE and near2(ce["odd"], "attributed_ns", WE, 0.1), "even: innermost caller odd gets W, main 0", str(ce))
say(near2(eo["even"], "attributed_ns", WE, 0.1), "odd: callee even gets W", str(eo))
say(near2(co["even"], "attributed_ns", WE, 0.1), "odd: caller even gets W", str(co))
check_invariants(["main", "deep", "every", "even", "odd"])
done()
PY

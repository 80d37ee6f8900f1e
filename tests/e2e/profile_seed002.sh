# The seed-002 worked example reproduces the documented exclusive, inclusive
# and attributed figures within 10%, and both invariants hold exactly.
. "$ROOT/tests/lib.sh"
UNIT_MS=25
"$SONDE_CC_BIN" -O2 -g "$PROGS/seed002.c" -o seed002 || { notok build "sonde-cc failed"; exit 1; }
out=$("$SONDE" record -- ./seed002 $UNIT_MS 2>rec.err)
check "program output unchanged" test "$out" = "seed002 done"
python3 - "$UNIT_MS" <<'PY'
import sys; sys.path.insert(0, __import__("os").environ["ROOT"] + "/tests")
from profile_check import *
u = float(sys.argv[1]) * 1e6   # ns per unit
r = report()
# Figures of the seed (units): name -> (calls, exclusive, inclusive)
expect = {"main": (1, 2, 32), "A": (1, 0, 10), "B": (1, 5, 20), "C": (3, 5, 25),
          "E": (3, 10, 10), "F": (3, 5, 10), "G": (3, 5, 5)}
for n, (calls, ex, inc) in expect.items():
    f = r.get(n)
    if not f:
        say(False, f"{n} reported", "missing"); continue
    say(f["calls"] == calls, f"{n} calls == {calls}", f"got {f['calls']}")
    say(near(f["inclusive_ns"], inc * u, 0.10), f"{n} inclusive ~ {inc} units", f"got {f['inclusive_ns']/u:.2f}")
    if ex:
        say(near(f["exclusive_ns"], ex * u, 0.10), f"{n} exclusive ~ {ex} units", f"got {f['exclusive_ns']/u:.2f}")
    else:
        say(f["exclusive_ns"] < 0.05 * u, f"{n} exclusive ~ 0", f"got {f['exclusive_ns']/u:.3f}")
cc = callers_callees("C")
callers = {c["name"]: c for c in cc["callers"]}
callees = {c["name"]: c for c in cc["callees"]}
say(near(callers["A"]["attributed_ns"], 10 * u, 0.10), "C's caller A attributed ~ 10", str(callers["A"]))
say(near(callers["B"]["attributed_ns"], 15 * u, 0.10), "C's caller B attributed ~ 15", str(callers["B"]))
say(callers["A"]["calls"] == 1 and callers["B"]["calls"] == 2, "C's callers' call counts 1 and 2", str(callers))
say(near(callees["E"]["attributed_ns"], 10 * u, 0.10), "C's callee E attributed ~ 10", str(callees["E"]))
say(near(callees["F"]["attributed_ns"], 10 * u, 0.10), "C's callee F attributed ~ 10", str(callees["F"]))
mm = {c["name"]: c for c in callers_callees("main")["callees"]}
say(near(mm["A"]["attributed_ns"], 10 * u, 0.10) and near(mm["B"]["attributed_ns"], 20 * u, 0.10),
    "main's callees A ~ 10 and B ~ 20", str(mm))
check_invariants(expect.keys())
done()
PY

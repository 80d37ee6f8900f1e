# longjmp and C++ exceptions across several frames: counts exact, and the
# callers after the non-local exit are right (the stack does not drift).
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O2 -g "$PROGS/longjmp.c" -o longjmp &&
"$SONDE_CXX_BIN" -O2 -g "$PROGS/exceptions.cpp" -o exceptions || { notok build "sonde-cc failed"; exit 1; }
"$SONDE" record -o lj.data -- ./longjmp >out1.txt 2>rec1.err
"$SONDE" record -o ex.data -- ./exceptions >out2.txt 2>rec2.err
check "longjmp output unchanged" grep -qx "longjmp done" out1.txt
check "exceptions output unchanged" grep -qx "exceptions done" out2.txt
python3 - <<'PY'
import sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
r = report("lj.data")
for n, c in [("a", 3), ("b", 3), ("c", 3), ("outer", 3), ("after", 4)]:
    say(r[n]["calls"] == c, f"longjmp: {n} {c} calls", str(r[n]["calls"]))
callers = {c["name"]: c["calls"] for c in callers_callees("after", data="lj.data")["callers"]}
say(callers == {"outer": 3, "main": 1}, "longjmp: after() called from outer x3 and main x1 (not from c)", str(callers))
callees = {c["name"]: c["calls"] for c in callers_callees("outer", data="lj.data")["callees"]}
say(callees == {"a": 3, "after": 3}, "longjmp: outer's callees are a and after", str(callees))
info = sonde_json("info", data="lj.data")
say(info["lost"] == {}, "longjmp: no unmatched exits", str(info["lost"]))
check_invariants(["main", "outer", "a", "b", "c", "after"], data="lj.data", label="(longjmp)")
r = report("ex.data")
for n, c in [("demo::thrower(int)", 4), ("demo::mid(int)", 4), ("demo::top(int)", 4), ("demo::after()", 4), ("demo::catcher()", 4)]:
    say(n in r and r[n]["calls"] == c, f"exceptions: {n} {c} calls", str(r.get(n, {}).get("calls")))
callers = {c["name"]: c["calls"] for c in callers_callees("demo::after", data="ex.data")["callers"]}
say(callers == {"demo::catcher()": 4}, "exceptions: after() called from catcher()", str(callers))
info = sonde_json("info", data="ex.data")
say(info["lost"] == {}, "exceptions: no unmatched exits", str(info["lost"]))
done()
PY

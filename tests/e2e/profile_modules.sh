# A linked instrumented .so and a dlopen'ed one (loaded twice): exact counts.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O2 -g -fPIC -shared "$PROGS/libshared.c" -o libshared.so &&
"$SONDE_CC_BIN" -O2 -g -fPIC -shared "$PROGS/libplug.c" -o libplug.so &&
"$SONDE_CC_BIN" -O2 -g "$PROGS/modules.c" -o modules -L. -lshared -Wl,-rpath,"$PWD" || { notok build "sonde-cc failed"; exit 1; }
plain=$(./modules "$PWD/libplug.so")
"$SONDE" record -- ./modules "$PWD/libplug.so" >out.txt 2>rec.err
check "output unchanged" test "$(cat out.txt)" = "$plain"
python3 - <<'PY'
import sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
r = report()
for n, c in [("shared_fn", 7), ("shared_inner", 7), ("plug_fn", 8), ("plug_inner", 8), ("use_plugin", 2), ("main", 1)]:
    say(n in r and r[n]["calls"] == c, f"{n}: {c} calls", str(r.get(n, {}).get("calls")))
say(r["plug_fn"]["module"].endswith("libplug.so"), "plug_fn attributed to libplug.so", r["plug_fn"]["module"])
say(r["shared_fn"]["module"].endswith("libshared.so"), "shared_fn attributed to libshared.so", r["shared_fn"]["module"])
callers = {c["name"]: c["calls"] for c in callers_callees("plug_fn")["callers"]}
say(callers == {"use_plugin": 8}, "plug_fn called from use_plugin 8 times", str(callers))
check_invariants(["main", "use_plugin", "plug_fn", "shared_fn"])
done()
PY

# A program that SIGKILLs itself, and one that segfaults, still yield their
# profile up to the end; the exit status is passed through.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O1 -g "$PROGS/crash.c" -o crash || { notok build "sonde-cc failed"; exit 1; }
for how in kill segv; do
	"$SONDE" record -o $how.data -- ./crash $how >out.$how 2>rec.$how
	rc=$?
	case $how in kill) want=137 ;; segv) want=139 ;; esac
	check "$how: exit status passed through ($want)" test "$rc" -eq "$want"
	check "$how: output before the crash kept" grep -qx "crash starting" out.$how
	python3 - $how <<'PY'
import sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
how = sys.argv[1]
r = report(f"{how}.data")
say(r.get("before", {}).get("calls") == 5, f"{how}: before() 5 calls recorded", str(r.get("before")))
v = r.get("victim", {})
say(v.get("calls") == 1 and v.get("inclusive_ns", 0) >= 29e6, f"{how}: victim() recorded with >= 30 ms", str(v))
info = sonde_json("info", data=f"{how}.data")
p = info["processes"][0]
sig = 9 if how == "kill" else 11
say(p.get("killed") and p.get("exit_status") == -sig, f"{how}: process shown killed by signal {sig}", str(p))
done()
PY
done

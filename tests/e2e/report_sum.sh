# sonde report -i A -i B -i C: three runs of diffwork (N = 50, 150, 7) added
# up.  Expected: the calls and the times the program printed in each run,
# added up by this test.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O2 -g -I"$PROGS" "$PROGS/diffwork.c" -o diffwork || { notok build "sonde-cc failed"; exit 1; }
for n in 50 150 7; do
	"$SONDE" record -o r$n.data -- ./diffwork $n >r$n.out 2>/dev/null || notok "record diffwork $n" "failed"
done
"$SONDE" report -i r50.data -i r150.data -i r7.data --format=json >sum.json 2>err.txt ||
	{ notok "report -i x3 --format=json" "$(cat err.txt)"; exit 0; }
python3 - <<'PY'
import json
def say(ok, name, why=""):
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else f": {why}"))
want = {}
for n in (50, 150, 7):
    for l in open(f"r{n}.out"):
        k, f, v = l.split()
        want[(k, f)] = want.get((k, f), 0) + float(v)
d = json.load(open("sum.json"))
F = {r["name"]: r for r in d["functions"]}
say(d.get("inputs") == ["r50.data", "r150.data", "r7.data"], "the inputs are listed in order", str(d.get("inputs")))
for fn in ("grows", "fixed"):
    r = F.get(fn)
    say(r and r["calls"] == want[("calls", fn)], f"{fn}: calls = the sum the three runs printed ({want[('calls', fn)]:.0f})", str(r))
    w = want[("ns", fn)]
    say(r and abs(r["exclusive_ns"] - w) <= 0.1 * w + 3e6, f"{fn}: exclusive time within 10% of the {w/1e6:.1f} ms the runs measured", str(r and r["exclusive_ns"]))
m = F.get("main")
say(m and m["calls"] == 3, "main: 3 calls (one per run)", str(m))
say(m and m["file"] and m["file"].endswith("diffwork.c") and m["line"] > 0, "rows carry file and line", str(m))
PY
"$SONDE" report -i r50.data -i r150.data --sort=calls >sum.txt 2>err.txt && grep -q "2 recordings of diffwork added up" sum.txt &&
	grep -q " grows" sum.txt && ok "table: says what it added up" || notok "table: says what it added up" "$(head -c 300 sum.txt; cat err.txt)"
# refusals
"$SONDE_CC_BIN" -O1 -I"$PROGS" -o other "$PROGS/leafprog.c" && "$SONDE" record -o other.data -- ./other >/dev/null 2>&1
"$SONDE" report -i r50.data -i other.data >/dev/null 2>err.txt; rc=$?
[ $rc -eq 2 ] && grep -q "adds up recordings of one program" err.txt && ok "another program: refused, exit 2" ||
	notok "another program: refused, exit 2" "exit $rc $(cat err.txt)"
"$SONDE" report -i r50.data -i r150.data --threads >/dev/null 2>err.txt; rc=$?
[ $rc -eq 1 ] && grep -q "read one recording" err.txt && ok "--threads with several -i: usage error" ||
	notok "--threads with several -i: usage error" "exit $rc $(cat err.txt)"
"$SONDE" tree -i r50.data -i r150.data >/dev/null 2>err.txt; rc=$?
[ $rc -eq 1 ] && grep -q "only 'sonde report' adds up" err.txt && ok "tree with several -i: usage error" ||
	notok "tree with several -i: usage error" "exit $rc $(cat err.txt)"
"$SONDE" report -i r50.data -i nowhere.data >/dev/null 2>err.txt; rc=$?
[ $rc -eq 2 ] && grep -q "^sonde: error: " err.txt && ok "a missing recording among several: exit 2" ||
	notok "a missing recording among several: exit 2" "exit $rc $(cat err.txt)"

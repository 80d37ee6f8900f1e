# The profile formats of export (callgrind, folded, pprof) and --time-range:
# on a --trace recording the range selects the calls (tests/progs/phases.c:
# early() x1000, a 400 ms sleep, late() x700, as it prints); on a profile
# recording a range is a usage error; a recording without a function profile
# (sonde probe --record) is an error, never an empty file with exit 0.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O2 -g -I"$PROGS" "$PROGS/phases.c" -o phases || { notok build "sonde-cc failed"; exit 1; }
"$SONDE" record --trace -o tr.data -- ./phases 1000 700 >out.txt 2>err.txt || notok "record --trace" "$(cat err.txt)"
"$SONDE" record -o prof.data -- ./phases 1000 700 >/dev/null 2>&1 || notok "record" "failed"
calls() { # FILE FUNC: the calls= of the call sites of FUNC in a callgrind file
	python3 - "$1" "$2" <<'PY'
import sys
n, want, tot = None, sys.argv[2], 0
for l in open(sys.argv[1]):
    if l.startswith("cfn="):
        n = l.split(")", 1)[-1].strip() if ")" in l else l[4:].strip()
    elif l.startswith("calls=") and n == want:
        tot += int(l[6:].split()[0])
print(tot)
PY
}
early=$(awk '$1=="early"{print $2}' out.txt); late=$(awk '$1=="late"{print $2}' out.txt)
"$SONDE" export -i tr.data --format=callgrind --time-range 0.3,1000 -o late.cg 2>err.txt || notok "callgrind --time-range 0.3,1000" "$(cat err.txt)"
[ "$(calls late.cg late)" = "$late" ] && [ "$(calls late.cg early)" = 0 ] && ok "callgrind, range after the sleep: late() x$late, no early()" ||
	notok "callgrind, range after the sleep: late() x$late, no early()" "late $(calls late.cg late), early $(calls late.cg early)"
"$SONDE" export -i tr.data --format=callgrind --time-range 0,0.3 -o early.cg 2>err.txt || notok "callgrind --time-range 0,0.3" "$(cat err.txt)"
[ "$(calls early.cg early)" = "$early" ] && [ "$(calls early.cg late)" = 0 ] && ok "callgrind, range before the sleep: early() x$early, no late()" ||
	notok "callgrind, range before the sleep: early() x$early, no late()" "early $(calls early.cg early), late $(calls early.cg late)"
"$SONDE" export -i tr.data --format=callgrind -o all.cg 2>err.txt
[ "$(calls all.cg early)" = "$early" ] && [ "$(calls all.cg late)" = "$late" ] && ok "callgrind without a range: both" ||
	notok "callgrind without a range: both" "early $(calls all.cg early), late $(calls all.cg late)"
"$SONDE" export -i tr.data --format=folded --time-range 0.3,1000 -o late.folded 2>err.txt
grep -q "late" late.folded && ! grep -q "early" late.folded && ok "folded, range after the sleep: late() only" ||
	notok "folded, range after the sleep: late() only" "$(head -3 late.folded)"
"$SONDE" export -i prof.data --format=callgrind --time-range 0,1 -o x.cg 2>err.txt; rc=$?
[ $rc -eq 1 ] && grep -q "needs a recording made with --trace" err.txt && ok "a profile recording with --time-range: usage error" ||
	notok "a profile recording with --time-range: usage error" "exit $rc $(cat err.txt)"
gcc -O2 -g -o loop "$PROGS/probe_loop.c" && "$SONDE" probe -o pr.data --record -e func:work -- ./loop 5 >/dev/null 2>&1
for f in folded callgrind pprof; do
	"$SONDE" export -i pr.data --format=$f -o x.out 2>err.txt; rc=$?
	[ $rc -eq 2 ] && grep -q "dynamic-probe hits" err.txt && ok "export --format=$f of a probe recording: exit 2, says what to use" ||
		notok "export --format=$f of a probe recording: exit 2, says what to use" "exit $rc $(cat err.txt)"
done

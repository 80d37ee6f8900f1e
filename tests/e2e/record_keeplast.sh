# The flight recorder: record --trace --keep-last=SIZE keeps the newest SIZE
# of events, in memory, and writes them at the end (exit, SIGKILL of the
# program).  tests/progs/flight.c makes 10M calls of old(), then 1000 of
# recent() and one of last(), and prints its counts: the window must hold
# the last ones exactly, the file must stay within SIZE, and what was let go
# is said.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O2 -g -I"$PROGS" "$PROGS/flight.c" -o flight || { notok build "sonde-cc failed"; exit 1; }
./flight 10000000 1000 >plain.out; prc=$?
"$SONDE" record --trace --keep-last=2M -o k.data -- ./flight 10000000 1000 >k.out 2>k.err; rc=$?
[ $rc -eq $prc ] && cmp -s plain.out k.out && ok "the program's output and exit status are unchanged" ||
	notok "the program's output and exit status are unchanged" "exit $rc vs $prc; $(tail -2 k.err)"
size=$(stat -c %s k.data/events.sonde 2>/dev/null || echo 0)
[ "$size" -gt 0 ] && [ "$size" -le $((2 * 1048576)) ] && ok "events.sonde within 2M: $size bytes" ||
	notok "events.sonde within 2M" "$size bytes"
check() { # DIR, what
	"$SONDE" replay -i "$1" --format=json >replay.json 2>replay.err || { notok "$2: replay" "$(cat replay.err)"; return; }
	"$SONDE" info -i "$1" --format=json >info.json 2>info.err || { notok "$2: info" "$(cat info.err)"; return; }
	python3 - "$2" <<'PY'
import json, sys
what = sys.argv[1]
def say(ok, name, why=""):
    print(("ok - " if ok else "not ok - ") + f"{what}: {name}" + ("" if ok else f": {why}"))
want = {l.split()[0]: int(l.split()[1]) for l in open("plain.out")}
d = json.load(open("replay.json"))
calls = d["calls"]
n = {}
for c in calls:
    n[c["name"]] = n.get(c["name"], 0) + 1
say(n.get("recent") == want["recent"], f"recent(): {want['recent']} calls, as the program counted", str(n))
say(calls and calls[-1]["name"] == "last", "the newest call is last()", str(calls[-1:]))
say(0 < n.get("old", 0) < want["old"], f"old(): only the newest of its {want['old']} calls", str(n.get("old")))
say(d["sequence_gaps"] > 0, "the chunks let go are sequence gaps in the timeline", str(d["sequence_gaps"]))
k = json.load(open("info.json")).get("keep_last")
say(k and k["bytes"] == 2 << 20 and k["dropped_chunks"] > 0 and k["dropped_bytes"] > 0,
    "info says what was kept and what was let go", str(k))
PY
}
check k.data "exit"
# SIGKILL of the program: the window is written all the same
"$SONDE" record --trace --keep-last=2M -o kk.data -- ./flight 10000000 1000 kill >kk.out 2>kk.err; rc=$?
[ $rc -eq 137 ] && cmp -s plain.out kk.out && ok "SIGKILL: output unchanged, sonde exits as the program did (137)" ||
	notok "SIGKILL: output unchanged, sonde exits as the program did (137)" "exit $rc; $(tail -2 kk.err)"
check kk.data "SIGKILL of the program"
# bad input
for bad in "--keep-last=100K --trace" "--keep-last=2M" "--keep-last=abc --trace" "--keep-last=2M -p 1"; do
	"$SONDE" record $bad -o bad.data -- ./flight 10 10 >/dev/null 2>err.txt; rc=$?
	[ $rc -eq 1 ] && grep -q "^sonde: error: " err.txt && ok "record $bad: usage error" ||
		notok "record $bad: usage error" "exit $rc $(cat err.txt)"
done

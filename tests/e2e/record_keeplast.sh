# test-timeout: 900
# The flight recorder: record --trace --keep-last=SIZE keeps the newest SIZE
# of events, in memory, and writes them at the end (exit, SIGKILL of the
# program).  tests/progs/flight.c makes 10M calls of old(), then 1000 of
# recent() and one of last(), and prints its counts: the window must hold
# the last ones exactly, the file must stay within SIZE, and what was let go
# is said (the calls let go and the calls kept add up to the program's).
# Then sonde's own peak memory (VmHWM, sampled) within SIZE, and a snapshot
# on SIGUSR2 while the program runs.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O2 -g -I"$PROGS" "$PROGS/flight.c" -o flight || { notok build "sonde-cc failed"; exit 1; }
./flight 10000000 1000 >plain.out; prc=$?
"$SONDE" record --trace --compress=none --keep-last=2M -o k.data -- ./flight 10000000 1000 >k.out 2>k.err; rc=$?
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
say(k and k.get("memory_short", 0) > 1 << 20, "info says sonde's own memory leaves 2M too little for the memory bound",
    str(k))
total = sum(want.values()) + 1  # and main()
say(k and k.get("dropped_calls", 0) + len(calls) == total,
    f"the calls let go ({k and k.get('dropped_calls')}) and those kept ({len(calls)}) are the program's {total}", "")
PY
}
check k.data "exit"
# SIGKILL of the program: the window is written all the same
"$SONDE" record --trace --compress=none --keep-last=2M -o kk.data -- ./flight 10000000 1000 kill >kk.out 2>kk.err; rc=$?
[ $rc -eq 137 ] && cmp -s plain.out kk.out && ok "SIGKILL: output unchanged, sonde exits as the program did (137)" ||
	notok "SIGKILL: output unchanged, sonde exits as the program did (137)" "exit $rc; $(tail -2 kk.err)"
check kk.data "SIGKILL of the program"
# sonde's memory: its peak resident set (VmHWM, sampled every 20 ms) and the
# file within SIZE, the newest calls kept.  Stored as they are (--compress=none,
# about 5 bytes per call), so that 20M calls overflow the window whatever the
# compression ratio of the run (0.5 to 3 bytes per call measured).
hwm() { # OUT CMD...: run CMD in the background, its last VmHWM in kB into OUT
	local out=$1 h=0 v pid; shift
	"$@" & pid=$!
	while kill -0 $pid 2>/dev/null; do
		v=$(awk '/^VmHWM/ {print $2}' /proc/$pid/status 2>/dev/null)
		[ -n "$v" ] && h=$v
		sleep 0.02
	done
	wait $pid; local rc=$?
	echo "$h" >"$out"
	return $rc
}
./flight 20000000 1000 >plain20.out
hwm hwm.txt "$SONDE" record --trace --compress=none --keep-last=24M -o m.data -- ./flight 20000000 1000 >m.out 2>m.err; rc=$?
[ $rc -eq 0 ] && cmp -s plain20.out m.out && ok "24M window: program output unchanged" ||
	notok "24M window: program output unchanged" "exit $rc; $(tail -2 m.err)"
kb=$(cat hwm.txt)
asan=0 # an ASan build of sonde takes ~80 MB itself (shadow memory): no 24M bound to check
grep -qa "__asan_init" "$SONDE" && asan=1
if [ $asan = 1 ]; then
	skip "24M window: sonde's peak memory within 24M" "sonde is built with AddressSanitizer ($kb kB of its own)"
elif [ "$kb" -gt 0 ] && [ "$kb" -le 24576 ]; then
	ok "24M window: sonde's peak memory within 24M: $kb kB"
else
	notok "24M window: sonde's peak memory within 24M" "$kb kB"
fi
size=$(du -sb m.data | cut -f1)
[ "$size" -le $((24 * 1048576)) ] && ok "24M window: the recording within 24M on disk: $size bytes" ||
	notok "24M window: the recording within 24M on disk" "$size bytes"
"$SONDE" report -i m.data --format=json >m.json 2>/dev/null
"$SONDE" info -i m.data --format=json >mi.json 2>/dev/null
python3 - "$asan" <<'PY'
import json, sys
asan = sys.argv[1] == "1"
want = {l.split()[0]: int(l.split()[1]) for l in open("plain20.out")}
n = {f["name"]: f["calls"] for f in json.load(open("m.json"))["functions"]}
k = json.load(open("mi.json")).get("keep_last") or {}
good = n.get("recent") == want["recent"] and n.get("last") == 1 and 0 < n.get("old", 0) < want["old"]
print(("ok - " if good else "not ok - ") + "24M window: the newest calls kept (recent(), last()), only part of old()" +
      ("" if good else f": {n}"))
good = k.get("dropped_calls", 0) > 0 and ("memory_short" not in k or asan)
print(("ok - " if good else "not ok - ") + "24M window: older calls let go" + (", the memory bound held" if not asan else
      " (AddressSanitizer build: the memory bound is not checked)") + ("" if good else f": {k}"))
PY
# SIGUSR2 to sonde: DIR.snap-1/ holds what is kept then (old() only: the
# program waits between its two phases), and the recording goes on
rm -f flight.ready flight.go
"$SONDE" record --trace --compress=none --keep-last=4M -o s.data -- ./flight 5000000 1000 wait >s.out 2>s.err & spid=$!
for i in $(seq 600); do [ -e flight.ready ] && break; sleep 0.1; done
kill -USR2 $spid
for i in $(seq 600); do grep -q "snapshot" s.err && break; sleep 0.1; done
touch flight.go
wait $spid; rc=$?
./flight 5000000 1000 >plain5.out
[ $rc -eq 0 ] && cmp -s plain5.out s.out && grep -q "snapshot of the newest events written to s.data.snap-1/" s.err &&
	ok "SIGUSR2: sonde says where the snapshot is, the program runs on unchanged" ||
	notok "SIGUSR2: sonde says where the snapshot is, the program runs on unchanged" "exit $rc; $(cat s.err)"
for d in s.data.snap-1 s.data; do
	"$SONDE" replay -i $d --format=json >$d.json 2>$d.rerr || notok "$d: replay reads it" "$(cat $d.rerr)"
	"$SONDE" info -i $d --format=json >$d.info 2>$d.ierr || notok "$d: info reads it" "$(cat $d.ierr)"
done
python3 - <<'PY'
import json
want = {l.split()[0]: int(l.split()[1]) for l in open("plain5.out")}
def names(d):
    n = {}
    for c in json.load(open(d + ".json"))["calls"]:
        n[c["name"]] = n.get(c["name"], 0) + 1
    return n
s, f = names("s.data.snap-1"), names("s.data")
si = json.load(open("s.data.snap-1.info"))
fi = json.load(open("s.data.info"))
def say(good, name, why):
    print(("ok - " if good else "not ok - ") + name + ("" if good else f": {why}"))
say(0 < s.get("old", 0) < want["old"] and "recent" not in s and "last" not in s,
    "snapshot: the newest calls of old() at the time, none of the later ones", str(s))
say(si.get("keep_last", {}).get("snapshot") == 1 and si.get("keep_last", {}).get("dropped_calls", 0) > 0,
    "snapshot: info says it is snapshot 1 and what was let go before it", str(si.get("keep_last")))
say(f.get("recent") == want["recent"] and f.get("last") == 1, "after the snapshot the recording went on to the end", str(f))
PY
# bad input
for bad in "--keep-last=100K --trace" "--keep-last=2M" "--keep-last=abc --trace" "--keep-last=2M -p 1"; do
	"$SONDE" record $bad -o bad.data -- ./flight 10 10 >/dev/null 2>err.txt; rc=$?
	[ $rc -eq 1 ] && grep -q "^sonde: error: " err.txt && ok "record $bad: usage error" ||
		notok "record $bad: usage error" "exit $rc $(cat err.txt)"
done

# A program killed with SIGKILL while its threads are mid-call: every completed
# call is in the trace, the open ones are closed at the kill (tests/progs/trace_kill.c).
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O1 -g "$PROGS/trace_kill.c" -o trace_kill -lpthread || { notok build "sonde-cc failed"; exit 1; }
rm -f ready
"$SONDE" record --trace -o k -- ./trace_kill "$PWD/ready" >/dev/null 2>rec.err &
rp=$!
for i in $(seq 1 200); do [ -s ready ] && break; sleep 0.05; done
[ -s ready ] || { notok "program got ready" "no ready file"; kill $rp; exit 1; }
t_before=$(date +%s%N)
kill -9 "$(cat ready)"
wait $rp; rc=$?
check "sonde record passes the kill on (status 137)" test $rc -eq 137
check "export after a kill" "$SONDE" export -i k --format=chrome -o k.json
"$SONDE" replay -i k >k.txt 2>&1
python3 - <<'PY'
import json, collections
def say(ok, name, why=""):
    print(f"ok - {name}" if ok else f"not ok - {name}: {why}", flush=True)
ev = json.load(open("k.json"))["traceEvents"]
X = [e for e in ev if e["ph"] == "X" and e.get("cat") != "sched"]  # not the state tracks
c = collections.Counter(e["name"] for e in X)
say(c["short_call"] == 3000, "every completed call is in the trace", str(c))
closed = [e for e in X if e.get("args", {}).get("end") == "closed at thread end"]
cc = collections.Counter(e["name"] for e in closed)
say(cc == {"worker": 3, "blocked": 3, "main": 1, "wait_forever": 1}, "the open calls are closed and marked", str(cc))
done = [e for e in X if e not in closed]
say(all(e["name"] == "short_call" for e in done), "no other call was completed", str(collections.Counter(e["name"] for e in done)))
ends = [e["ts"] + e["dur"] for e in closed]
last_done = max(e["ts"] + e["dur"] for e in done)
# closed at the kill: all at one instant (the process end), after everything that completed
say(ends and max(ends) - min(ends) < 1.0 and min(ends) >= last_done, "open calls end together at the kill",
    f"ends {min(ends)}..{max(ends)} us, last completed {last_done}")
# nesting: blocked inside worker, wait_forever inside main
for tid in {e["tid"] for e in closed}:
    s = sorted((e for e in closed if e["tid"] == tid), key=lambda e: e["ts"])
    ok = len(s) == 2 and s[0]["ts"] <= s[1]["ts"] and s[0]["ts"] + s[0]["dur"] >= s[1]["ts"] + s[1]["dur"] - 0.003
    if not ok:
        say(False, "closed calls nest", str(s)); break
else:
    say(True, "closed calls nest")
PY
grep -q "closed at thread end" k.txt && ok "replay marks the calls closed at the end" || notok "replay marks closed calls" "$(tail -3 k.txt)"

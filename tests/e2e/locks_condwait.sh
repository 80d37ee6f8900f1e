# Condition waits of a known minimum length (tests/progs/lock_condwait.c:
# the signaller sleeps DELAY ms before each signal, the waiter is blocked the
# whole time): sonde locks shows their wait, and an average wait of at least
# DELAY (it showed AVG-WAIT 0 ns: the average was taken over contended
# acquisitions, which a condition wait never is).  The counts are the
# program's own; the times are lower bounds, true on any machine load.
. "$ROOT/tests/lib.sh"
${CC:-cc} -O2 -g -pthread "$PROGS/lock_condwait.c" -o condw || { notok build "cc failed"; exit 1; }
rounds=6 delay=20
for mode in aggregates events; do
	opt=--locks; [ $mode = events ] && opt=--locks=events
	"$SONDE" record $opt -o rec.$mode -- ./condw $rounds $delay > out.$mode 2> rec.$mode.err ||
		{ notok "$mode: record" "$(head -c 300 rec.$mode.err)"; continue; }
	read -r _ r _ d _ waits < out.$mode
	check "$mode: program ran its $rounds rounds" test "$r $d" = "$rounds $delay"
	"$SONDE" locks -i rec.$mode --format=json > locks.$mode.json 2> locks.$mode.err ||
		{ notok "$mode: sonde locks" "$(cat locks.$mode.err)"; continue; }
	python3 - "$mode" locks.$mode.json "$rounds" "$delay" "$waits" <<'PY' || notok "$mode: JSON checks" "python failed"
import json, sys
mode, path, rounds, delay, waits = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
def say(ok, name, why=""):
    print(f"ok - {mode}: {name}" if ok else f"not ok - {mode}: {name}: {why}", flush=True)
c = [l for l in json.load(open(path))["locks"] if l["name"] == "ready_cond"]
if not c:
    say(False, "ready_cond listed", "not in the JSON")
    sys.exit(0)
c = c[0]
say(c["kind"] == "cond" and c["acquisitions"] == waits and c["waits"] == waits,
    f"ready_cond: {waits} waits (the program's count of pthread_cond_wait calls)", str(c))
floor = rounds * delay * 1e6
say(c["wait_ns"] >= floor, f"total wait >= {rounds} x {delay} ms", str(c["wait_ns"]))
say(c["avg_wait_ns"] >= floor / waits, f"avg wait >= {rounds} x {delay} ms / {waits} waits (was 0)", str(c["avg_wait_ns"]))
say(abs(c["avg_wait_ns"] * waits - c["wait_ns"]) <= waits, "avg wait x waits = total wait", f'{c["avg_wait_ns"]} {c["wait_ns"]}')
PY
done
# The table says the same (the AVG-WAIT column of ready_cond is not "0 ns").
"$SONDE" locks -i rec.aggregates > table.txt 2>&1
avg=$(awk '$1 == "ready_cond" {print $7, $8}' table.txt)
case "$avg" in
*" ms"|*" s") ok "table: ready_cond AVG-WAIT in ms ($avg)" ;;
*) notok "table: ready_cond AVG-WAIT in ms" "$(grep ready_cond table.txt)" ;;
esac

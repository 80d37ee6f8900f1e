# A program that exits leaving a daemon (tests/progs/daemonize.c): by default
# sonde follows the daemon to its end and says so after a second; Ctrl-C
# (SIGINT to sonde) then ends the recording and leaves the daemon running;
# --no-follow-daemons ends at the program's exit.  The daemon writes its
# tick count to a file when it ends: it must always finish.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O1 -g -I"$PROGS" "$PROGS/daemonize.c" -o daemonize || { notok build "sonde-cc failed"; exit 1; }
wait_file() { for _ in $(seq 1 100); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }
# 1. default: the daemon is followed to its end (2 s), its 20 ticks recorded
"$SONDE" record -o follow.data -- ./daemonize 2 "$PWD/follow.done" >out1.txt 2>err1.txt; rc=$?
[ $rc -eq 0 ] && [ -s follow.done ] && ok "followed: sonde ends after the daemon ($(cat follow.done))" ||
	notok "followed: sonde ends after the daemon" "exit $rc, done file: $(cat follow.done 2>/dev/null)"
grep -q "still recording the processes it left running" err1.txt && ok "followed: sonde says it is waiting for the daemon" ||
	notok "followed: sonde says it is waiting for the daemon" "$(cat err1.txt)"
"$SONDE" report -i follow.data --format=json >f.json 2>/dev/null
python3 - <<'PY'
import json
t = {f["name"]: f["calls"] for f in json.load(open("f.json"))["functions"]}
want = 1 + int(open("follow.done").read().split()[1])
print(("ok - " if t.get("tick") == want else "not ok - ") + f"followed: tick() calls = parent's 1 + the daemon's {want - 1}" + ("" if t.get("tick") == want else f": {t.get('tick')}"))
PY
# 2. --no-follow-daemons: sonde ends with the program; the daemon finishes alone
start=$(date +%s%N)
"$SONDE" record --no-follow-daemons -o nofollow.data -- ./daemonize 3 "$PWD/nofollow.done" >out2.txt 2>err2.txt; rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ $rc -eq 0 ] && [ ! -e nofollow.done ] && ok "--no-follow-daemons: sonde ends with the program, before the daemon ($ms ms; it runs 3 s)" ||
	notok "--no-follow-daemons: sonde ends with the program" "exit $rc after $ms ms; $(cat err2.txt)"
wait_file nofollow.done && grep -q "ticks 30" nofollow.done && ok "--no-follow-daemons: the daemon finishes its work (ticks 30)" ||
	notok "--no-follow-daemons: the daemon finishes its work" "$(cat nofollow.done 2>/dev/null)"
"$SONDE" report -i nofollow.data --format=json >/dev/null 2>r2.err && ok "--no-follow-daemons: the recording reads" ||
	notok "--no-follow-daemons: the recording reads" "$(cat r2.err)"
# 3. default, then SIGINT to sonde once the program has exited
"$SONDE" record -o int.data -- ./daemonize 4 "$PWD/int.done" >out3.txt 2>err3.txt &
sp=$!
for _ in $(seq 1 60); do grep -q "still recording" err3.txt 2>/dev/null && break; sleep 0.1; done
kill -INT $sp
wait $sp; rc=$?
[ $rc -eq 0 ] && [ ! -e int.done ] && grep -q "the recording ends here" err3.txt && ok "Ctrl-C after the program's exit: the recording ends, the daemon goes on" ||
	notok "Ctrl-C after the program's exit: the recording ends, the daemon goes on" "exit $rc; $(cat err3.txt)"
wait_file int.done && grep -q "ticks 40" int.done && ok "Ctrl-C: the daemon finishes its work (ticks 40)" ||
	notok "Ctrl-C: the daemon finishes its work" "$(cat int.done 2>/dev/null)"
[ -s int.data/profile.sonde ] && ok "Ctrl-C: the recording is written" || notok "Ctrl-C: the recording is written" "no profile.sonde"

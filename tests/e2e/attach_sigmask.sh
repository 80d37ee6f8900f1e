#!/usr/bin/env bash
# attach_sigmask.sh — a program that calls its functions with every signal
# blocked (tests/progs/masked_calls.c, plain gcc; dash does this around each
# wait) survives the end of `sonde record -p` when sonde is SIGKILLed: the
# agent's watcher then puts the functions back while the program runs, an
# int3 on each entry for a moment, and an int3 reached with SIGTRAP blocked
# would kill it (the kernel resets a blocked synchronous signal to its
# default).  The runtime keeps SIGTRAP out of the masks the program sets
# until the functions are back (src/rt/signals.c, trap_open).  Expected: the
# program's own output and status, after 10 attaches each ended by SIGKILL.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
need_ptrace "record -p of a program that blocks its signals"
gcc -O2 -g -o mc "$PROGS/masked_calls.c" || { notok build "gcc"; exit 1; }
rm -f stop
./mc stop > mc.out 2> mc.err &
mp=$!
wait_for mc.out '^[0-9]' || { notok start "the program did not start"; exit 1; }
bad=""
for round in $(seq 10); do
	"$SONDE" record -p "$mp" -o "r$round.data" > /dev/null 2> "r$round.err" &
	sp=$!
	wait_for "r$round.err" "recording process $mp" || bad="$bad [round $round: $(tail -c 200 "r$round.err")]"
	kill -KILL $sp
	wait $sp 2>/dev/null
	agent_ended "$mp" || bad="$bad [round $round: the agent did not end]"
	kill -0 "$mp" 2>/dev/null || { bad="$bad [round $round: the program is gone]"; break; }
done
touch stop
wait "$mp"
rc=$?
check "10 attaches ended by SIGKILL of sonde: every agent ended, none refused (${bad:-all fine})" test -z "$bad"
check "the program, blocking every signal around its calls, ends as without sonde (status 0, \"done\")" \
	sh -c "[ $rc -eq 0 ] && tail -1 mc.out | grep -qx done"

# The same program with every signal blocked before sonde comes, for its
# whole run: the thread sonde stops for the agent's start is inside the
# masked section, and gets its mask back without SIGTRAP (the start's
# detach, attach/inject.c); without that, the watcher's int3s at the end
# met a blocked SIGTRAP (CI: status 133 after 9 rounds of the test above).
rm -f stop
./mc stop hold > mch.out 2> mch.err &
mp=$!
wait_for mch.out '^[0-9]' || { notok start "the holding program did not start"; exit 1; }
bad=""
trap_blocked() { # SIGTRAP (5) in the thread's blocked set: bit 4 of SigBlk
	local b
	b=$(awk '/^SigBlk:/ { print $2 }' /proc/$mp/status 2>/dev/null)
	[ -n "$b" ] && (( (16#$b & 16) != 0 ))
}
trap_blocked || bad="$bad [before: SIGTRAP not blocked]"
for round in $(seq 5); do
	"$SONDE" record -p "$mp" -o "h$round.data" > /dev/null 2> "h$round.err" &
	sp=$!
	wait_for "h$round.err" "recording process $mp" || bad="$bad [round $round: $(tail -c 200 "h$round.err")]"
	trap_blocked && bad="$bad [round $round: SIGTRAP blocked while recording]"
	kill -KILL $sp
	wait $sp 2>/dev/null
	agent_ended "$mp" || bad="$bad [round $round: the agent did not end]"
	kill -0 "$mp" 2>/dev/null || { bad="$bad [round $round: the program is gone]"; break; }
done
touch stop
wait "$mp"
rc=$?
check "every signal blocked for the whole run: 5 attaches ended by SIGKILL, SIGTRAP unblocked while recording (${bad:-all fine})" test -z "$bad"
check "every signal blocked for the whole run: the program ends as without sonde (status 0, \"done\")" \
	sh -c "[ $rc -eq 0 ] && tail -1 mch.out | grep -qx done"

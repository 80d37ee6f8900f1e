#!/usr/bin/env bash
# attach_kill_start.sh — SIGKILL of `sonde record -p` in the middle of the
# attach itself (while the target runs sonde's injected dlopen or the agent's
# start) and in the middle of the agent's stop: the target must finish with
# its normal output and exit status.  The injected calls are made by a
# helper process of sonde that outlives it (src/attach/agent.c); before,
# the call returned into a faulting address nobody caught.  The program is
# tests/progs/attach_profile.c (2 worker threads, waiting on a FIFO); the
# kill comes 0-20 ms after sonde starts, a different delay each round.
# Needs ptrace of a non-child: root, or kernel.yama.ptrace_scope 0.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
need_ptrace "SIGKILL of sonde during the attach"
"$SONDE_CC_BIN" -O2 -g -pthread -I"$PROGS" -o ap "$PROGS/attach_profile.c" || { notok build "sonde-cc"; exit 0; }

reference_run 3

# The kill lands during the attach: SONDE_ATTACH_TIMES shows how far sonde got.
for round in 1 2 3 4 5 6 7 8; do
	start "s$round"
	SONDE_ATTACH_TIMES=1 "$SONDE" record -p "$pid" -o "s$round.data" 2> "s$round.err" &
	sp=$!
	sleep "$(printf "0.%03d" $(( (round - 1) * 25 / 10 )))"
	kill -KILL $sp
	wait $sp 2>/dev/null
	got=$(grep -o 'attach: [a-z:]* [a-z ]*' "s$round.err" | tail -1 | sed 's/ *$//')
	check "round $round: the program runs on after sonde's SIGKILL (${got:-before the first phase})" kill -0 "$pid"
	check "round $round: no agent left recording" agent_ended "$pid"
	echo go >&3
	wait_for "s$round.out" "^phase 1" || true
	finish
	check "round $round: same output and exit status" cmp -s ref.out "s$round.out"
done

# The kill lands during the stop call (its 20 ms grace period): sonde is
# told to end with SIGINT and killed a moment later.
for round in 1 2 3; do
	start "e$round"
	record_attached "e$round" || notok "round $round: attach" "$(cat "e$round.err")"
	echo go >&3
	wait_for "e$round.out" "^phase 1" || true
	kill -INT $sp
	sleep "$(printf "0.%03d" $((round * 3)))"
	kill -KILL $sp 2>/dev/null
	wait $sp 2>/dev/null
	check "end round $round: no agent left recording" agent_ended "$pid"
	finish
	check "end round $round: same output and exit status" cmp -s ref.out "e$round.out"
done

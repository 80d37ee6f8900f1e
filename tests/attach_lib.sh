# tests/attach_lib.sh — helpers of the `sonde record -p` and `sonde probe -p`
# tests (sourced after lib.sh): the program started in the background,
# waiting on a FIFO, the agent's end, and the kill of sonde while attached.
# start NAME [N]: $ATTACH_PROG (default ./ap, tests/progs/attach_profile.c)
# on NAME.fifo in the background, its output and exit status in NAME.out,
# its stderr in NAME.perr; sets pid and runner; fd 3 is the FIFO's write end.
start() {
	rm -f "$1.fifo" "$1.pid"
	mkfifo "$1.fifo"
	("${ATTACH_PROG:-./ap}" "$1.fifo" "$1.pid" ${2:-} > "$1.out" 2> "$1.perr"; echo "status $?" >> "$1.out") &
	runner=$!
	started "$1"
}
# started NAME: once the program wrote NAME.pid (up to 20 s), pid is its
# pid and fd 3 the write end of NAME.fifo; the test ends if it did not start
started() {
	for _ in $(seq 1000); do [ -s "$1.pid" ] && break; sleep 0.02; done
	pid=$(cat "$1.pid" 2>/dev/null) || { notok "start $1" "the program did not start"; exit 0; }
	exec 3>"$1.fifo"
}
# launch_recorded NAME [OPTIONS...]: $ATTACH_PROG launched under `sonde
# record OPTIONS -o NAME.data` in the background (sonde's pid in lp; the
# program's output in NAME.out, sonde's stderr in NAME.err), then started
launch_recorded() {
	local name=$1
	shift
	rm -f "$name.fifo" "$name.pid" "$name.out"
	mkfifo "$name.fifo"
	"$SONDE" record "$@" -o "$name.data" -- "${ATTACH_PROG:-./ap}" "$name.fifo" "$name.pid" > "$name.out" 2> "$name.err" &
	lp=$!
	started "$name"
}
wait_for() { # FILE PATTERN: up to 20 s
	for _ in $(seq 1000); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.02; done
	return 1
}
finish() { echo more >&3; exec 3>&-; wait "$runner"; }
# record_attached NAME [OPTIONS...]: `sonde record OPTIONS -p $pid -o
# NAME.data` in the background (its pid in sp, its stderr in NAME.err); 0
# once it says it records, 1 if it has not within 20 s.
record_attached() {
	local name=$1
	shift
	"$SONDE" record "$@" -p "$pid" -o "$name.data" 2> "$name.err" &
	sp=$!
	wait_for "$name.err" "recording process $pid"
}
# probe_attached PID ERR [OPTIONS...]: `sonde probe OPTIONS -p PID` in the
# background (its pid in sonde_pid, its stderr in ERR); returns once it says
# its probes are in (or after 10 s: the checks that follow say what failed).
probe_attached() {
	local p=$1 err=$2
	shift 2
	"$SONDE" probe -p "$p" "$@" 2> "$err" &
	sonde_pid=$!
	for _ in $(seq 500); do grep -q '^sonde: probes in process' "$err" && break; sleep 0.02; done
}
# run_plain NAME [N]: the program's run without sonde, phase 1 then the
# rest, in NAME.out.
run_plain() {
	start "$@"
	echo go >&3
	wait_for "$1.out" "^phase 1"
	finish
}
# reference_run STATUS: run_plain ref: ok when it ended with its exit status
# STATUS.
reference_run() {
	run_plain ref
	check "reference run: finished with status $1" grep -qx "status $1" ref.out
}
# ended_with_program NAME: the program started as NAME (start), sonde ($sp)
# attached to it; let the program run to its end: sonde must end by itself
# within 10 s, with status 0, and the program's output and status be
# ref.out's.
ended_with_program() {
	echo go >&3
	finish
	for _ in $(seq 500); do kill -0 $sp 2>/dev/null || break; sleep 0.02; done
	if kill -0 $sp 2>/dev/null; then
		notok "the process's end ends the recording" "sonde still runs 10 s after it"
		kill -INT $sp
	fi
	wait $sp
	local rc=$?
	check "the process's end: sonde ends with status 0" test $rc -eq 0
	check "the process's end: output and status unchanged" cmp -s ref.out "$1.out"
}
# agent_running PID: the agent's watcher thread (named sonde-agent) is there
# within 10 s (the agent's start creates it; the thread names itself when it
# first runs, which may be after sonde says it records).
agent_running() {
	for _ in $(seq 500); do
		grep -qx sonde-agent /proc/$1/task/*/comm 2>/dev/null && return 0
		sleep 0.02
	done
	return 1
}
# agent_ended PID: the agent's watcher thread (named sonde-agent) is gone
# within 5 s: it exits only after it has put back what it changed (sleds,
# GOT entries).
agent_ended() {
	for _ in $(seq 250); do
		grep -qx sonde-agent /proc/$1/task/*/comm 2>/dev/null || return 0
		sleep 0.02
	done
	return 1
}
# need_ptrace NAME: skip (and exit) unless ptrace of a non-child is allowed.
need_ptrace() {
	local scope
	scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
	if [ "$(id -u)" != 0 ] && [ "$scope" != 0 ]; then
		skip "$1" "ptrace of a non-child needs root or kernel.yama.ptrace_scope 0 (it is $scope)"
		exit 0
	fi
}
# sigkill_attached R TAG DELAY PLAIN: the program, started in the background
# ($runner) with its output and a last line "status N" in TAG.out, waits for
# the file go.TAG; sonde ($sonde_pid, its stderr in TAG.err) is attached.
# Let the program go, SIGKILL sonde DELAY s later, wait for both: ok when
# the program's output (without its first line, "ready PID") is PLAIN's and
# its status 3, as in its plain run.
sigkill_attached() {
	touch "go.$2"
	sleep "$3"
	kill -KILL "$sonde_pid"
	wait "$sonde_pid" 2>/dev/null
	wait "$runner"
	if head -n -1 "$2.out" | sed 1d | cmp -s - "$4" && grep -qx "status 3" "$2.out"; then
		ok "sigkill $1 (attached): program finished normally"
	else
		notok "sigkill $1 (attached): program finished normally" "$(tail -3 "$2.out"; tail -2 "$2.err" 2>/dev/null)"
	fi
}

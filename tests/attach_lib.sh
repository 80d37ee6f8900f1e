# tests/attach_lib.sh — helpers of the `sonde record -p` tests (sourced after
# lib.sh): the program started in the background, waiting on a FIFO, and the
# agent's end.
# start NAME [N]: $ATTACH_PROG (default ./ap, tests/progs/attach_profile.c)
# on NAME.fifo in the background, its output and exit status in NAME.out,
# its stderr in NAME.perr; sets pid and runner; fd 3 is the FIFO's write end.
start() {
	rm -f "$1.fifo" "$1.pid"
	mkfifo "$1.fifo"
	("${ATTACH_PROG:-./ap}" "$1.fifo" "$1.pid" ${2:-} > "$1.out" 2> "$1.perr"; echo "status $?" >> "$1.out") &
	runner=$!
	for _ in $(seq 250); do [ -s "$1.pid" ] && break; sleep 0.02; done
	pid=$(cat "$1.pid" 2>/dev/null) || { notok "start $1" "the program did not start"; exit 0; }
	exec 3>"$1.fifo"
}
wait_for() { # FILE PATTERN: up to 20 s
	for _ in $(seq 1000); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.02; done
	return 1
}
finish() { echo more >&3; exec 3>&-; wait "$runner"; }
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

#!/usr/bin/env bash
# tests/run.sh — runs the unit test binaries ($BUILD/tests/unit/*, built from
# tests/unit/*.c) and the end-to-end scripts (tests/e2e/*.sh), several at once.
#
#   BUILD=build bash tests/run.sh [--unit | --e2e] [--list]
#
# Environment: BUILD (required), T or TESTS (a filter: the tests whose name,
# unit/NAME or e2e/NAME, contains one of its space-separated words; shell
# patterns allowed), J (how many tests run at once; default one more than the
# number of cores: the tests wait for programs, sockets and stubs a tenth of
# their time, and the one more keeps the cores busy meanwhile), TEST_TIMEOUT (seconds per test; default 600, or the script's own
# "# test-timeout: SECONDS" line).  `make check`, `make unit`, `make e2e` and
# `make check-list` call it.
#
# Each test prints lines "ok - NAME" or "not ok - NAME: why" (and "skip -
# NAME: why", which counts as neither passed nor failed and is listed at the
# end); a test that prints none of these lines, or exits non-zero without a
# "not ok" line, fails.  Each test runs in a directory of its own, its whole
# output kept in $BUILD/test-logs/<unit|e2e>_NAME.log.  Results are printed
# test by test in the order of the list (a test's lines together, once it has
# ended and every test before it has), then the skipped checks, the failed
# tests and "N passed, N failed".  Exit status non-zero if anything failed.
#
# The unit tests start first, then the longest end-to-end tests, so that the
# last minutes are not one long test on one core: their durations are kept in $BUILD/test-durations (one
# "NAME SECONDS CPU-SECONDS" a line, rewritten after each run); a test not in it yet
# takes its estimate from the list below.  (The third column is the CPU
# seconds the test used, its own and its children's: a measure that the
# machine's load does not stretch.)
set -u
: "${BUILD:?BUILD must point at the build directory}"
root=$(cd "$(dirname "$0")/.." && pwd)
layer=all list=0
for a in "$@"; do
	case $a in
	--unit) layer=unit ;;
	--e2e) layer=e2e ;;
	--list) list=1 ;;
	*) echo "usage: BUILD=DIR [T=PATTERN] [J=N] bash tests/run.sh [--unit|--e2e] [--list]" >&2; exit 2 ;;
	esac
done
filter="${T:-${TESTS:-}}"
jobs="${J:-}"
# The tests see none of the runner's own settings (lib.sh has a T of its own).
unset T TESTS J

# Seconds of a whole run (a clean clone's first pass, J=2 on 2 cores, the
# test cache empty at first; 2026-11-27): the order of a first run, before
# $BUILD/test-durations exists.
known_slow() {
	case $1 in
	e2e/profile_realprogs) echo 270 ;;
	e2e/patch_leveldb) echo 200 ;;
	e2e/fuzz_reader) echo 145 ;;
	e2e/record_scribble) echo 75 ;;
	e2e/probe_stack) echo 56 ;;
	e2e/record_mcu) echo 53 ;;
	e2e/patch_zstd) echo 52 ;;
	e2e/locks_trace) echo 46 ;;
	e2e/record_survive) echo 45 ;;
	e2e/exitsled) echo 42 ;;
	e2e/probe_agent_var) echo 41 ;;
	e2e/export_perfetto) echo 40 ;;
	e2e/profile_lua) echo 37 ;;
	e2e/patch_lua) echo 36 ;;
	e2e/probe_mcu) echo 36 ;;
	e2e/probe_remote) echo 35 ;;
	e2e/attach_cxx) echo 34 ;;
	e2e/probe_remote_count) echo 31 ;;
	e2e/probe_agent_realprogs) echo 27 ;;
	e2e/probe_agent) echo 25 ;;
	unit/*) echo 2 ;;
	*) echo 15 ;;
	esac
}

# The list: NAME and the command that runs it.
names=() cmds=()
add() { # NAME FILE: NAME if it passes the filter
	if [ -n "$filter" ]; then
		local w hit=0 words
		read -ra words <<<"$filter"
		for w in "${words[@]}"; do [[ "$1" == *$w* ]] && { hit=1; break; }; done
		[ $hit = 1 ] || return 0
	fi
	names+=("$1") cmds+=("$2")
}
if [ $layer != e2e ]; then
	for s in "$root"/tests/unit/*.c; do
		[ -f "$s" ] && add "unit/$(basename "$s" .c)" "$BUILD/tests/unit/$(basename "$s" .c)"
	done
fi
if [ $layer != unit ]; then
	for s in "$root"/tests/e2e/*.sh; do
		[ -f "$s" ] && add "e2e/$(basename "$s" .sh)" "$s"
	done
fi
if [ $list = 1 ]; then
	[ ${#names[@]} -gt 0 ] && printf '%s\n' "${names[@]}"
	exit 0
fi
n=${#names[@]}
if [ "$n" -eq 0 ]; then
	echo "no test matches '$filter' (make check-list lists them)" >&2
	exit 1
fi
[ -n "$jobs" ] || jobs=$(($(nproc 2>/dev/null || echo 2) + 1))
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "J must be a positive number, not '$jobs'" >&2; exit 2; }

export BUILD SONDE="$BUILD/bin/sonde" SONDE_CC="${SONDE_CC_REAL:-cc}" ROOT="$root"
logs="$BUILD/test-logs"
mkdir -p "$logs"
durations="$BUILD/test-durations"
# Each test's working directory (and the runner's bookkeeping) in here.
work=$(mktemp -d "${TMPDIR:-/tmp}/sonde-tests.XXXXXX")

# run_one I: test I, in the background: its output in its log, then
# "STATUS SECONDS" in $work/I.done (written last: the runner's sign that it ended).
run_one() {
	local i=$1 name=${names[$1]} cmd=${cmds[$1]}
	local log="$logs/$(echo "$name" | tr '/' '_').log"
	local limit=${TEST_TIMEOUT:-600} own
	# a script may ask for more time with a line "# test-timeout: SECONDS"
	case $cmd in *.sh) own=$(sed -n 's/^# test-timeout: \([0-9][0-9]*\).*$/\1/p' "$cmd" | head -1) ;; *) own= ;; esac
	[ -n "$own" ] && [ -z "${TEST_TIMEOUT:-}" ] && limit=$own
	local dir="$work/$i" start=$SECONDS rc
	mkdir -p "$dir"
	case $cmd in *.sh) set -- bash "$cmd" ;; *) set -- "$cmd" ;; esac
	# timeout puts the test in a process group of its own: the runner's
	# trap asks timeout (its pid in $work/I.pid) to end the whole group.
	( cd "$dir" && exec env SONDE_TEST_SCRATCH="$work/$i.scratch" timeout "$limit" "$@" ) >"$log" 2>&1 &
	echo $! >"$work/$i.pid"
	wait $!
	rc=$?
	[ $rc -eq 124 ] && echo "not ok - $name: killed after $limit s (TEST_TIMEOUT, or a '# test-timeout:' line)" >>"$log"
	# the CPU time of the test and what it waited for (times: its second line, the children's)
	local cpu
	times >"$work/$i.times"
	cpu=$(awk 'NR == 2 { for (k = 1; k <= 2; k++) { split($k, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%d", t + 0.5 }' "$work/$i.times")
	echo "$rc $((SECONDS - start)) ${cpu:-0}" >"$work/$i.done.tmp" && mv "$work/$i.done.tmp" "$work/$i.done"
}

stop() {
	local p
	for p in "$work"/*.pid; do
		[ -f "$p" ] && [ ! -f "${p%.pid}.done" ] && kill -TERM "$(cat "$p")" 2>/dev/null
	done
	wait
	echo "interrupted; logs in $logs" >&2
	rm -rf "$work"
	exit 130
}
trap stop INT TERM

# The order in which they start: the unit tests (seconds in all, and first
# in the list: their results show at once), then the longest expected first,
# else the list's order.
order=$(
	for ((i = 0; i < n; i++)); do
		s=$(awk -v t="${names[$i]}" '$1 == t { s = $2 } END { if (s != "") print s }' "$durations" 2>/dev/null)
		[ -n "$s" ] || s=$(known_slow "${names[$i]}")
		case ${names[$i]} in unit/*) echo "0 $s $i" ;; *) echo "1 $s $i" ;; esac
	done | sort -k1,1n -k2,2nr -k3,3n | cut -d' ' -f3
)

pass=0 fail=0 skip=0 cpus=0
failed=() skipped=() took=() cpu_of=()
# report I: test I's lines, counted (once it has ended).
report() {
	local i=$1 name=${names[$1]} rc secs cpu p f s d
	local log="$logs/$(echo "$name" | tr '/' '_').log" scratch="$work/$1.scratch"
	read -r rc secs cpu <"$work/$i.done"
	took[$i]=$secs cpu_of[$i]=${cpu:-0} cpus=$((cpus + ${cpu:-0}))
	p=$(grep -c '^ok - ' "$log"); f=$(grep -c '^not ok - ' "$log"); s=$(grep -c '^skip - ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1; echo "not ok - $name: exited with status $rc" >>"$log"
	elif [ $((p + f + s)) -eq 0 ]; then
		f=1; echo "not ok - $name: printed no ok, not ok or skip line" >>"$log"
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	grep -E '^(ok|not ok|skip) - ' "$log" | sed "s|^|[$name] |"
	# the scratch directories of a test that passed go (a whole run left
	# gigabytes of recordings behind); a failed test's stay, named in its log
	if [ "$f" -eq 0 ]; then
		if [ -f "$scratch" ]; then
			while IFS= read -r d; do
				case "$d" in */sonde-e2e.*) rm -rf -- "$d" ;; esac
			done <"$scratch"
		fi
		rm -rf -- "${work:?}/$i"
	else
		[ -f "$scratch" ] && sed 's/^/scratch kept: /' "$scratch" >>"$log"
		echo "working directory kept: $work/$i" >>"$log"
		failed+=("$name")
		echo "---- $name log (last 30 lines; all of it in $log) ----"; tail -n 30 "$log"; echo "----"
	fi
	while IFS= read -r l; do skipped+=("$name: $l"); done < <(grep '^skip - ' "$log")
}

# status: on a terminal, one line on stderr saying what runs.
status() {
	[ -t 2 ] || return 0
	local i r=""
	for i in "${!running[@]}"; do r="$r ${names[$i]#*/}"; done
	printf '\r\033[K[%d/%d done] running:%s' "$done_count" "$n" "$r" | cut -c1-"${COLUMNS:-100}" >&2
}

t0=$SECONDS
declare -A running=()
done_count=0 next=0
pending=($order)
for ((i = 0; i < n; i++)); do ended[$i]=0; done
while [ ${#pending[@]} -gt 0 ] || [ ${#running[@]} -gt 0 ]; do
	while [ ${#pending[@]} -gt 0 ] && [ ${#running[@]} -lt "$jobs" ]; do
		i=${pending[0]}
		pending=("${pending[@]:1}")
		run_one "$i" &
		running[$i]=$!
	done
	status
	wait -n 2>/dev/null
	lost=$?
	for i in "${!running[@]}"; do
		if [ -f "$work/$i.done" ]; then
			unset "running[$i]"
			ended[$i]=1
			done_count=$((done_count + 1))
		elif [ $lost = 127 ]; then # no child left, no result: should not happen
			echo "127 0" >"$work/$i.done"
		fi
	done
	if [ $next -lt $n ] && [ "${ended[$next]}" = 1 ]; then
		[ -t 2 ] && printf '\r\033[K' >&2
		while [ $next -lt $n ] && [ "${ended[$next]}" = 1 ]; do
			report $next
			next=$((next + 1))
		done
	fi
done
[ -t 2 ] && printf '\r\033[K' >&2
wait

# Durations: this run's, and those from before of the tests that still exist.
{
	for ((i = 0; i < n; i++)); do echo "${names[$i]} ${took[$i]} ${cpu_of[$i]}"; done
	[ -f "$durations" ] && while read -r t rest; do
		case $t in
		unit/*) [ -f "$root/tests/$t.c" ] && echo "$t $rest" ;;
		e2e/*) [ -f "$root/tests/$t.sh" ] && echo "$t $rest" ;;
		esac
	done <"$durations"
} | awk '!seen[$1]++' | sort >"$durations.tmp" && mv "$durations.tmp" "$durations"
# the working directories of failed tests stay
rm -f "$work"/*.pid "$work"/*.done "$work"/*.times "$work"/*.scratch
rmdir "$work" 2>/dev/null

if [ ${#skipped[@]} -gt 0 ]; then
	echo "skipped (not counted as passed):"; printf '  %s\n' "${skipped[@]}"
fi
if [ ${#failed[@]} -gt 0 ]; then
	# what failed, again at the very end: a CI shows only the output's tail
	echo "failed: ${failed[*]}"
	for name in "${failed[@]}"; do
		grep '^not ok - ' "$logs/$(echo "$name" | tr '/' '_').log" | head -n 8 | cut -c1-300 | sed "s|^|  [$name] |"
	done
fi
slow=$(for ((i = 0; i < n; i++)); do echo "${took[$i]} ${names[$i]}"; done | sort -nr | head -5 |
	awk '{ printf "%s%s %ds", sep, $2, $1; sep = ", " }')
echo "$n tests in $((SECONDS - t0)) s, $jobs at once ($cpus s of CPU); the longest: $slow; logs in $logs"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

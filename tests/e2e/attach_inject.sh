#!/usr/bin/env bash
# attach_inject.sh — src/attach/inject.c through tests/tools/inject: a running
# plain gcc program (tests/progs/attach_target.c) loads a library on each of
# its threads (main in pthread_join, one in nanosleep, one in read() of a
# FIFO, one deep in recursion), 5 rounds; each library's constructor leaves a
# marker; the program's output and exit status equal those of a run without
# injection, and it saw no EINTR and no short sleep.  Then the errors: no such
# process, a static binary, dlopen's own failure (the message python's ctypes
# gets from dlerror for the same file), the process exiting during the call,
# another tracer, another user.  Needs ptrace of a non-child: root, or
# kernel.yama.ptrace_scope 0.
source "$ROOT/tests/lib.sh"

INJ="$BUILD/tests/tools/inject"
scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
if [ "$(id -u)" != 0 ] && [ "$scope" != 0 ]; then
	skip "attach inject" "ptrace of a non-child needs root or kernel.yama.ptrace_scope 0 (it is $scope)"
	exit 0
fi
[ -x "$INJ" ] || { notok build "$INJ missing (make check builds it)"; exit 0; }
gcc -O2 -g -pthread -I"$PROGS" -o target "$PROGS/attach_target.c" || { notok build "gcc target"; exit 0; }
for m in main sleeper reader recurse; do
	gcc -O2 -shared -fPIC -DMARK="\"$m\"" -o "lib$m.so" "$PROGS/attach_marker.c" ||
		{ notok build "gcc lib$m.so"; exit 0; }
done
gcc -O2 -shared -fPIC -DMARK='"exit"' -DEXIT_CODE=7 -o libexit.so "$PROGS/attach_marker.c" ||
	{ notok build "gcc libexit.so"; exit 0; }
export ATTACH_MARKER_DIR="$PWD/markers"
mkdir -p "$ATTACH_MARKER_DIR"
PAYLOAD_BYTES=3001

# start NAME: runs the target on fifo NAME.fifo in the background, output in
# NAME.out (its exit status appended); sets pid and the thread ids.
start() {
	rm -f "$1.fifo" "$1.tids"
	mkfifo "$1.fifo"
	(./target "$1.fifo" "$1.tids" > "$1.out"; echo "status $?" >> "$1.out") &
	runner=$!
	for _ in $(seq 200); do [ -s "$1.tids" ] && break; sleep 0.02; done
	pid=$(awk '$1=="main"{print $2}' "$1.tids")
	exec 3>"$1.fifo"   # the reader's open() returns: it now blocks in read()
	sleep 0.2
}
# finish: feeds the reader a fixed payload and waits for the target.
head -c "$PAYLOAD_BYTES" /dev/zero | tr '\0' 'q' > payload
finish() { cat payload >&3; exec 3>&-; wait "$runner"; }
# The reference: the same run, nothing injected.
start ref
finish
check "reference run: finished normally" grep -qx "attach_target: done" ref.out
check "reference run: the reader got the payload" \
	grep -qx "reader: $PAYLOAD_BYTES bytes, sum $((PAYLOAD_BYTES * 113)), eintr 0, errors 0" ref.out

want_sys() { # thread: system call number the restart case needs, and its restart code
	case $1 in
	main) echo "202 -512" ;;       # futex (pthread_join), -ERESTARTSYS
	sleeper) echo "230 -516" ;;    # clock_nanosleep, -ERESTART_RESTARTBLOCK
	reader) echo "0 -512" ;;       # read, -ERESTARTSYS
	recurse) echo "-1" ;;          # in user code: no system call
	esac
}
declare -A exercised
fails=0
for round in 1 2 3 4 5; do
	start "r$round"
	bad=""
	for who in main sleeper reader recurse; do
		tid=$(awk -v w="$who" '$1==w{print $2}' "r$round.tids")
		"$INJ" --tid "$tid" "$pid" "./lib$who.so" > "r$round.$who.inj" 2> "r$round.$who.err"
		rc=$?
		[ $rc -eq 0 ] || { bad="$bad $who: inject exit $rc ($(cat "r$round.$who.err"))"; continue; }
		grep -Eq '^handle 0x[0-9a-f]*[1-9a-f][0-9a-f]*$' "r$round.$who.inj" || bad="$bad $who: no handle"
		[ "$(cat "$ATTACH_MARKER_DIR/$who.$pid" 2>/dev/null)" = "$pid" ] || bad="$bad $who: no marker"
		grep -q "$PWD/lib$who.so" "/proc/$pid/maps" || bad="$bad $who: not in /proc/$pid/maps"
		stopped=$(sed -n 's/^stopped tid [0-9]* syscall \(-*[0-9]*\) return \(-*[0-9]*\)$/\1 \2/p' \
		          "r$round.$who.inj")
		w=$(want_sys "$who")
		[ "$stopped" = "$w" ] || [ "${stopped%% *}" = "$w" ] && exercised[$who]=$((${exercised[$who]:-0} + 1))
	done
	if [ "$round" = 1 ]; then
		# dlopen's own failure, on the same running program: dlerror's words.
		echo "not a library" > bad.so
		want=$(python3 -c "import ctypes,sys
try: ctypes.CDLL(sys.argv[1])
except OSError as e: print(e)" "$PWD/bad.so")
		"$INJ" "$pid" ./bad.so > bad.inj 2> bad.err
		rc=$?
		check "dlopen failure: exit 2" test $rc -eq 2
		check "dlopen failure: dlerror's message ($want)" \
			grep -qxF "sonde: error: dlopen of $PWD/bad.so failed in process $pid ($want)" bad.err
	fi
	finish
	cmp -s ref.out "r$round.out" || bad="$bad output or status differs: $(diff ref.out "r$round.out" | tr '\n' ' ')"
	if [ -n "$bad" ]; then
		notok "round $round: 4 libraries loaded, output and status unchanged" "$bad"
		fails=$((fails + 1))
	else
		ok "round $round: 4 libraries loaded, output and status unchanged"
	fi
done
# A thread may also be caught just as its call completes (return 0): each
# restart case must have been met at least once.
for who in main sleeper reader recurse; do
	check "stopped where intended ($who: $(want_sys "$who")) in ${exercised[$who]:-0} of 5 rounds" \
		test "${exercised[$who]:-0}" -ge 1
done
check "no EINTR, no short sleep in any round" \
	bash -c 'grep -h "eintr" r?.out | grep -v "eintr 0" | grep -c . | grep -qx 0'

# ---- errors ----
true & gone=$!
wait $gone
"$INJ" "$gone" ./libmain.so > /dev/null 2> gone.err
rc=$?
check "no such process: exit 2" test $rc -eq 2
check "no such process: one clear line" \
	grep -qx "sonde: error: cannot attach to process $gone (no such process)" gone.err

if gcc -static -O2 -o static_prog -x c - <<< 'int main(void){for(;;)__asm__ volatile("pause");}' 2>/dev/null; then
	./static_prog & st=$!
	sleep 0.1
	"$INJ" "$st" ./libmain.so > /dev/null 2> static.err
	rc=$?
	check "static binary: exit 2" test $rc -eq 2
	check "static binary: says why" grep -q "^sonde: error: no dlopen in process $st (.*static binary" static.err
	check "static binary: left running" kill -0 "$st"
	kill "$st"; wait "$st" 2>/dev/null
else
	skip "static binary" "gcc -static failed (no libc.a: Debian package libc6-dev)"
fi

# The process ends during the call: the library's constructor calls _exit(7).
(sleep 30; echo "status $?") > exiting.out &
sleep 0.2
sl=$(pgrep -P $! -x sleep)
"$INJ" "$sl" ./libexit.so > /dev/null 2> exiting.err
rc=$?
wait
check "process ends during the call: exit 2" test $rc -eq 2
check "process ends during the call: says so" \
	grep -qx "sonde: error: process $sl ended during the call (exit status 7)" exiting.err
check "process ends during the call: its status is the constructor's" grep -qx "status 7" exiting.out

# Another tracer holds the process.
if command -v strace > /dev/null; then
	sleep 30 & sl=$!
	strace -q -p "$sl" -o /dev/null & tracer=$!
	for _ in $(seq 100); do
		[ "$(awk '/^TracerPid/{print $2}' /proc/$sl/status)" = "$tracer" ] && break; sleep 0.02
	done
	"$INJ" "$sl" ./libmain.so > /dev/null 2> traced.err
	rc=$?
	check "traced already: exit 2" test $rc -eq 2
	check "traced already: names the tracer" \
		grep -q "^sonde: error: cannot attach to process $sl (already traced by process $tracer (strace)" traced.err
	kill "$tracer" 2>/dev/null; wait "$tracer" 2>/dev/null
	kill "$sl"; wait "$sl" 2>/dev/null
else
	skip "traced already" "strace is not installed"
fi

# Another user's process (root only: setpriv switches users).
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups sleep 30 & sl=$!
	sleep 0.2
	cp libmain.so /tmp/sonde-libmain-$$.so && chmod 644 /tmp/sonde-libmain-$$.so
	setpriv --reuid=65533 --regid=65533 --clear-groups "$INJ" "$sl" /tmp/sonde-libmain-$$.so > /dev/null 2> user.err
	rc=$?
	check "another user: exit 2" test $rc -eq 2
	check "another user: says whose process it is" \
		grep -q "^sonde: error: cannot attach to process $sl (it runs as user 65534, sonde as user 65533" user.err
	# The same user may: ptrace_scope permitting.
	if [ "$scope" = 0 ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups "$INJ" "$sl" /tmp/sonde-libmain-$$.so \
			> /dev/null 2> sameuser.err
		check "same ordinary user: loaded" test $? -eq 0
	else
		skip "same ordinary user" "kernel.yama.ptrace_scope is $scope"
	fi
	kill "$sl"; wait "$sl" 2>/dev/null
	rm -f /tmp/sonde-libmain-$$.so
else
	skip "another user" "needs root and setpriv"
fi
exit 0

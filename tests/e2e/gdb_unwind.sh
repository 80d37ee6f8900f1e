#!/usr/bin/env bash
# gdb_unwind.sh — gdb's bt through recorded frames whose return address sonde
# replaced (no exit sleds), with sonde's gdb unwinder (tools/gdb/sonde_unwind.py,
# installed as lib/sonde/sonde_unwind.py and libsonde-rt.so-gdb.py; see
# docs/INSTRUMENTATION.md "Outside observers").  tests/progs/gdb_unwind.c:
# main -> a -> b -> c, c sleeps, in a loop.  gdb attaches (-p) to
#  - the plain gcc -O2 build, unrecorded: the expected frames, c b a main;
#  - the same binary under `sonde record` (patched without a rebuild,
#    rt_exit_tramp_full), and attached with `sonde record -p`;
#  - a clang -O2 build through sonde-cc (rt_exit_tramp, if it has no exit
#    sleds) under `sonde record`.
# With the unwinder sourced (and auto-loaded where safe-path allows), bt's
# function names from c down are the plain run's; without it they are not
# (?? frames from libsonde-rt.so), which shows the check can fail; also
# without libthread_db (the session's thread table instead of TLS), and at
# breakpoints inside the trampolines (the callers below them).  Needs gdb
# and ptrace of a non-child.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
gdb=$(command -v gdb) || { skip "gdb unwinder" "gdb not installed"; exit 0; }
need_ptrace "gdb unwinder"
UNW=$BUILD/lib/sonde/sonde_unwind.py
gcc -O2 -g -o plain "$PROGS/gdb_unwind.c" || { notok build "gcc"; exit 0; }

# names FILE: the function of each bt frame, from c() down
names() { sed -nE 's/^#[0-9]+ +(0x[0-9a-f]+ in )?([^ ]+) .*/\2/p' "$1" | sed -n '/^c$/,$p' | tr '\n' ' '; }
# bt PID OUT [gdb options...]: gdb attached to PID, bt into OUT (names from
# c down in OUT.names); tries again (up to 3 times) when the thread was
# caught outside c()'s sleep
bt() {
	local p=$1 out=$2
	shift 2
	for _ in 1 2 3; do
		"$gdb" -q -nx -batch -iex 'set auto-load python-scripts off' "$@" -p "$p" -ex 'bt 30' >"$out" 2>&1 </dev/null
		names "$out" >"$out.names"
		grep -q '^c ' "$out.names" && return
		sleep 0.1
	done
}
# wait_pid FILE: the pid the program wrote
wait_pid() {
	for _ in $(seq 250); do [ -s "$1" ] && break; sleep 0.02; done
	cat "$1" 2>/dev/null
}
stop_prog() { kill -TERM "$1" 2>/dev/null; for _ in $(seq 250); do kill -0 "$1" 2>/dev/null || return; sleep 0.02; done; }

./plain ref.pid >ref.out &
ref=$(wait_pid ref.pid)
bt "$ref" ref.bt
stop_prog "$ref"
wait
want=$(cat ref.bt.names)
if [ "$(echo $want | cut -d' ' -f1-4)" != "c b a main" ]; then
	notok "plain run: bt from c() is c b a main" "got '$want' (see $PWD/ref.bt)"
	exit 0
fi
ok "plain run under gdb: $want"

# inside NAME PID TRAMP+OFF: stopped at a breakpoint inside an exit
# trampoline (frame #0): the frames below it are the plain run's below c()
inside() {
	"$gdb" -q -nx -batch -iex "source $UNW" -p "$2" -ex "break *($3)" -ex continue -ex 'bt 30' >"$1.in" 2>&1 </dev/null
	local got
	got=$(sed -nE 's/^#[0-9]+ +(0x[0-9a-f]+ in )?([^ ]+) .*/\2/p' "$1.in" | tr '\n' ' ')
	if [ "$got" = "${3%%+*} ${want#c }" ]; then
		ok "$1: stopped at $3, bt shows the trampoline, then the plain run's callers of c()"
	else
		notok "$1: stopped at $3" "got '$got', want '${3%%+*} ${want#c }' (see $PWD/$1.in)"
	fi
}

# compare NAME PID: bt with the unwinder sourced, auto-loaded, and without it
compare() {
	local name=$1 p=$2
	bt "$p" "$name.with" -iex "source $UNW"
	if [ "$(cat $name.with.names)" = "$want" ]; then
		ok "$name: bt with the unwinder sourced has the plain run's frames ($want)"
	else
		notok "$name: bt with the unwinder sourced" "got '$(cat $name.with.names)', want '$want' (see $PWD/$name.with)"
	fi
	bt "$p" "$name.auto" -iex 'set auto-load python-scripts on' -iex "set auto-load safe-path $BUILD/lib/sonde"
	if [ "$(cat $name.auto.names)" = "$want" ]; then
		ok "$name: bt with libsonde-rt.so-gdb.py auto-loaded has the plain run's frames"
	else
		notok "$name: bt with the unwinder auto-loaded" "got '$(cat $name.auto.names)' (see $PWD/$name.auto)"
	fi
	# no libthread_db: gdb cannot read TLS; the unwinder finds the thread's
	# shadow stack in the session's thread table
	bt "$p" "$name.nothreaddb" -iex 'set libthread-db-search-path /nonexistent' -iex "source $UNW"
	if [ "$(cat $name.nothreaddb.names)" = "$want" ]; then
		ok "$name: bt without libthread_db (no TLS in gdb) has the plain run's frames"
	else
		notok "$name: bt without libthread_db" "got '$(cat $name.nothreaddb.names)' (see $PWD/$name.nothreaddb)"
	fi
	[ "${3:-}" = sleds ] && { skip "$name: bt without the unwinder differs" "the build has exit sleds"; return; }
	bt "$p" "$name.without"
	if [ "$(cat $name.without.names)" != "$want" ] && grep -q 'libsonde-rt.so' "$name.without"; then
		ok "$name: without the unwinder bt is not the plain run's ($(cat $name.without.names | cut -c1-60)...)"
	else
		notok "$name: without the unwinder bt differs" "got '$(cat $name.without.names)' (see $PWD/$name.without)"
	fi
}

# patched without a rebuild, at the start
"$SONDE" record -o pat.data -- ./plain pat.pid >pat.out 2>pat.err &
sp=$!
p=$(wait_pid pat.pid)
if [ -n "$p" ]; then
	sleep 0.3
	compare patched "$p"
	inside patched "$p" 'rt_exit_tramp_full+9'
	inside patched "$p" 'rt_exit_tramp_full+33'
	stop_prog "$p"
else
	notok "patched: start" "$(tail -3 pat.err)"
fi
wait $sp
check "patched: sonde recorded the program" grep -q 'recorded 1 process' pat.err

# attached: sonde record -p
./plain att.pid >att.out &
runner=$!
pid=$(wait_pid att.pid)
if record_attached att; then
	sleep 0.3 # a() called again through the patched code
	compare attached "$pid"
	inside attached "$pid" 'rt_exit_tramp_full+28'
	kill -INT $sp
	wait $sp
	check "attached: sonde ends on SIGINT with status 0" test $? -eq 0
else
	notok "attached: sonde record -p" "$(tail -3 att.err)"
	kill -INT $sp 2>/dev/null
fi
stop_prog "$pid"
wait $runner
check "attached: the program ended normally" grep -qx 'done 1' att.out

# clang through sonde-cc
if command -v clang >/dev/null && SONDE_CC=clang "$SONDE_CC_BIN" -O2 -g -o cl "$PROGS/gdb_unwind.c" 2>cl.cc; then
	sleds=
	readelf -SW cl | grep -q ' __sonde_exit_sleds ' && sleds=sleds
	"$SONDE" record -o cl.data -- ./cl cl.pid >cl.out 2>cl.err &
	sp=$!
	p=$(wait_pid cl.pid)
	if [ -n "$p" ]; then
		compare clang "$p" $sleds
		[ -z "$sleds" ] && inside clang "$p" 'rt_exit_tramp+16'
		stop_prog "$p"
	else
		notok "clang: start" "$(tail -3 cl.err)"
	fi
	wait $sp
else
	skip "clang build" "clang not installed or sonde-cc failed"
fi

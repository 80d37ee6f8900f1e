# selfsame.sh — a recorded program cannot tell (issue 27).  tests/progs/
# selfsame.cpp prints what it observes of its own stack and ends: the frames
# backtrace() and _Unwind_Backtrace give (count and names), from main, 11
# frames deep, in a signal handler on an alternate stack and in a
# swapcontext coroutine; the destructors, cleanup handlers, TSD and
# thread_local destructors of threads ended by pthread_exit and by
# pthread_cancel six recorded frames deep; setjmp/longjmp across 20 frames;
# a vfork child; a forked child ending with _exit(7); atexit handlers and
# static destructors after main.  Built once per compiler (g++, clang++) and
# level (-O0, -O2); its output must be byte for byte the plain run's under
# `sonde record`, `sonde record --trace` and (gcc -O2) `sonde record -p`,
# and the recordings' call counts the program's own (matrix_check.py).  The
# forked child's end and status are in the recording (sonde info).  gdb's
# bt at a breakpoint inside a recorded function shows the plain run's
# callers, and so does a `stack:` probe of sonde's (agent engine).  perf's
# DWARF unwinding cannot (docs/INSTRUMENTATION.md says why): not checked.
. "$ROOT/tests/matrix_lib.sh"
trap '' PIPE
for cc in gcc clang; do
	case $cc in gcc) cxx=g++ ;; clang) cxx=clang++ ;; esac
	if ! command -v $cc >/dev/null || ! command -v $cxx >/dev/null; then
		skip "selfsame/$cc" "$cc/$cxx not installed"; continue
	fi
	for opt in O0 O2; do
		m=selfsame/$cc/$opt
		mkdir -p "$T/$cc-$opt" && cd "$T/$cc-$opt" || exit 1
		if build selfsame "$SONDE_CXX_BIN" -rdynamic -pthread "$PROGS/selfsame.cpp" -o selfsame; then
			record selfsame -- ./selfsame
			record selfsame.trace --trace -- ./selfsame
			if [ -s selfsame.out ]; then
				check "$m/selfsame/the forked child's end and status (_exit 7)" \
					grep -q "(exit 7)" <("$SONDE" info -i selfsame.data)
			fi
		fi
		cd "$T" || exit 1
	done
done

# Never built for sonde (its functions patched at the start, docs/INSTRUMENTATION.md
# "Programs never built for sonde"): a plain g++ -O2 build, the same observations.
mkdir -p "$T/plain-O2" && cd "$T/plain-O2" && {
	m=selfsame/plain-g++/O2 cc=gcc cxx=g++ opt=O2
	if build selfsame g++ -rdynamic -pthread "$PROGS/selfsame.cpp" -o selfsame; then
		MATRIX_PLAIN=1 record selfsame -- ./selfsame
		MATRIX_PLAIN=1 record selfsame.trace --trace -- ./selfsame
	fi
}
cd "$T" || exit 1

# Attached (`sonde record -p`, the GOT redirections of got.c): gcc -O2.
cd "$T/gcc-O2" 2>/dev/null && [ -x selfsame ] && {
	m=selfsame/gcc/O2
	record_attached selfsame
}
cd "$T" || exit 1

# gdb's bt at a breakpoint inside a recorded function (show, called by deep
# eleven times, by main; its second call), gcc -O2: the callers of the plain
# run, each recorded frame followed by a sonde_exit_trampoline frame (the
# exit trampoline's own, unwound through its CFI: hooks.c), left out here.
cd "$T/gcc-O2" 2>/dev/null && [ -x selfsame ] && {
	gdb=$(command -v gdb || command -v gdb-multiarch) # CI installs gdb-multiarch
	if [ -n "$gdb" ]; then
		printf 'set pagination off\nbreak show\nignore 1 1\nrun\nbt\n' >bt.gdb
		names() { sed -nE 's/^#[0-9]+ +(0x[0-9a-f]+ in )?([^ ]+) .*/\2/p' "$1" | grep -v '^sonde_exit_trampoline$'; }
		"$gdb" -q -batch -x bt.gdb ./selfsame >bt.plain 2>&1
		"$SONDE" record -o bt.data -- "$gdb" -q -batch -x bt.gdb ./selfsame >bt.rec 2>&1
		if [ "$(names bt.plain | grep -c '^deep$')" = 11 ] && cmp -s <(names bt.plain) <(names bt.rec); then
			ok "selfsame/gdb bt through recorded frames: the plain run's callers"
		else
			notok "selfsame/gdb bt through recorded frames" "$(names bt.plain | tr '\n' ' ') / $(names bt.rec | tr '\n' ' ')"
		fi
	else
		skip "selfsame/gdb bt" "gdb not installed"
	fi
}
cd "$T" || exit 1

# sonde's own stack probes (agent engine: a copy of the stack, unwound by
# sonde) on a recorded process: the plain run's stack.  Needs ptrace.
cd "$T/gcc-O2" 2>/dev/null && {
	stack_names() { # PROGRAM-COMMAND...: the frames of the stack:c probe, attached for 1 s
		# (the program runs until told to stop: a slow attach under load still sees it)
		rm -f stack.stop
		"$@" stack.stop >/dev/null 2>&1 &
		local runner=$! p=""
		for _ in $(seq 600); do p=$(pgrep -n -x selfsame_stack) && break; sleep 0.05; done
		[ -n "$p" ] && "$SONDE" probe -p "$p" --duration 1 -e stack:c 2>/dev/null |
			sed -n '/ distinct stack/,$p' | sed '1d' | sed -E 's/^ +([0-9]+ +)?//; s/ .*//'
		touch stack.stop
		wait $runner
	}
	if "$SONDE_CC_BIN" -O2 -g -I"$PROGS" "$PROGS/selfsame_stack.c" -o selfsame_stack >stack-build.err 2>&1; then
		stack_names ./selfsame_stack >stack.plain
		stack_names "$SONDE" record -o stack.data -- ./selfsame_stack >stack.rec
		if grep -qx main stack.plain && cmp -s stack.plain stack.rec; then
			ok "selfsame/stack probe on a recorded process: the plain run's stack"
		elif ! grep -qx c stack.plain; then
			skip "selfsame/stack probe" "no stack from the plain run (ptrace refused?)"
		else
			notok "selfsame/stack probe on a recorded process" "$(tr '\n' ' ' <stack.plain) / $(tr '\n' ' ' <stack.rec)"
		fi
	else
		notok "selfsame/stack probe: build" "$(head -3 stack-build.err)"
	fi
}
cd "$T" || exit 1
python3 "$ROOT/tests/matrix_check.py" "$jobs"

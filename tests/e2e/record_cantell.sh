# record_cantell.sh — a recorded C program cannot tell (issue 27): what
# tests/progs/cantell.c observes of itself (backtrace and _Unwind_Backtrace
# from main and 11 frames deep; threads ended by pthread_exit and
# pthread_cancel six frames deep, with their cleanup handlers, cleanup
# variables, TSD and thread_local destructors that call recorded functions
# and backtrace; atexit handlers and a destructor function after main; a
# signal handler on an alternate stack in main's own frame, left once by
# siglongjmp; two swapcontext coroutines on neighbouring stacks in main's
# frame (and, in cantell_coro.c, 120 that move between threads); longjmp across 40 frames and back into a live chain; vfork and fork
# children ending with _exit; dlopen through a recorded function's tail call
# of a library only the program's RUNPATH finds) is byte for byte the same plain, under `sonde
# record` and under `sonde record --trace`, for gcc and clang at -O0
# (pthread_cleanup_push's setjmp form) and -O2 -fexceptions (its unwinding
# form, and the cleanup variables run).  The recordings' call counts and the
# callers the program's own stack gives (tests/matrix_check.py) are the
# program's; the fork child's exit status is in `sonde info`.  Attached
# (`sonde record -p`, the GOT redirections), gcc -O2: the same output, and
# the fork child's status.  A
# sampling profiler inside the program (tests/progs/cantell_sample.c: a
# SIGPROF handler that walks the stack while recorded calls run, landing in
# sonde's hooks and trampolines too): its walks reach main.  selfsame.sh is
# its C++ twin.
. "$ROOT/tests/matrix_lib.sh"
trap '' PIPE

# The plain run shows what the cases are about (else a case that observes
# nothing would pass recorded too): the frames of the deep walks, the
# handlers and destructors that ran.
plain_sane() {
	local f=$1
	grep -q '^backtrace 11 deep: 1[0-9] frames:\( deep\)\{11\} main ' <(sed 's/ show_into ?\?//' "$f") &&
		[ "$(grep -c '^  \(TSD\|thread_local\) destructor: [0-9]* frames: show_into t[sl][ds]_end' "$f")" = 4 ] &&
		[ "$(grep -c '^pthread_\(exit\|cancel\): [a-z]*, 6 cleanup handlers' "$f")" = 2 ] &&
		[ "$(grep '^signal handler on the alternate stack' "$f" | grep -o ' sig_deep' | wc -l)" = 11 ] &&
		[ "$(grep '^coroutine 0, 21 frames deep' "$f" | grep -o ' co_rec' | wc -l)" = 21 ] &&
		grep -q '^atexit handler 4 deep: .*\( at_exit_work\)\{4\}' "$f" &&
		grep -q '^fork child: exit 7$' "$f" && grep -q '^vfork child: exit 3$' "$f" &&
		grep -q '^dlopen through a tail call: found, value 42$' "$f"
}

for cc in gcc clang; do
	if ! command -v $cc >/dev/null; then
		skip "cantell/$cc" "$cc not installed"; continue
	fi
	cxx=$cc
	for opt in O0 O2; do
		m=cantell/$cc/$opt
		x=
		[ $opt = O2 ] && x=-fexceptions
		mkdir -p "$T/$cc-$opt/lib" && cd "$T/$cc-$opt" || exit 1
		$cc -shared -fPIC "$PROGS/cantell_dl.c" -o lib/libcantell_dl.so || notok "$m/cantell_dl" "$cc -shared failed"
		if build cantell "$SONDE_CC_BIN" $x -rdynamic -pthread "$PROGS/cantell.c" -o cantell -ldl \
			-Wl,-rpath,'$ORIGIN/lib'; then
			record cantell -- ./cantell
			check "$m/cantell/the plain run observes every case" plain_sane cantell.plain
			record cantell.trace --trace -- ./cantell
			if [ -s cantell.out ]; then
				# the fork child: the main process's child, ended by _exit(7)
				check "$m/cantell/the forked child's exit status (_exit 7)" jq_py \
					<("$SONDE" info -i cantell.data --format=json) \
					'p = d["processes"]; sys.exit(not any(c["ppid"] == p[0]["pid"] and c["exit_status"] == 7 for c in p[1:]))'
			fi
		fi
		cd "$T" || exit 1
	done
done

# Coroutines that move between threads while another thread switches its
# own (tests/progs/cantell_coro.c): the calls, and their callers (a
# coroutine's first function is nobody's call).
mkdir -p "$T/coro" && cd "$T/coro" && {
	m=cantell/coro cc=gcc cxx=gcc opt=O2
	if build cantell_coro "$SONDE_CC_BIN" -pthread "$PROGS/cantell_coro.c" -o cantell_coro; then
		record cantell_coro -- ./cantell_coro
		record cantell_coro.trace --trace -- ./cantell_coro
	fi
}
cd "$T" || exit 1

# Never built for sonde (its functions patched at the start: they return
# through rt_exit_tramp_full and enter through their stubs' common entry): a
# plain gcc -O2 -fexceptions build, the same observations.
mkdir -p "$T/plain-O2/lib" && cd "$T/plain-O2" && {
	m=cantell/plain-gcc/O2 cc=gcc cxx=gcc opt=O2
	gcc -shared -fPIC "$PROGS/cantell_dl.c" -o lib/libcantell_dl.so || notok "$m/cantell_dl" "gcc -shared failed"
	if build cantell gcc -fexceptions -rdynamic -pthread "$PROGS/cantell.c" -o cantell -ldl -Wl,-rpath,'$ORIGIN/lib'; then
		MATRIX_PLAIN=1 record cantell -- ./cantell
		MATRIX_PLAIN=1 record cantell.trace --trace -- ./cantell
	fi
}
cd "$T" || exit 1

# Attached (`sonde record -p`: swapcontext, the unwinder's entry points and
# thread_local destructors reached through the GOT, got.c): gcc -O2.
cd "$T/gcc-O2" 2>/dev/null && [ -x cantell ] && {
	m=cantell/gcc/O2
	record_attached cantell
	check "$m/attached/the forked child's exit status (_exit 7)" jq_py \
		<("$SONDE" info -i attached.data --format=json) \
		'p = d["processes"]; sys.exit(not any(c["ppid"] == p[0]["pid"] and c["exit_status"] == 7 for c in p[1:]))'
}
cd "$T" || exit 1

# The sampling profiler: every walk reaches main, plain and recorded (a
# signal that lands anywhere in the exit trampoline or the exit hook it
# calls is unwound through them; before the trampolines had unwind
# information at every instruction, half the recorded walks ended there).
# Samples are CPU time: the recorded run makes enough of them.  A plain
# build recorded without a rebuild: at least 80% (its functions are entered
# through stubs, whose common entry has unwind information too; a signal in
# a stub itself, where this program's empty functions run whole, ends the
# walk: about 5%, against half before).
mkdir -p "$T/sample" && cd "$T/sample" && {
	m=cantell/sample cc=gcc cxx=gcc opt=O2
	if build cantell_sample "$SONDE_CC_BIN" -rdynamic "$PROGS/cantell_sample.c" -o cantell_sample -ldl; then
		./cantell_sample >plain.out
		"$SONDE" record -o sample.data -- ./cantell_sample >rec.out 2>rec.err
		read -r _ ps _ _ pr <plain.out
		read -r _ rs _ _ rr <rec.out
		if [ "${ps:-0}" -gt 0 ] && [ "$pr" = "$ps" ]; then ok "$m/every plain walk reaches main"
		else notok "$m/every plain walk reaches main" "$(cat plain.out)"; fi
		if [ "${rs:-0}" -ge 20 ] && [ "$rr" = "$rs" ]; then ok "$m/every recorded walk reaches main"
		else notok "$m/every recorded walk reaches main" "$(cat rec.out) $(tail -1 rec.err)"; fi
	fi
	m=cantell/sample/plain-gcc
	if gcc -O2 -g -rdynamic -I"$PROGS" "$PROGS/cantell_sample.c" -o sample_plain -ldl 2>build-plain.err; then
		"$SONDE" record -o plain.data -- ./sample_plain >prec.out 2>prec.err
		read -r _ rs _ _ rr <prec.out
		echo "# $m: $rr of $rs recorded walks reached main"
		if [ "${rs:-0}" -ge 20 ] && [ $((rr * 5)) -ge $((rs * 4)) ]; then ok "$m/recorded walks reach main (80%)"
		else notok "$m/recorded walks reach main (80%)" "$(cat prec.out) $(tail -1 prec.err)"; fi
	else
		notok "$m/build" "$(head -3 build-plain.err)"
	fi
}
cd "$T" || exit 1
python3 "$ROOT/tests/matrix_check.py" "$jobs"

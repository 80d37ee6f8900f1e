# Programs never built for sonde (docs/INSTRUMENTATION.md, "Programs never
# built for sonde"): the compiler matrix of tests/matrix_lib.sh on plain gcc
# and clang builds at -O0 and -O2, recorded without a rebuild; every count
# checked against the one the program printed itself (tests/matrix_check.py).
# ipa_regs.c keeps its loop state in call-clobbered registers across calls
# (gcc -O2's -fipa-ra): its output must not change.
. "$ROOT/tests/matrix_lib.sh"
export MATRIX_PLAIN=1 MATRIX_OPTS="O0 O2"
progs() {
	build threads $cc -pthread "$PROGS/threads.c" -o threads &&
		record threads -- ./threads
	build recursion $cc "$PROGS/recursion.c" -o recursion &&
		record recursion -- ./recursion
	build trace_threads $cc -pthread "$PROGS/trace_threads.c" -o trace_threads &&
		record trace_threads.trace --trace -- ./trace_threads
	build longjmp $cc "$PROGS/longjmp.c" -o longjmp &&
		record longjmp -- ./longjmp &&
		record longjmp.trace --trace -- ./longjmp
	build tailcall $cc "$PROGS/tailcall.c" -o tailcall &&
		record tailcall -- ./tailcall
	build exceptions $cxx "$PROGS/exceptions.cpp" -o exceptions &&
		record exceptions -- ./exceptions
	build signals $cc "$PROGS/signals.c" -o signals &&
		record signals -- ./signals
	build ipa_regs $cc "$PROGS/ipa_regs.c" -o ipa_regs && ipa_regs
}
# ipa_regs prints sums, not counts: only its output is checked.
ipa_regs() {
	./ipa_regs 200000 >ipa.plain 2>&1
	"$SONDE" record -o ipa.data -- ./ipa_regs 200000 >ipa.out 2>ipa.err
	check "$m/ipa_regs/output unchanged (values kept in call-clobbered registers)" cmp -s ipa.plain ipa.out
}
matrix progs

# Compiler matrix (tests/matrix_lib.sh), non-local exits: longjmp, tail
# calls, C++ exceptions (also through cleanups, rethrown, and thrown from a
# -fPIC shared library), signal handlers (on the stack, on an alternate
# stack, left by siglongjmp); longjmp, exceptions and signals in trace mode
# too (<prog>.trace).
. "$ROOT/tests/matrix_lib.sh"
progs() {
	build longjmp "$SONDE_CC_BIN" "$PROGS/longjmp.c" -o longjmp &&
		record longjmp -- ./longjmp &&
		record longjmp.trace --trace -- ./longjmp
	build tailcall "$SONDE_CC_BIN" "$PROGS/tailcall.c" -o tailcall &&
		record tailcall -- ./tailcall
	build exceptions "$SONDE_CXX_BIN" "$PROGS/exceptions.cpp" -o exceptions &&
		record exceptions -- ./exceptions
	build exc_paths "$SONDE_CXX_BIN" -fPIC -shared "$PROGS/libthrow.cpp" -o libthrow.so &&
		build exc_paths "$SONDE_CXX_BIN" "$PROGS/exc_paths.cpp" -o exc_paths -L. -lthrow -Wl,-rpath,"$PWD" &&
		record exc_paths -- ./exc_paths &&
		record exc_paths.trace --trace -- ./exc_paths
	build signals "$SONDE_CC_BIN" "$PROGS/signals.c" -o signals &&
		record signals -- ./signals &&
		record signals.trace --trace -- ./signals
}
matrix progs

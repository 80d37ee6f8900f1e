# Compiler matrix (tests/matrix_lib.sh), plain calls: threads, -fPIC shared
# libraries (linked and dlopen'ed), recursion, fork + exec; in trace mode too
# (<prog>.trace) for fork and threads.
. "$ROOT/tests/matrix_lib.sh"
progs() {
	build threads "$SONDE_CC_BIN" -pthread "$PROGS/threads.c" -o threads &&
		record threads -- ./threads
	build modules "$SONDE_CC_BIN" -fPIC -shared "$PROGS/libshared.c" -o libshared.so &&
		build modules "$SONDE_CC_BIN" -fPIC -shared "$PROGS/libplug.c" -o libplug.so &&
		build modules "$SONDE_CC_BIN" "$PROGS/modules.c" -o modules -L. -lshared -ldl -Wl,-rpath,"$PWD" &&
		record modules -- ./modules "$PWD/libplug.so"
	build recursion "$SONDE_CC_BIN" "$PROGS/recursion.c" -o recursion &&
		record recursion -- ./recursion
	build forks "$SONDE_CC_BIN" "$PROGS/forks.c" -o forks &&
		build forks "$SONDE_CC_BIN" "$PROGS/leafprog.c" -o leafprog &&
		record forks -- ./forks &&
		record forks.trace --trace -- ./forks
	build trace_threads "$SONDE_CC_BIN" -pthread "$PROGS/trace_threads.c" -o trace_threads &&
		record trace_threads.trace --trace -- ./trace_threads
}
matrix progs

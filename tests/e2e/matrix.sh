# The compiler matrix (as uftrace's runtest.py): gcc and clang x -O0/-O2/-O3,
# executables and -fPIC shared libraries (linked and dlopen'ed), threads,
# recursion, longjmp, C++ exceptions (also through cleanups, rethrown, and from
# a shared library), tail calls, fork + exec, and one trace.
# Every program counts its own calls and prints them; tests/matrix_check.py
# compares them with sonde's JSON reports.  Checks: matrix/<cc>/<opt>/<prog>/<what>.
. "$ROOT/tests/lib.sh"
jobs=$T/jobs.txt
: >"$jobs"
# record LABEL OUTPUT-PREFIX [sonde record options] -- PROGRAM ARGS...: the
# output must be the plain run's; queue the recording for the checker.
record() {
	local label=$1 d=$2; shift 2
	local opts=()
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	"$@" >"$d.plain" 2>/dev/null
	if ! "$SONDE" record "${opts[@]}" -o "$d.data" -- "$@" >"$d.out" 2>"$d.err"; then
		notok "$label/record" "$(tail -1 "$d.err")"
		return
	fi
	check "$label/output unchanged" cmp -s "$d.plain" "$d.out"
	echo "$label $PWD/$d.data $PWD/$d.out ${opts[*]/--trace/trace}" >>"$jobs"
}
for cc in gcc clang; do
	case $cc in gcc) cxx=g++ ;; clang) cxx=clang++ ;; esac
	if ! command -v $cc >/dev/null || ! command -v $cxx >/dev/null; then
		skip "matrix/$cc" "$cc/$cxx not installed"; continue
	fi
	for opt in O0 O2 O3; do
		m=matrix/$cc/$opt
		mkdir -p $cc-$opt && cd $cc-$opt || exit 1
		build() { # PROG SONDE-CC-ARGS...
			local p=$1; shift
			SONDE_CC=$cc SONDE_CXX=$cxx "$@" -$opt -g -I"$PROGS" >build-$p.err 2>&1 ||
				{ notok "$m/$p/build" "$(head -3 build-$p.err)"; return 1; }
		}
		build threads "$SONDE_CC_BIN" -pthread "$PROGS/threads.c" -o threads &&
			record $m/threads threads -- ./threads
		build modules "$SONDE_CC_BIN" -fPIC -shared "$PROGS/libshared.c" -o libshared.so &&
			build modules "$SONDE_CC_BIN" -fPIC -shared "$PROGS/libplug.c" -o libplug.so &&
			build modules "$SONDE_CC_BIN" "$PROGS/modules.c" -o modules -L. -lshared -ldl -Wl,-rpath,"$PWD" &&
			record $m/modules modules -- ./modules "$PWD/libplug.so"
		build recursion "$SONDE_CC_BIN" "$PROGS/recursion.c" -o recursion &&
			record $m/recursion recursion -- ./recursion
		build longjmp "$SONDE_CC_BIN" "$PROGS/longjmp.c" -o longjmp &&
			record $m/longjmp longjmp -- ./longjmp
		build tailcall "$SONDE_CC_BIN" "$PROGS/tailcall.c" -o tailcall &&
			record $m/tailcall tailcall -- ./tailcall
		build exceptions "$SONDE_CXX_BIN" "$PROGS/exceptions.cpp" -o exceptions &&
			record $m/exceptions exceptions -- ./exceptions
		build exc_paths "$SONDE_CXX_BIN" -fPIC -shared "$PROGS/libthrow.cpp" -o libthrow.so &&
			build exc_paths "$SONDE_CXX_BIN" "$PROGS/exc_paths.cpp" -o exc_paths -L. -lthrow -Wl,-rpath,"$PWD" &&
			record $m/exc_paths exc_paths -- ./exc_paths
		build forks "$SONDE_CC_BIN" "$PROGS/forks.c" -o forks &&
			build forks "$SONDE_CC_BIN" "$PROGS/leafprog.c" -o leafprog &&
			record $m/forks forks -- ./forks
		build trace_threads "$SONDE_CC_BIN" -pthread "$PROGS/trace_threads.c" -o trace_threads &&
			record $m/trace_threads trace_threads --trace -- ./trace_threads
		cd "$T" || exit 1
	done
done
python3 "$ROOT/tests/matrix_check.py" "$jobs"

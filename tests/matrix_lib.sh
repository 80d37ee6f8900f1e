# tests/matrix_lib.sh — the compiler matrix (sourced by tests/e2e/matrix_*.sh),
# as uftrace's runtest.py: a script defines progs(), which builds programs
# with build() and records them with record(); matrix runs it for gcc and
# clang (g++ / clang++ for C++) at -O0, -O2 and -O3, each in its own
# directory, then tests/matrix_check.py compares every recording with the
# calls the program counted and printed itself.  Checks are named
# matrix/<cc>/<opt>/<prog>/<what>.
. "$ROOT/tests/lib.sh"
jobs=$T/jobs.txt
: >"$jobs"

# build PROG SONDE-CC-OR-C++ ARGS...: at the current compiler and level.
build() {
	local p=$1; shift
	SONDE_CC=$cc SONDE_CXX=$cxx "$@" -$opt -g -I"$PROGS" >>build-$p.err 2>&1 ||
		{ notok "$m/$p/build" "$(head -3 build-$p.err)"; return 1; }
}

# record NAME [sonde record options] -- COMMAND...: the output must be the
# plain run's; the recording is queued for the checker (with --trace, its
# timeline is checked too).
record() {
	local p=$1; shift # the name of its checks and files
	local opts=()
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	"$@" >"$p.plain" 2>/dev/null
	"$SONDE" record "${opts[@]}" -o "$p.data" -- "$@" >"$p.out" 2>"$p.err"
	local rc=$?
	if [ $rc -ne 0 ]; then
		notok "$m/$p/record" "status $rc: $(tail -1 "$p.err")"
		return
	fi
	check "$m/$p/output unchanged" cmp -s "$p.plain" "$p.out"
	local plain=
	[ "${MATRIX_PLAIN:-}" = 1 ] && plain=plain
	echo "$m/$p $PWD/$p.data $PWD/$p.out ${opts[*]/--trace/trace} $plain" >>"$jobs"
}

# record_attached PROG: ./PROG go.fifo pidf (it writes its pid to pidf, then
# waits for a line on go.fifo) recorded by `sonde record -p` from its start
# into attached.data: its output must be PROG.plain's; queued for the checker.
record_attached() {
	local p=$1 prog sp
	rm -f go.fifo pidf
	mkfifo go.fifo
	./"$p" go.fifo pidf >attached.out 2>attached.perr &
	prog=$!
	for _ in $(seq 250); do [ -s pidf ] && break; sleep 0.02; done
	"$SONDE" record -p "$(cat pidf)" -o attached.data 2>attached.err &
	sp=$!
	for _ in $(seq 1000); do grep -q "recording process" attached.err 2>/dev/null && break; sleep 0.02; done
	echo go >go.fifo
	wait $prog
	wait $sp
	check "$m/attached/output unchanged" cmp -s "$p.plain" attached.out
	echo "$m/attached $PWD/attached.data $PWD/attached.out" >>"$jobs"
}

matrix() { # FUNCTION: build and record, for each compiler and level
	for cc in gcc clang; do
		case $cc in gcc) cxx=g++ ;; clang) cxx=clang++ ;; esac
		if ! command -v $cc >/dev/null || ! command -v $cxx >/dev/null; then
			skip "matrix/$cc" "$cc/$cxx not installed"; continue
		fi
		for opt in ${MATRIX_OPTS:-O0 O2 O3}; do
			m=matrix/$cc/$opt
			mkdir -p "$T/$cc-$opt" && cd "$T/$cc-$opt" || exit 1
			"$1"
			cd "$T" || exit 1
		done
	done
	python3 "$ROOT/tests/matrix_check.py" "$jobs"
}

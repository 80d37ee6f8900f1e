# tests/lib.sh — helpers for end-to-end tests (sourced).  Each check prints
# "ok - NAME" or "not ok - NAME: why".  Tests run in a scratch directory.
set -u
: "${BUILD:?}" "${ROOT:?}"
SONDE="$BUILD/bin/sonde"
SONDE_CC_BIN="$BUILD/bin/sonde-cc"
SONDE_CXX_BIN="$BUILD/bin/sonde-c++"
PROGS="$ROOT/tests/progs"
T=$(mktemp -d "${TMPDIR:-/tmp}/sonde-e2e.XXXXXX")
cd "$T" || exit 1
# tests/run.sh removes the scratch directory of a test that passed (a
# failed one keeps it, for a look): it learns the name here.
[ -n "${SONDE_TEST_SCRATCH:-}" ] && echo "$T" >> "$SONDE_TEST_SCRATCH"
# At the end: the session files (on tmpfs, docs/FORMAT.md "Recovery") of
# recordings whose sonde a test killed and never read again, named by their
# session.ref; the scratch directory stays, so the orphan sweep would keep
# them, in memory.  A test with its own EXIT trap calls drop_sessions itself.
drop_sessions() {
	local r f
	while IFS= read -r r; do
		f=$(head -c 4096 "$r" | head -1)
		case "$f" in /*/sonde-session-*) rm -f "$f" ;; esac
	done < <(find "$T" -name session.ref -type f 2>/dev/null)
}
trap drop_sessions EXIT
ok()    { echo "ok - $1"; }
notok() { echo "not ok - $1: $2"; }
skip()  { echo "skip - $1: $2"; }
# check NAME COMMAND... : ok if the command succeeds
check() { local n=$1; shift; if "$@"; then ok "$n"; else notok "$n" "command failed: $*"; fi; }
# jq-like queries are done with python3's json module (always on Debian images here).
jq_py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2" "$1"; }
# sigkill_launched NAME OUT DELAY MARK REF -- SONDE-PROBE-ARGS...: `sonde probe
# ARGS` (a launched program) in the background, output in OUT, SIGKILLed after
# DELAY seconds; then, once OUT has a line starting with MARK (the program's
# last; 20 s at most), ok NAME if OUT equals REF (the program's run without
# sonde): killing sonde must not harm the program.
sigkill_launched() {
	local name=$1 out=$2 delay=$3 mark=$4 ref=$5
	shift 6
	"$SONDE" probe "$@" > "$out" 2> "$out.err" &
	local sp=$!
	sleep "$delay"
	kill -KILL "$sp"
	wait "$sp" 2>/dev/null
	for _ in $(seq 1000); do grep -q "^$mark" "$out" 2>/dev/null && break; sleep 0.02; done
	if cmp -s "$out" "$ref"; then
		ok "$name"
	else
		notok "$name" "$(tail -3 "$out"; tail -2 "$out.err")"
	fi
}

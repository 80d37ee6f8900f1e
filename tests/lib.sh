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

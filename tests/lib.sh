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
ok()    { echo "ok - $1"; }
notok() { echo "not ok - $1: $2"; }
skip()  { echo "skip - $1: $2"; }
# check NAME COMMAND... : ok if the command succeeds
check() { local n=$1; shift; if "$@"; then ok "$n"; else notok "$n" "command failed: $*"; fi; }
# jq-like queries are done with python3's json module (always on Debian images here).
jq_py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2" "$1"; }

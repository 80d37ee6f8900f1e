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
# perfetto_pb DIR: 0 once DIR holds the module protoc generates from
# tests/proto/perfetto_trace_subset.proto (Perfetto's public field numbers)
# and PB_PY is a python3 with the protobuf library, for
# tests/perfetto_pb_decode.py; installs python3-protobuf and
# protobuf-compiler when root and they are missing; 1 if they cannot be had.
perfetto_pb() {
	PB_PY=
	local p
	for p in python3 /usr/bin/python3; do
		"$p" -c "import google.protobuf" 2>/dev/null && { PB_PY=$p; break; }
	done
	if { [ -z "$PB_PY" ] || ! command -v protoc >/dev/null; } && [ "$(id -u)" = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-protobuf protobuf-compiler >/dev/null 2>&1
		for p in python3 /usr/bin/python3; do
			"$p" -c "import google.protobuf" 2>/dev/null && { PB_PY=$p; break; }
		done
	fi
	[ -n "$PB_PY" ] && command -v protoc >/dev/null && mkdir -p "$1" &&
		protoc -I "$ROOT/tests/proto" --python_out="$1" "$ROOT/tests/proto/perfetto_trace_subset.proto"
}
# sigkill_launched NAME OUT DELAY MARK REF -- SONDE-PROBE-ARGS...: `sonde probe
# ARGS` (a launched program) in the background, output in OUT, SIGKILLed
# DELAY seconds after the program started (its exec done: a child of sonde's
# named as it is; a slow start, as under ASan on a loaded machine, would
# otherwise see sonde killed before there is any program); then, once OUT has
# a line starting with MARK (the program's last; 20 s at most), ok NAME if OUT
# equals REF (the program's run without sonde): killing sonde must not harm
# the program.
sigkill_launched() {
	local name=$1 out=$2 delay=$3 mark=$4 ref=$5
	shift 6
	local a prog=
	for a in "$@"; do [ "$a" = -- ] && prog=next || { [ "$prog" = next ] && prog=$(basename "$a"); }; done
	"$SONDE" probe "$@" > "$out" 2> "$out.err" &
	local sp=$! c started=
	for _ in $(seq 1000); do
		for c in $(pgrep -P "$sp"); do
			[ "$(cat "/proc/$c/comm" 2>/dev/null)" = "${prog:0:15}" ] && started=1
		done
		[ -n "$started" ] && break
		kill -0 "$sp" 2>/dev/null || break
		sleep 0.01
	done
	[ -n "$started" ] || { notok "$name" "the program ($prog) never started under sonde"; kill -KILL "$sp"; wait "$sp" 2>/dev/null; return; }
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
# ---- real programs from Debian source, built once into the shared test cache ----
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
# build_key PROGRAM ARGS...: what a build's output depends on: its script, its
# command line ($BUILD written as BUILD, so that the sanitizer pass finds the
# first pass's builds), SONDE_CC / SONDE_CXX, the version of each compiler
# named, and for sonde-cc / sonde-c++ the sources of what they put into a
# program (src/cc, the module object's source and the headers they share).
build_key() {
	{
		cat "$ROOT/tools/build-$1.sh"; shift
		printf '%s\n' "$@" "${SONDE_CC:-}" "${SONDE_CXX:-}" | sed "s|$BUILD|BUILD|g"
		local c
		for c in "$@" ${SONDE_CC:-} ${SONDE_CXX:-}; do
			case $c in
			-*) ;;
			*sonde-cc|*sonde-c++) cat "$ROOT"/src/cc/*.c "$ROOT"/src/rt/module.c "$ROOT"/src/rt/*.h "$ROOT"/src/common/*.h ;;
			*) command -v "$c" >/dev/null 2>&1 && "$c" --version 2>/dev/null | head -1 ;;
			esac
		done
	} | cksum | cut -d' ' -f1
}
# real_build NAME PROGRAM COMPILER... [FLAGS...]: PROGRAM (sqlite, zstd, lua,
# leveldb, pigz: tools/build-PROGRAM.sh, whose arguments follow) built from
# Debian's source into $cache/NAME (sqlite, zstd, leveldb, pigz: a directory
# holding speedtest1, zstd, db_bench, pigz; lua: the interpreter itself), once: every test
# asking for NAME with the same command shares the build, and a changed script,
# compiler, flags or sonde-cc builds it again.  Its log: build-NAME.log in the
# test's directory.  Status 0 built, 1 the build failed, 2 no source (fetch
# failed: fetch-NAME.log).
real_build() {
	local name=$1 prog=$2 src pkg; shift 2
	mkdir -p "$cache"
	case $prog in
	lua) sh "$ROOT/tools/fetch-lua.sh" "$cache" >"fetch-$name.log" 2>&1 || return 2; src=$cache/lua ;;
	sqlite|zstd|leveldb|pigz)
		pkg=$prog; [ "$prog" = sqlite ] && pkg=sqlite3
		sh "$ROOT/tools/fetch-src.sh" "$pkg" "$cache/src" >"fetch-$name.log" 2>&1 || return 2
		src=$cache/src/$pkg ;;
	*) echo "real_build: no program $prog" >&2; return 1 ;;
	esac
	local out=$cache/$name key
	key=$(build_key "$prog" "$@")
	(
		flock 9
		[ "$(cat "$out.done" 2>/dev/null)" = "$key" ] && exit 0
		# afresh: what another key left (a CMake cache naming another
		# compiler, objects of other flags) must not leak into this build
		rm -rf "$out.done" "$out" "$out.obj"
		SONDE_BUILD_LOCK="$out.lock" sh "$ROOT/tools/build-$prog.sh" "$src" "$out" "$@" || exit 1
		echo "$key" >"$out.done"
	) 9>"$out.lock" >"build-$name.log" 2>&1
}

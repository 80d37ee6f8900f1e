#!/bin/sh
# tools/build-sqlite.sh SRC OUT CC [CFLAGS...] — build SQLite's speedtest1
# benchmark from SRC (tools/fetch-src.sh sqlite3) into OUT/speedtest1 with
# compiler CC, -O2 -g plus CFLAGS: test/speedtest1.c linked with the
# amalgamation sqlite3.c, single-threaded as SQLite's own main.mk builds it.
# Debian ships the split sources only, so the amalgamation is generated once
# (configure + make sqlite3.c, needs tclsh) into SRC.amalg and shared.
set -e
# Two tests (or two test runs sharing SONDE_TEST_CACHE) building OUT at once
# take turns: the script runs again under an flock of OUT.lock.
if [ "${SONDE_BUILD_LOCK:-}" != "$2.lock" ] && command -v flock >/dev/null; then
	mkdir -p "$(dirname "$2")"
	SONDE_BUILD_LOCK="$2.lock" exec flock "$2.lock" sh "$0" "$@"
fi
src=$1 out=$2 cc=$3; shift 3
src=$(cd "$src" && pwd) am="$src.amalg"
if [ ! -f "$am/sqlite3.c" ]; then
	command -v tclsh >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tcl >/dev/null
	tmp=$(mktemp -d "$am.XXXXXX")
	(cd "$tmp" && "$src/configure" CC=cc >configure.log && make sqlite3.c >make.log)
	mv -T "$tmp" "$am" 2>/dev/null || rm -rf "$tmp"   # lost a race: keep the first
fi
mkdir -p "$out"
set -- -O2 -g -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION -I"$am" "$@"
$cc "$@" -c "$src/test/speedtest1.c" -o "$out/speedtest1.o" & pid=$!
$cc "$@" -c "$am/sqlite3.c" -o "$out/sqlite3.o"
wait $pid
# The program is put in place by a rename: a test running it meanwhile
# (another test's rebuild) finds the old file or the new one, never none.
$cc "$@" -o "$out/speedtest1.tmp" "$out/speedtest1.o" "$out/sqlite3.o" -lm
mv -f "$out/speedtest1.tmp" "$out/speedtest1"

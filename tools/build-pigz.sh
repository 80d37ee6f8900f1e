#!/bin/sh
# tools/build-pigz.sh SRC OUT CC [CFLAGS...] — build pigz from SRC
# (tools/fetch-src.sh pigz) into OUT/pigz with compiler CC, -O2 -g -pthread
# plus CFLAGS: pigz.c, yarn.c, try.c and zopfli's sources, as its Makefile
# links them.
set -e
# Two tests (or two test runs sharing SONDE_TEST_CACHE) building OUT at once
# take turns: the script runs again under an flock of OUT.lock.
if [ "${SONDE_BUILD_LOCK:-}" != "$2.lock" ] && command -v flock >/dev/null; then
	mkdir -p "$(dirname "$2")"
	SONDE_BUILD_LOCK="$2.lock" exec flock "$2.lock" sh "$0" "$@"
fi
src=$1 out=$2 cc=$3; shift 3
mkdir -p "$out"
$cc -O2 -g -pthread "$@" -o "$out/pigz.tmp" "$src"/pigz.c "$src"/yarn.c "$src"/try.c "$src"/zopfli/src/zopfli/*.c -lz -lm
# put in place by a rename (a test running the old one finds it whole)
mv -f "$out/pigz.tmp" "$out/pigz"

#!/bin/sh
# tools/build-zstd.sh SRC OUT CC [CFLAGS...] — build the zstd command-line
# program from SRC (tools/fetch-src.sh zstd) into OUT/zstd with compiler CC,
# -O2 plus CFLAGS, the library compiled in statically, through zstd's own
# programs/Makefile.  It builds in a copy of the tree under OUT, so builds with
# different compilers coexist; threads, zlib, lzma and lz4 are left out so the
# program does the same work everywhere.
set -e
# Two tests (or two test runs sharing SONDE_TEST_CACHE) building OUT at once
# take turns: the script runs again under an flock of OUT.lock.
if [ "${SONDE_BUILD_LOCK:-}" != "$2.lock" ] && command -v flock >/dev/null; then
	mkdir -p "$(dirname "$2")"
	SONDE_BUILD_LOCK="$2.lock" exec flock "$2.lock" sh "$0" "$@"
fi
src=$1 out=$2 cc=$3; shift 3
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ ! -d "$out/tree/programs" ]; then
	rm -rf "$out/tree" && mkdir "$out/tree"
	cp -R "$src/lib" "$src/programs" "$out/tree/"
fi
# CFLAGS through the environment: on the command line it would hide the
# Makefile's own additions (MOREFLAGS among them) from the compile lines.
CFLAGS=-O2 make -C "$out/tree/programs" -j"$(nproc)" zstd-release CC="$cc" MOREFLAGS="$*" \
	HAVE_THREAD=0 HAVE_ZLIB=0 HAVE_LZMA=0 HAVE_LZ4=0
# The program is put in place by a rename: a test running it meanwhile
# (another test's rebuild) finds the old file or the new one, never none.
cp -f "$out/tree/programs/zstd" "$out/zstd.tmp" && mv -f "$out/zstd.tmp" "$out/zstd"

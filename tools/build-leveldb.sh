#!/bin/sh
# tools/build-leveldb.sh SRC OUT CC CXX [CXXFLAGS...] — build LevelDB 1.23's
# db_bench from SRC (tools/fetch-src.sh leveldb) into OUT/db_bench with
# compilers CC and CXX (single commands, as CMake wants them), a CMake Release
# build plus CXXFLAGS, in OUT/build.  snappy, crc32c and tcmalloc stay off even
# when installed, so the program does the same work everywhere.  db_bench links
# Debian's packaged googletest/gmock (util/testutil.h includes them).
set -e
# Two tests (or two test runs sharing SONDE_TEST_CACHE) building OUT at once
# take turns: the script runs again under an flock of OUT.lock.
if [ "${SONDE_BUILD_LOCK:-}" != "$2.lock" ] && command -v flock >/dev/null; then
	mkdir -p "$(dirname "$2")"
	SONDE_BUILD_LOCK="$2.lock" exec flock "$2.lock" sh "$0" "$@"
fi
src=$1 out=$2 cc=$3 cxx=$4; shift 4
if ! command -v cmake >/dev/null || [ ! -f /usr/include/gmock/gmock.h ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake libgmock-dev >/dev/null
fi
mkdir -p "$out"
# Another compiler or other flags than the build directory was configured with:
# start it afresh.  (CMake would wipe its cache on a compiler change and drop
# every -D given with it, CMAKE_BUILD_TYPE included: an unoptimised build.)
stamp="$cc $cxx $*"
if [ -d "$out/build" ] && [ "$(cat "$out/build/.sonde-config" 2>/dev/null)" != "$stamp" ]; then
	rm -rf "$out/build"
fi
mkdir -p "$out/build"
printf '%s\n' "$stamp" >"$out/build/.sonde-config"
cmake -S "$src" -B "$out/build" -DCMAKE_BUILD_TYPE=Release \
	-DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
	-DCMAKE_C_FLAGS="$*" -DCMAKE_CXX_FLAGS="$*" \
	-DLEVELDB_BUILD_TESTS=OFF -DLEVELDB_BUILD_BENCHMARKS=ON -DLEVELDB_INSTALL=OFF \
	-DBUILD_SHARED_LIBS=OFF -DHAVE_SNAPPY=OFF -DHAVE_CRC32C=OFF -DHAVE_TCMALLOC=OFF
cmake --build "$out/build" --target db_bench -j "$(nproc)"
# The program is put in place by a rename: a test running it meanwhile
# (another test's rebuild) finds the old file or the new one, never none.
cp -f "$out/build/db_bench" "$out/db_bench.tmp" && mv -f "$out/db_bench.tmp" "$out/db_bench"

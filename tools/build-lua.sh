#!/bin/sh
# tools/build-lua.sh SRC OUT CC [CFLAGS...] — build Debian's Lua 5.4 interpreter
# from SRC (tools/fetch-lua.sh) into OUT with compiler CC, one object per
# source file as its own build does (no libtool).
set -e
# Two tests (or two test runs sharing SONDE_TEST_CACHE) building OUT at once
# take turns: the script runs again under an flock of OUT.lock.
if [ "${SONDE_BUILD_LOCK:-}" != "$2.lock" ] && command -v flock >/dev/null; then
	mkdir -p "$(dirname "$2")"
	SONDE_BUILD_LOCK="$2.lock" exec flock "$2.lock" sh "$0" "$@"
fi
src=$1 out=$2 cc=$3; shift 3
mkdir -p "$out.obj"
# debian/rules generates this header; do the same.
ma="$src/src/lua5.4-deb-multiarch.h"
# (Written aside and renamed: another build may be compiling SRC meanwhile.)
[ -f "$ma" ] || { printf '#ifndef _LUA_DEB_MULTIARCH_\n#define _LUA_DEB_MULTIARCH_\n#define DEB_HOST_MULTIARCH "%s"\n#endif\n' \
	"$(gcc -dumpmachine)" >"$ma.$$" && mv -f "$ma.$$" "$ma"; }
objs=""
for f in "$src"/src/*.c; do
	case $(basename "$f") in luac.c|onelua.c) continue ;; esac
	o="$out.obj/$(basename "$f" .c).o"
	$cc -std=gnu99 -O2 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX "$@" -c "$f" -o "$o"
	objs="$objs $o"
done
# The program is put in place by a rename: a test running it meanwhile
# (another test's rebuild) finds the old file or the new one, never none.
$cc "$@" -o "$out.tmp" $objs -lm -ldl
mv -f "$out.tmp" "$out"

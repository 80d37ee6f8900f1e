#!/bin/sh
# tools/fetch-lua.sh DIR — put Debian's Lua 5.4 source into DIR/lua (a program
# nobody here wrote, for the end-to-end tests and the benchmark), through
# tools/fetch-src.sh (tree in DIR/lua5.4, DIR/lua a symlink to it).  Exit 1 if impossible.
set -e
dir=${1:?usage: fetch-lua.sh DIR}
[ -f "$dir/lua/src/lua.c" ] && exit 0
# Under an flock of DIR/.fetch-lua.lock (tests running at once), looking again.
if [ "${SONDE_FETCH_LOCK:-}" != "$dir/.fetch-lua.lock" ] && command -v flock >/dev/null; then
	mkdir -p "$dir"
	SONDE_FETCH_LOCK="$dir/.fetch-lua.lock" exec flock "$dir/.fetch-lua.lock" sh "$0" "$@"
fi
sh "$(dirname "$0")/fetch-src.sh" lua5.4 "$dir" && rm -rf "$dir/lua" && ln -s lua5.4 "$dir/lua"

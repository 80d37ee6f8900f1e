#!/bin/sh
# tools/fetch-lua.sh DIR — put Debian's Lua 5.4 source into DIR/lua (a program
# nobody here wrote, for the end-to-end tests and the benchmark).  Adds a
# deb-src entry when the machine has none (root only).  Exit 1 if impossible.
set -e
dir=${1:?usage: fetch-lua.sh DIR}
mkdir -p "$dir"
[ -f "$dir/lua/src/lua.c" ] && exit 0
if ! apt-get source --print-uris lua5.4 >/dev/null 2>&1; then
	[ "$(id -u)" = 0 ] || { echo "fetch-lua: no deb-src entry and not root" >&2; exit 1; }
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		sed -i 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources
	else
		grep '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' >/etc/apt/sources.list.d/sonde-src.list
	fi
	apt-get update -qq >/dev/null
fi
command -v dpkg-source >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpkg-dev >/dev/null
cd "$dir"
apt-get source -qq lua5.4 >/dev/null 2>&1
src=$(ls -d lua5.4-*/ | head -1)
rm -rf lua && mv "$src" lua

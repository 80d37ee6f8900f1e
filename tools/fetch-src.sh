#!/bin/sh
# tools/fetch-src.sh PKG DIR — put the unpacked, patched tree of Debian source
# package PKG (a source or binary package name: zstd, sqlite3, leveldb, lua5.4)
# into DIR/PKG, for the end-to-end tests and benchmarks.  Adds a deb-src entry
# when the machine has none (root only).  Exit 1 if impossible.
set -e
pkg=${1:?usage: fetch-src.sh PKG DIR} dir=${2:?usage: fetch-src.sh PKG DIR}
mkdir -p "$dir"
[ -d "$dir/$pkg" ] && exit 0
# One fetch at a time into DIR (tests running at once want the same trees,
# and the apt-get update below must not run twice at once): the script runs
# again under an flock of DIR/.fetch.lock, and looks again.
if [ "${SONDE_FETCH_LOCK:-}" != "$dir/.fetch.lock" ] && command -v flock >/dev/null; then
	SONDE_FETCH_LOCK="$dir/.fetch.lock" exec flock "$dir/.fetch.lock" sh "$0" "$@"
fi
if ! apt-get source --print-uris "$pkg" >/dev/null 2>&1; then
	[ "$(id -u)" = 0 ] || { echo "fetch-src: no deb-src entry and not root" >&2; exit 1; }
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		sed -i 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources
	else
		grep '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' >/etc/apt/sources.list.d/sonde-src.list
	fi
	apt-get update -qq >/dev/null
fi
command -v dpkg-source >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpkg-dev >/dev/null
# Unpack in a private directory, then move the one tree into place, so that
# the name does not depend on the version and a half-done fetch is never seen.
tmp=$(mktemp -d "$dir/.fetch-$pkg.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The newest version first; when its files are missing from the mirror (the
# security archive's zstd 1.5.4+dfsg2-5+deb12u1 here: 404), each other
# version the sources list, as PKG=VERSION.
got=
if (cd "$tmp" && apt-get source -qq "$pkg" >/dev/null 2>&1); then
	got=1
else
	for v in $(apt-cache showsrc "$pkg" 2>/dev/null | sed -n 's/^Version: //p'); do
		rm -rf "${tmp:?}"/*
		if (cd "$tmp" && apt-get source -qq "$pkg=$v" >/dev/null 2>&1); then got=1; break; fi
	done
fi
[ -n "$got" ] || { echo "fetch-src: apt-get source $pkg failed (every version)" >&2; exit 1; }
src=$(ls -d "$tmp"/*/ | head -1)
[ -n "$src" ] || { echo "fetch-src: $pkg: nothing unpacked" >&2; exit 1; }
[ -d "$dir/$pkg" ] || mv "$src" "$dir/$pkg"

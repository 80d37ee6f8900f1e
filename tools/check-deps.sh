#!/bin/sh
# tools/check-deps.sh — feature probe for the Debian libraries sonde needs.
# Without arguments: says which Debian packages are missing (exit 1).
# With --install: installs them with apt-get (as root), or prints the line to run.
need=""
probe() { # header package
	printf '#include <%s>\nint main(void){return 0;}\n' "$1" | ${CC:-cc} -x c - -fsyntax-only 2>/dev/null || need="$need $2"
}
probe libelf.h libelf-dev
probe elfutils/libdw.h libdw-dev
probe capstone/capstone.h libcapstone-dev
probe zlib.h zlib1g-dev
probe zstd.h libzstd-dev
command -v python3 >/dev/null 2>&1 || need="$need python3"
[ -z "$need" ] && exit 0
if [ "${1:-}" = "--install" ] || [ "$(id -u)" = 0 ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "sonde: installing missing build dependencies:$need" >&2
		apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null && exit 0
		echo "sonde: error: apt-get install failed for:$need" >&2
		exit 1
	fi
fi
echo "sonde: error: missing build dependencies (Debian packages):$need" >&2
echo "  run: sudo apt-get install -y$need   (or: sudo make deps)" >&2
exit 1

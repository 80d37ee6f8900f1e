#!/bin/sh
# tools/gen-data.sh OUT SIZE_MB — write SIZE_MB MiB of text-like test data to
# OUT (for compressor workloads): lines of pseudo-words drawn with a skewed
# distribution from a made-up vocabulary, with a record of numbers every 8th
# line.  Byte-for-byte the same on every machine and awk: its only randomness
# is a seeded MINSTD generator in integer-exact arithmetic, and it needs no
# dictionary or man pages.
set -e
out=${1:?usage: gen-data.sh OUT SIZE_MB} mb=${2:?usage: gen-data.sh OUT SIZE_MB}
LC_ALL=C awk -v bytes=$((mb * 1048576)) '
function rnd() { x = (x * 48271) % 2147483647; return x }   # MINSTD, exact in doubles
function word(  w, n, i) {
	n = 1 + rnd() % 4; w = ""
	for (i = 0; i < n; i++) w = w substr(cons, 1 + rnd() % 21, 1) substr(vow, 1 + rnd() % 6, 1)
	return w
}
BEGIN {
	x = 20240601; cons = "bcdfghjklmnpqrstvwxyz"; vow = "aeiouy"; V = 4096
	for (i = 0; i < V; i++) voc[i] = word()
	for (ln = 0; total < bytes; ln++) {
		if (ln % 8 == 7) {
			line = sprintf("%08d %x %x %d.%02d", ln, rnd(), rnd(), rnd() % 100000, rnd() % 100)
		} else {
			line = ""
			while (length(line) < 60 + rnd() % 20) {
				u = rnd() / 2147483647; line = line voc[int(V * u * u * u)] " "
			}
			line = line "."
		}
		print line; total += length(line) + 1
	}
}' | head -c $((mb * 1048576)) >"$out"
[ "$(wc -c <"$out")" -eq $((mb * 1048576)) ] || { echo "gen-data: short output" >&2; exit 1; }

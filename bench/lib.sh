# bench/lib.sh — what the benchmark scripts share (sourced).

# fastest COMMAND...: "wall cpu" seconds of the fastest of REPS runs (cpu =
# user + sys of every process), measured with /usr/bin/time.
fastest() {
	local b="999999 0"
	for _ in $(seq 1 "$REPS"); do
		/usr/bin/time -f "%e %U %S" -o t.out "$@" >/dev/null 2>&1
		b=$(python3 -c "
w,u,s=map(float,open('t.out').read().split()[-3:]); bw,bc=map(float,'$b'.split())
print(f'{w} {u+s}' if w < bw else '$b')")
	done
	echo "$b"
}

# median N COMMAND...: the median of N runs, in seconds: wall time, or with
# CLOCK=cpu the user + sys time of every process of the run (steadier on a
# shared machine: time spent waiting for a core is not counted).
median() {
	local n=$1; shift
	for _ in $(seq "$n"); do
		/usr/bin/time -f "%e %U %S" -o median.t "$@" >/dev/null 2>&1
		awk -v c="${CLOCK:-wall}" '{ w = $(NF - 2); u = $(NF - 1); s = $NF }
			END { printf "%.6f\n", c == "cpu" ? u + s : w }' median.t
	done | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

# sqlite_builds CACHE SONDE_CC [pg]: SQLite's speedtest1 and its objects
# (sqlite3.o, the amalgamation's) built by tools/build-sqlite.sh into
# CACHE/sqlite-b-plain (cc), CACHE/sqlite-b-sonde (SONDE_CC) and, with "pg",
# CACHE/sqlite-b-pg (cc -pg); each rebuilt when its compiler changed (a build
# of an older sonde-cc is refused by the runtime: it would record nothing and
# say so only on stderr).  The sources from tools/fetch-src.sh; returns 1
# without them.
sqlite_builds() {
	local cache=$1 scc=$2 pg=${3:-} root v n c extra key
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	sh "$root/tools/fetch-src.sh" sqlite3 "$cache/src" >/dev/null 2>&1 || return 1
	for v in plain:cc sonde:$scc pg:cc; do
		n=${v%%:*} c=${v#*:} extra=; [ $n = pg ] && { [ "$pg" = pg ] || continue; extra=-pg; }
		key=$({ cat "$root/tools/build-sqlite.sh"; echo "$extra"; case $c in */*) cat "$c" ;; *) "$c" --version ;; esac; } | cksum)
		if [ ! -x "$cache/sqlite-b-$n/speedtest1" ] || [ "$(cat "$cache/sqlite-b-$n.key" 2>/dev/null)" != "$key" ]; then
			rm -rf "$cache/sqlite-b-$n"
			sh "$root/tools/build-sqlite.sh" "$cache/src/sqlite3" "$cache/sqlite-b-$n" "$c" $extra >/dev/null 2>&1 &&
				echo "$key" >"$cache/sqlite-b-$n.key"
		fi
	done
}

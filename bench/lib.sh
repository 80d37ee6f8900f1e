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

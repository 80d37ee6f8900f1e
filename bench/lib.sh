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

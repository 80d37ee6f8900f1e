#!/usr/bin/env bash
# bench/exec_bench.sh — what an exec costs in a recorded tree (issue 40;
# docs/INSTRUMENTATION.md, "Programs exec'd in the tree"), side by side in one run:
#   plain       sh running Debian's gzip N times on a 4 KiB input, without sonde
#   patched     the same under sonde record: every gzip image patched (one plan, reused)
#   excluded    under sonde record --exec nomatch: the runtime in every image, nothing patched
#   no-patch    under sonde record --no-patch: the runtime only, no plan asked for
# Per-exec cost above plain: (median time - plain median) / N.  Then the loop in an attached
# tree: the same sh waiting on a FIFO, plain and under record -p (which follows its execs), the
# loop timed by the shell itself.  Then the plan of a large
# program made once and reused: gcc -c run K times under sonde record --exec cc1: sonde's
# planning of cc1 (sonde info's plan_ms, once for the recording) and the time each cc1
# process was held while it was patched from that plan (its module's numbering_ns).
# Never fails on timing.          usage: BUILD=build bash bench/exec_bench.sh
set -u
: "${BUILD:?}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
SONDE=$BUILD/bin/sonde
REPS=${REPS:-5} N=${N:-200} K=${K:-5}
W=$(mktemp -d /tmp/sonde-bench.XXXXXX); cd "$W" || exit 1
trap 'rm -rf "$W"' EXIT
. "$ROOT/bench/lib.sh"
head -c 4096 /usr/bin/gzip > small
loop="i=0; while [ \$i -lt $N ]; do gzip -c small > /dev/null; i=\$((i+1)); done"
tp=$(median "$REPS" sh -c "$loop")
tx=$(median "$REPS" "$SONDE" record -o x.data -- sh -c "$loop")
te=$(median "$REPS" "$SONDE" record --exec nomatch -o e.data -- sh -c "$loop")
tn=$(median "$REPS" "$SONDE" record --no-patch -o n.data -- sh -c "$loop")
echo "exec cost, $N execs of gzip under sh (median of $REPS, ${CLOCK:-wall} time):"
awk -v n="$N" -v p="$tp" -v x="$tx" -v e="$te" -v o="$tn" 'BEGIN {
	printf "  %-10s %9s %14s\n", "", "whole run", "per exec above plain"
	printf "  %-10s %8.3f s %14s\n", "plain", p, "-"
	printf "  %-10s %8.3f s %11.1f us\n", "patched", x, (x - p) / n * 1e6
	printf "  %-10s %8.3f s %11.1f us\n", "excluded", e, (e - p) / n * 1e6
	printf "  %-10s %8.3f s %11.1f us\n", "no-patch", o, (o - p) / n * 1e6 }'
# The same loop in an attached tree (record -p follows the execs, docs/ATTACH.md "An exec while
# recording"): a shell that waits on a FIFO, then times the loop itself; plain, and attached.
attached_loop() { # MODE (plain or attached): the loop's own time in s
	rm -f go T a.err; mkfifo go
	sh -c "read x < go; t0=\$(date +%s%N); $loop; t1=\$(date +%s%N); echo \$((t1 - t0)) > T" &
	local sh=$! sp=
	if [ "$1" = attached ]; then
		"$SONDE" record -p "$sh" -o a.data 2> a.err &
		sp=$!
		for _ in $(seq 1000); do grep -q "recording process" a.err 2>/dev/null && break; sleep 0.01; done
	fi
	echo go > go
	wait "$sh"
	[ -n "$sp" ] && { kill -INT "$sp"; wait "$sp"; }
	awk '{ printf "%.6f\n", $1 / 1e9 }' T
}
med() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ap=$(for _ in $(seq "$REPS"); do attached_loop plain; done | med)
aa=$(for _ in $(seq "$REPS"); do attached_loop attached; done | med)
echo "the same loop in an attached tree (record -p, the loop's own time, median of $REPS):"
awk -v n="$N" -v p="$ap" -v a="$aa" 'BEGIN {
	printf "  %-10s %8.3f s %14s\n", "plain", p, "-"
	printf "  %-10s %8.3f s %11.1f us\n", "attached", a, (a - p) / n * 1e6 }'
cc1=$(gcc -print-prog-name=cc1)
printf 'int f(int x) { return x * 2; }\nint main(void) { return f(1); }\n' > a.c
cmd=$(printf 'gcc -O2 -c a.c -o a.o; %.0s' $(seq "$K"))
"$SONDE" record --exec cc1 -o c.data -- sh -c "$cmd" > /dev/null 2>&1
"$SONDE" info -i c.data --format=json > c.json
python3 - "$cc1" "$K" <<'PY'
import json, os, sys
cc1, k = os.path.realpath(sys.argv[1]), int(sys.argv[2])
d = json.load(open("c.json"))
plans = [p for p in d["patched"] if os.path.realpath(p["path"]) == cc1]
mods = sorted(m["numbering_ns"] / 1e6 for m in d["modules"] if os.path.realpath(m["path"]) == cc1)
print(f"cc1 ({cc1}): {k} compiles, {len(plans)} plan(s) made for the recording")
for p in plans:
    print(f"  planned once: {p['plan_ms']:.1f} ms, {p['patchable']} functions patchable")
if mods:
    print(f"  each cc1 process held while patched from that plan: median {mods[len(mods) // 2]:.1f} ms "
          f"(min {mods[0]:.1f}, max {mods[-1]:.1f}) over {len(mods)} processes")
PY

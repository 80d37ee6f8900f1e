#!/usr/bin/env bash
# probe_ab.sh — the agent's cost per hit of one probe with two builds of
# sonde side by side (did a change make the hot path slower?): the
# plain target, build A and build B alternate, 8 rounds, the minimum of each
# (start-up taken out with a 0-call run, as probe_bench.sh).  Prints ns per
# hit for A and B; never fails on timing.
#   A=/path/old/bin/sonde B=build/bin/sonde bash bench/probe_ab.sh [SPEC] [N]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
A=${A:?give A=the sonde of the first build}
B=${B:-$root/build/bin/sonde}
SPEC=${1:-line:hot}
N=${2:-4000000}
tmp=$(mktemp -d /tmp/sonde-probe-ab.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
gcc -O2 -g -o "$tmp/target" "$root/bench/probe_target.c" || exit 1
python3 - "$A" "$B" "$SPEC" "$N" "$tmp/target" <<'PY'
import subprocess, sys, time
A, B, spec, n, target = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
def run(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0
best = {}
for _ in range(8):
    for name, s in (("plain", None), ("A", A), ("B", B)):
        c = [target] if s is None else [s, "probe", "-e", spec, "-o", "/dev/null", "--", target]
        d = run(c + [str(n)]) - run(c + ["0"])
        best[name] = min(best.get(name, d), d)
for name, s in (("A", A), ("B", B)):
    print(f"{name} {spec}: {(best[name] - best['plain']) / n * 1e9:.1f} ns per hit  ({s}, min of 8 alternating runs, N={n})")
PY

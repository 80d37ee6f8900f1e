#!/usr/bin/env bash
# bench/export_bench.sh — export rates of a trace, side by side in one run,
# never pass/fail: `sonde export --format=perfetto` and `--format=chrome`
# (written to a new file each run), events per second per core (2 events
# per call, its begin and end; per core = over the CPU time, user + sys, of
# every thread), wall, bytes per event, peak RSS.  Fastest of REPS runs each.
# The chrome row is measured twice: as sonde writes a regular file (O_DIRECT,
# src/export/bulk_out.c) and with SONDE_EXPORT_DIRECT=0 (through the page
# cache).  BASE=OTHER_BUILD adds the rows of another build's sonde on the
# same recording (before/after in one run).  FORMATS (default "perfetto
# chrome") picks the rows.  SCALE 40 makes 7.8M events; 514 makes 100M (the
# issue 28 figure: `FORMATS=perfetto bash bench/export_bench.sh 514`; the
# chrome export of that is 4.5 GB).
# VERIFY=1 also reads sonde's Perfetto export back with the protobuf library
# (bench/perfetto_verify.py: Perfetto's schema, not sonde's reader) and
# checks its slices against the recording's calls (a 100M-event file takes
# tens of minutes of Python).
# Usage: BUILD=build [BASE=../old/build] [FORMATS=perfetto] [VERIFY=1] REPS=3 bash bench/export_bench.sh [SCALE]
set -u
BUILD=${BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
BUILD=$(cd "$BUILD" && pwd)
BASE=${BASE:+$(cd "$BASE" && pwd)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SONDE=$BUILD/bin/sonde
SCALE=${1:-40}
REPS=${REPS:-3}
FORMATS=${FORMATS:-perfetto chrome}
W=$(mktemp -d /tmp/sonde-export-bench.XXXXXX)
cd "$W" || exit 1
"$BUILD/bin/sonde-cc" -O2 -g "$ROOT/bench/trace_calls.c" -o prog -lpthread || exit 1
"$SONDE" record --trace -o tr -- ./prog "$SCALE" >/dev/null 2>&1 || exit 1
calls=$("$SONDE" report -i tr --format=json | python3 -c "import json,sys; print(sum(f['calls'] for f in json.load(sys.stdin)['functions']))")
run() { # SONDE FORMAT OUT [ENV=VALUE]: "wall cpu maxrss_kb size" of the fastest (by CPU) of REPS runs
	python3 - "$REPS" "$@" <<'PY'
import os, resource, subprocess, sys, time
reps, sonde, fmt, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
env = dict(os.environ)
if len(sys.argv) > 5 and sys.argv[5]:
    k, v = sys.argv[5].split("=", 1)
    env[k] = v
best = None
for _ in range(reps):
    if os.path.exists(out):
        os.unlink(out)
    # each run in a child of its own: its rusage alone (CPU to the us, all threads); the peak
    # RSS from /usr/bin/time (a child's ru_maxrss counts the image it was forked from)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        t0 = time.monotonic()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", "rss.out", sonde, "export", "-i", "tr",
                            "--format=" + fmt, "-o", out], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.monotonic() - t0
        u = resource.getrusage(resource.RUSAGE_CHILDREN)
        rss = open("rss.out").read().split()[-1]
        os.write(w, f"{wall} {u.ru_utime + u.ru_stime} {rss} {p.returncode}".encode())
        os._exit(0)
    os.close(w)
    res = os.read(r, 200).decode().split()
    os.waitpid(pid, 0)
    wall, cpu, rss, rc = float(res[0]), float(res[1]), int(res[2]), int(res[3])
    if rc:
        sys.exit(f"{sonde} export --format={fmt} failed")
    if best is None or cpu < best[1]:
        best = (wall, cpu, rss, os.path.getsize(out))
print(*best)
PY
	rm -f "$3"
}
rows=()
case " $FORMATS " in *" perfetto "*)
	rows+=("perfetto|$(run "$SONDE" perfetto out.pftrace)")
	[ -n "$BASE" ] && rows+=("BASE perfetto|$(run "$BASE/bin/sonde" perfetto out.pftrace)") ;;
esac
case " $FORMATS " in *" chrome "*)
	rows+=("chrome|$(run "$SONDE" chrome out.json)")
	rows+=("chrome, page cache|$(run "$SONDE" chrome out.json SONDE_EXPORT_DIRECT=0)")
	[ -n "$BASE" ] && rows+=("BASE chrome|$(run "$BASE/bin/sonde" chrome out.json)") ;;
esac
printf '%s\n' "${rows[@]}" | python3 -c "
import sys
calls = int(sys.argv[1]); ev = 2 * calls
print(f'export benchmark: {calls} calls = {ev} events (bench/trace_calls.c, 2 threads); fastest of runs by CPU')
print(f\"  {'':19} {'wall':>9} {'cpu':>9} {'events/s/core':>14} {'events/s wall':>14} {'B/event':>8} {'max RSS':>9}\")
for line in sys.stdin:
    name, t = line.rstrip('\n').split('|')
    w, c, m, size = map(float, t.split())
    print(f'  {name:19} {w*1e3:7.0f}ms {c*1e3:7.0f}ms {ev/c/1e6:12.1f}M {ev/w/1e6:12.1f}M {size/ev:8.2f} {m/1024:7.1f}MB')
" "$calls"
[ -n "$BASE" ] && echo "  BASE = $BASE"
if [ -n "${VERIFY:-}" ]; then
	mkdir pb && protoc -I "$ROOT/tests/proto" --python_out=pb "$ROOT/tests/proto/perfetto_trace_subset.proto" &&
		"$SONDE" export -i tr --format=perfetto -o v.pftrace &&
		/usr/bin/python3 "$ROOT/bench/perfetto_verify.py" pb v.pftrace >v.json &&
		python3 - "$calls" <<'PY' || echo "  independent decoder: FAILED ($(tail -1 v.json 2>/dev/null))"
import json, sys
v, calls = json.load(open("v.json")), int(sys.argv[1])
ok = not v["errors"] and v["slices"] == calls and not v["unknown_fields"]
print(f"  independent decoder (protobuf library, bench/perfetto_verify.py): {v['packets']} packets, "
      f"{v['slices']} slices for {calls} calls, {v['sequences']} sequences, errors {v['errors'] or 'none'}, "
      f"{v['seconds']} s: {'ok' if ok else 'NOT OK'}")
sys.exit(0 if ok else 1)
PY
fi
rm -rf "$W"

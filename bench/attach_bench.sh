#!/usr/bin/env bash
# bench/attach_bench.sh — `sonde record -p`, side by side in one run, never pass/fail:
#  (a) time from starting `sonde record -p PID` to the recording being live
#      (sonde's "recording process" line: the agent has started, the sleds
#      are on) on a sonde-cc program with 100 busy threads; ROUNDS rounds, a
#      fresh process each (a process is attached once), median and range;
#  (b) per-call cost after the attach against a launched recording of the
#      same program: fib(N) timed by the program itself on its main thread,
#      dormant (no sonde), launched (`sonde record -- prog`) and attached
#      (released after the attach), profile and trace; medians of ROUNDS;
#      ns per call above dormant and the ratio attached / launched.
# Usage: [OLD=/other/build] BUILD=build bash bench/attach_bench.sh [N]   (needs ptrace of a non-child)
# SONDE_ATTACH_TIMES=1 in the environment: sonde's phase times of every attach
# of (a) on stderr (src/attach/times.c).
set -u
BUILD=$(cd "${BUILD:-$(dirname "$0")/../build}" && pwd)
OLD=${OLD:+$(cd "$OLD" && pwd)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-30}
ROUNDS=${ROUNDS:-7}
W=$(mktemp -d /tmp/sonde-attach-bench.XXXXXX)
cd "$W" || exit 1
"$BUILD/bin/sonde-cc" -O2 -g -pthread "$ROOT/bench/attach_target.c" -o target || exit 1
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cpus"
SONDE=$BUILD/bin/sonde OLDSONDE=${OLD:+$OLD/bin/sonde} N=$N ROUNDS=$ROUNDS python3 - <<'PY'
import os, re, signal, statistics as st, subprocess, sys, time
S, N, R = os.environ["SONDE"], int(os.environ["N"]), int(os.environ["ROUNDS"])
OLD = os.environ.get("OLDSONDE", "")

def start(nthreads, fifo):
    for f in (fifo, "pid"):
        if f != "-" and os.path.exists(f): os.unlink(f)
    if fifo != "-": os.mkfifo(fifo)
    if os.path.exists("pid"): os.unlink("pid")
    p = subprocess.Popen(["./target", str(nthreads), fifo, "pid", str(N)], stdout=subprocess.PIPE, text=True)
    while not (os.path.exists("pid") and open("pid").read().strip()): time.sleep(0.005)
    return p, int(open("pid").read())

def attach(pid, mode, out, sonde=S):
    t0 = time.monotonic()
    s = subprocess.Popen([sonde, "record", *mode, "-p", str(pid), "-o", out], stderr=subprocess.PIPE, text=True)
    while True:  # phase times (SONDE_ATTACH_TIMES=1) come first: passed on
        line = s.stderr.readline()
        if not line.startswith("sonde: attach: "): break
        print(line, end="", file=sys.stderr)
    t = time.monotonic() - t0
    if "recording process" not in line: raise SystemExit("sonde did not start: " + line)
    return s, t

def ns_of(out): return float(re.search(r"ns (\d+)", out).group(1)), int(re.search(r"calls (\d+)", out).group(1))

# (a) time to live, 100 threads
lat = {S: [], OLD: []}
for _ in range(R):
    for sonde in ([S, OLD] if OLD else [S]):
        p, pid = start(100, "fifo")
        time.sleep(0.3)  # the threads are all running
        s, t = attach(pid, [], "a.data", sonde)
        lat[sonde].append(t * 1e3)
        s.send_signal(signal.SIGINT); s.communicate()
        with open("fifo", "w") as f: f.write("go\n")
        p.communicate()
for sonde in ([S, OLD] if OLD else [S]):
    v = lat[sonde]
    print(f"(a) sonde record -p to live, 100 threads, {sonde}: median {st.median(v):.1f} ms "
          f"(min {min(v):.1f}, max {max(v):.1f}, {R} rounds)")
if OLD:
    print(f"    ratio of the medians, this build / OLD: {st.median(lat[S]) / st.median(lat[OLD]):.2f}")

# (b) per call, same program, side by side
res = {}
for r in range(R):
    for mode in ([], ["--trace"]):
        m = "trace" if mode else "profile"
        p, pid = start(0, "-"); o = p.communicate()[0]               # dormant
        res.setdefault("dormant", []).append(ns_of(o))
        os.unlink("pid")
        q = subprocess.run([S, "record", *mode, "-o", "l.data", "--", "./target", "0", "-", "pid", str(N)],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        res.setdefault("launched " + m, []).append(ns_of(q.stdout))
        p, pid = start(0, "fifo")
        s, _ = attach(pid, mode, "b.data")
        with open("fifo", "w") as f: f.write("go\n")
        o = p.communicate()[0]
        s.send_signal(signal.SIGINT); s.communicate()
        res.setdefault("attached " + m, []).append(ns_of(o))
calls = res["dormant"][0][1]
med = {k: st.median(x[0] for x in v) for k, v in res.items()}
print(f"(b) fib({N}): {calls} calls on the main thread, medians of {R} rounds (ns per call of the work):")
for k in ("dormant", "launched profile", "attached profile", "launched trace", "attached trace"):
    print(f"    {k:18s} {med[k] / calls:7.2f} ns/call   ({med[k] / 1e6:.1f} ms)")
for m in ("profile", "trace"):
    a, l, d = med["attached " + m], med["launched " + m], med["dormant"]
    print(f"    {m}: cost above dormant, attached {(a - d) / calls:.2f} ns/call, launched {(l - d) / calls:.2f} ns/call;"
          f" ratio attached/launched (whole work) {a / l:.3f}")
PY
rm -rf "$W"

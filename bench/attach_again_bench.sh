#!/usr/bin/env bash
# bench/attach_again_bench.sh — attaching again and again (docs/ATTACH.md,
# "Attaching again", "Windows"), side by side in one run, never pass/fail.
# A plain gcc program with 10,000 functions (generated), one thread calling
# them in rotation and printing its own calls per 100 ms; every attach
# patches all 10,000 without a rebuild.  On ONE process, ROUNDS times:
#  (a) the time to attach: from starting `sonde record -p --duration D` to
#      its "recording process" line (the functions are patched, the thread
#      runs again), and to detach: from that line's round's end (--duration)
#      to sonde's exit (the bytes back, the recording written);
#  (b) one window of the repeated form (`--every 2D --duration D --count 1`)
#      against one recording of the same length (`--duration D`): wall time
#      of the sonde command;
#  (c) the program's own call rate (calls per 100 ms), against a second copy
#      of it that runs beside it the whole time and is never attached (the
#      machine's load hits both alike): the ratio of the two over the same
#      100 ms ticks, median, before any attach, during a recording, and
#      between windows (after attaches: what a process costs when it is not
#      recorded).
# Usage: BUILD=build bash bench/attach_again_bench.sh [ROUNDS]   (needs ptrace of a non-child)
set -u
BUILD=$(cd "${BUILD:-$(dirname "$0")/../build}" && pwd)
ROUNDS=${1:-5}
D=${D:-1}
W=$(mktemp -d /tmp/sonde-again-bench.XXXXXX)
cd "$W" || exit 1
python3 - <<'PY' > many.c
N = 10000
print("#include <stdio.h>\n#include <time.h>\n#include <unistd.h>")
for i in range(N):
    print(f"__attribute__((noinline)) long f{i}(long x) {{ __asm__ volatile(\"\" ::: \"memory\"); return x + {i}; }}")
print("long (*tab[])(long) = {" + ",".join(f"f{i}" for i in range(N)) + "};")
print("""
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv) {
	FILE *pf = fopen(argv[1], "w"); fprintf(pf, "%d\\n", (int)getpid()); fclose(pf);
	double end = now() + atof(argv[2]), next = now() + 0.1; long s = 0, calls = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (now() < end) {
		for (int k = 0; k < 100000; k++) s += tab[(calls + k) % 10000](k);
		calls += 100000;
		double t = now();
		if (t >= next) { printf("%.3f %ld\\n", t, calls); calls = 0; next = t + 0.1; }
	}
	return (int)(s & 1);
}""")
PY
sed -i '1i #include <stdlib.h>' many.c
gcc -O2 -g -o many many.c || exit 1
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
SONDE=$BUILD/bin/sonde ROUNDS=$ROUNDS D=$D python3 - <<'PY'
import os, signal, statistics as st, subprocess, sys, time
S, R, D = os.environ["SONDE"], int(os.environ["ROUNDS"]), float(os.environ["D"])
total = 30 + R * (6 * D + 4)
if os.path.exists("pid"): os.unlink("pid")
prog = subprocess.Popen(["./many", "pid", str(total)], stdout=open("rate.txt", "w"))
ctl = subprocess.Popen(["./many", "pid.ctl", str(total)], stdout=open("ctl.txt", "w"))
while not (os.path.exists("pid") and open("pid").read().strip()): time.sleep(0.005)
pid = int(open("pid").read())
def ticks(f, a, b):
    v = []
    for line in open(f):
        t, n = line.split()
        if a <= float(t) <= b: v.append((float(t), int(n)))
    return v
def rates(a, b):
    """ratio of the attached program's rate to the control's, tick by tick (nearest tick)"""
    c = ticks("ctl.txt", a - 0.1, b + 0.1)
    out = []
    for t, n in ticks("rate.txt", a, b):
        if c:
            ct, cn = min(c, key=lambda x: abs(x[0] - t))
            if cn: out.append(n / cn)
    return out
def rec(args, tag):
    err = open(tag + ".err", "w+")
    t0 = time.monotonic()
    p = subprocess.Popen([S, "record", "-p", str(pid), "-o", tag] + args, stderr=err)
    live = None
    while p.poll() is None:
        err.seek(0)
        if live is None and "recording process" in err.read():
            live = time.monotonic()
        time.sleep(0.001)
    t1 = time.monotonic()
    if p.returncode != 0:
        err.seek(0); sys.exit("sonde failed: " + err.read()[-400:])
    return t0, live, t1
time.sleep(3.0)
t = time.monotonic(); base = rates(t - 2.5, t)
att, det, win, one, during, between = [], [], [], [], [], []
for r in range(R):
    t0, live, t1 = rec(["--duration", str(D)], f"d{r}")
    att.append(live - t0); det.append(t1 - live - D); one.append(t1 - t0)
    during += rates(live + 0.15, live + D - 0.05)
    time.sleep(1.0)
    t = time.monotonic(); between += rates(t - 0.9, t)
    w0, wl, w1 = rec(["--duration", str(D), "--every", str(2 * D), "--count", "1"], f"w{r}")
    win.append(w1 - w0)
    time.sleep(0.3)
prog.wait(); ctl.wait()
ms = lambda v: f"median {st.median(v) * 1e3:7.1f} ms  (min {min(v) * 1e3:.1f}, max {max(v) * 1e3:.1f})"
print(f"10,000 functions patched at each attach, {R} rounds on one process, D = {D} s")
print(f"(a) attach (start -> recording):            {ms(att)}")
print(f"    detach (end of --duration -> exit):      {ms(det)}")
print(f"(b) one window (--every {2*D:g} --count 1):      {ms(win)}")
print(f"    one recording (--duration {D:g}):           {ms(one)}")
md = lambda v: st.median(v) if v else float("nan")
print(f"(c) call rate / the never-attached copy's, before any attach: {md(base):.3f}")
print(f"    during a recording:                                        {md(during):.3f}")
print(f"    between windows (after attaches):                          {md(between):.3f}")
PY
rm -rf "$W"

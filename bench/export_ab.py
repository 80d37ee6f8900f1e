"""export_ab.py — one recording exported by several sonde builds (or
settings), alternated round after round, so that a shared machine's load
falls on all of them alike; never pass/fail.  Per variant: the fastest and
the median CPU (user + sys of the export, from wait4), their user/sys split
(the median's: each one's median),
the median wall time, and events/s per core (and per second of wall time:
what a user waits) when EVENTS is given (2 per call).  A new output file
each run.  SYNC=1 waits for the disk (sync(2), not timed) before each run,
so that no run pays for the previous one's writeback.  OUT=/dev/null writes
there instead of a file (the export's own work, without the writing's).

Usage: EVENTS=N python3 bench/export_ab.py REC FORMAT ROUNDS NAME=BUILD[,ENV=VALUE] ...
e.g.   python3 bench/export_ab.py tr perfetto 5 before=../old/build after=build \\
           after,pagecache=build,SONDE_EXPORT_DIRECT=0"""
import os
import statistics
import sys
import tempfile
import time

rec, fmt, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
variants = []
for a in sys.argv[4:]:
    name, spec = a.split("=", 1)
    build, *envs = spec.split(",")
    variants.append((name, os.path.join(build, "bin", "sonde"), dict(e.split("=", 1) for e in envs)))
out = os.environ.get("OUT") or os.path.join(tempfile.mkdtemp(prefix="sonde-export-ab."), "out")
is_file = not os.environ.get("OUT")
res = {v[0]: [] for v in variants}
load0 = " ".join(open("/proc/loadavg").read().split()[:3])
for _ in range(rounds):
    for name, sonde, env in variants:
        if is_file and os.path.exists(out):
            os.unlink(out)
        if os.environ.get("SYNC") == "1":
            os.sync()
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os.execve(sonde, ["sonde", "export", "-i", rec, "--format=" + fmt, "-o", out], {**os.environ, **env})
        _, st, ru = os.wait4(pid, 0)
        wall = time.monotonic() - t0
        if st:
            sys.exit(f"{name}: {sonde} export failed (status {st})")
        res[name].append((ru.ru_utime, ru.ru_stime, wall))
if is_file:
    os.unlink(out)
    os.rmdir(os.path.dirname(out))
ev = int(os.environ.get("EVENTS", "0"))
for name, runs in res.items():
    runs.sort(key=lambda r: r[0] + r[1])
    tot = [u + s for u, s, _ in runs]
    wall = statistics.median(w for _, _, w in runs)
    line = (f"{name:16} fastest {tot[0] * 1e3:6.0f} ms (user {runs[0][0] * 1e3:5.0f}, sys {runs[0][1] * 1e3:4.0f})"
            f"  median {statistics.median(tot) * 1e3:6.0f} ms (user {statistics.median(u for u, _, _ in runs) * 1e3:5.0f}, "
            f"sys {statistics.median(s for _, s, _ in runs) * 1e3:4.0f})  wall median {wall * 1e3:6.0f} ms")
    if ev:
        line += f"  events/s per core: {ev / tot[0] / 1e6:5.1f}M fastest, {ev / statistics.median(tot) / 1e6:5.1f}M median, wall {ev / wall / 1e6:5.1f}M"
    print(line)
print("load average", load0, "->", " ".join(open("/proc/loadavg").read().split()[:3]))

"""timing_counts.py — bench/pg_timing_bench.sh's and redis_timing_bench.sh's
comparison of one fixed workload's calls under --timing=all and another
setting, function by function: how many functions have the same count, the
calls of each, and the largest differences (a server's timers make some
counts follow the run's length, not the workload).

    python3 timing_counts.py [--busiest] ALL.json OTHER.json LABEL
--busiest: the JSON is `sonde report --processes`'s, and the process that
made the most calls is compared (PostgreSQL's backend)."""
import json
import sys

args = sys.argv[1:]
busiest = args[:1] == ["--busiest"]
if busiest:
    args = args[1:]
a_path, b_path, label = args


def counts(path):
    d = json.load(open(path))
    fns = max(d["processes"], key=lambda p: sum(f["calls"] for f in p["functions"]))["functions"] if busiest \
        else d["functions"]
    c = {}
    for f in fns:
        c[f["name"]] = c.get(f["name"], 0) + f["calls"]
    return c


a, b = counts(a_path), counts(b_path)
names = set(a) | set(b)
same = sum(1 for k in names if a.get(k) == b.get(k))
diff = sorted(((k, a.get(k), b.get(k)) for k in names if a.get(k) != b.get(k)),
              key=lambda x: -abs((x[1] or 0) - (x[2] or 0)))
print(f"{label} vs all: {same} of {len(names)} functions with equal counts, "
      f"{sum(a.values())} vs {sum(b.values())} calls; largest differences {diff[:4]}")

"""profile_check.py — helpers for end-to-end tests of profiles: run sonde's
JSON reports and check them.  Prints "ok - NAME" / "not ok - NAME: why"."""
import json, os, subprocess, sys

SONDE = os.environ.get("SONDE", "sonde")
failures = 0

def say(ok, name, why=""):
    global failures
    if ok:
        print(f"ok - {name}", flush=True)
    else:
        failures += 1
        print(f"not ok - {name}: {why}", flush=True)

def sonde_json(*args, data="sonde.data"):
    out = subprocess.run([SONDE, *args, "-i", data, "--format=json"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"sonde {' '.join(args)} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)

def report(data="sonde.data"):
    return {f["name"]: f for f in sonde_json("report", data=data)["functions"]}

def callers_callees(name, data="sonde.data"):
    return sonde_json("callers-callees", name, data=data)

def check_invariants(names, data="sonde.data", label=""):
    """Both seed-002 invariants on every named function.  Each attributed value
    is rounded to whole ns independently, so allow 1 ns per term."""
    bad = []
    for n in names:
        cc = callers_callees(n, data=data)
        f = cc["function"]
        tol = len(cc["callers"]) + len(cc["callees"]) + 2
        s_callers = sum(c["attributed_ns"] for c in cc["callers"])
        s_callees = sum(c["attributed_ns"] for c in cc["callees"])
        if abs(s_callers - f["inclusive_ns"]) > tol:
            bad.append(f"{n}: callers sum {s_callers} != inclusive {f['inclusive_ns']}")
        if abs(f["exclusive_ns"] + s_callees - f["inclusive_ns"]) > tol:
            bad.append(f"{n}: exclusive {f['exclusive_ns']} + callees {s_callees} != inclusive {f['inclusive_ns']}")
        if sum(c["calls"] for c in cc["callers"]) != f["calls"]:
            bad.append(f"{n}: callers' calls do not sum to calls")
    say(not bad, f"invariants hold on every function {label}".strip(), "; ".join(bad[:5]))

def near(a, b, rel):
    return abs(a - b) <= rel * abs(b)

# near_split(x, key, want, rel): x[key] (a report's or a callers-callees
# row's *_ns) within rel of what the program measured itself.  A thread
# preempted between a hook and the program's own clock read (a loaded
# machine) adds to sonde's time what the program did not measure, at most
# the time sonde split off as off-CPU (x's matching *_cpu_ns): allowed; on
# an idle machine ~0, and as strict as near without a split.
def near_split(x, key, want, rel):
    cpu = x.get(key.replace("_ns", "_cpu_ns"))
    off = max(0, x[key] - cpu) if cpu is not None else 0
    return abs(x[key] - want) <= rel * want + off

# tree_paths(data, key): every call path of `sonde tree` (all threads, all
# processes; a tuple of names from the outermost call) -> [the sum of key
# over its nodes (None if one has it null), how many nodes].
def tree_paths(data, key):
    out = {}
    def walk(n, path):
        p = path + (n["name"],)
        s = out.setdefault(p, [0, 0])
        v = n.get(key)
        s[0] = None if v is None or s[0] is None else s[0] + v
        s[1] += 1
        for c in n.get("children", []):
            walk(c, p)
    for t in sonde_json("tree", data=data)["threads"]:
        for r in t["roots"]:
            walk(r, ())
    return out

# check_diff_paths(label, d, base, new): `sonde diff BASE NEW`'s call paths
# (d, its JSON) against `sonde tree` of each recording (issue 38): with
# both splits measured, a path's inclusive_cpu_ns_base / _new is the sum of
# its nodes' inclusive_cpu_ns over the threads (each rounded to whole ns:
# 1 ns a node) and _delta is _new - _base; else all three are null, not 0.
# Rows of one name path (same names, other files) are added up.
def check_diff_paths(label, d, base, new):
    split = d.get("cpu_split_base") == "measured" and d.get("cpu_split_new") == "measured"
    rows = {}
    for r in d["paths"]:
        rows.setdefault(tuple(r["path"]), []).append(r)
    keys = [f"inclusive_cpu_ns_{s}" for s in ("base", "new", "delta")]
    missing = [r["path"] for r in d["paths"] if any(k not in r for k in keys)]
    say(rows and not missing, f"{label}: every call path has {', '.join(keys)}", f"{len(rows)} paths; without: {missing[:3]}")
    if missing:
        return
    if not split:
        bad = [(r["path"], [r.get(k, 0) for k in keys]) for r in d["paths"] if any(r.get(k, 0) is not None for k in keys)]
        say(not bad, f"{label}: a recording without the split ({d.get('cpu_split_base')} / {d.get('cpu_split_new')}): "
            "the paths' CPU times are null, not 0", str(bad[:3]))
        return
    for side, data in (("base", base), ("new", new)):
        tree, bad = tree_paths(data, "inclusive_cpu_ns"), []
        for p, rs in rows.items():
            got = [r[f"inclusive_cpu_ns_{side}"] for r in rs]
            want, nodes = tree.get(p, (0, 0))
            if want is None or None in got or abs(sum(got) - want) > nodes + len(rs):
                bad.append(f"{' > '.join(p)}: diff {got}, tree {want} ({nodes} nodes)")
        say(not bad, f"{label}: each path's inclusive CPU time in {side} = its nodes' in `sonde tree` "
            f"({len(rows)} paths, {sum(n for _, n in tree.values())} nodes)", "; ".join(bad[:4]))
    bad = [r["path"] for r in d["paths"] if r["inclusive_cpu_ns_delta"] != r["inclusive_cpu_ns_new"] - r["inclusive_cpu_ns_base"]]
    say(not bad, f"{label}: each path's inclusive_cpu_ns_delta = new - base", str(bad[:3]))

def done():
    sys.exit(1 if failures else 0)

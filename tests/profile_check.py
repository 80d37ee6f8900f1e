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

def done():
    sys.exit(1 if failures else 0)

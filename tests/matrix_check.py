"""matrix_check.py — checks recordings against the calls the recorded programs
counted and printed themselves (tests/progs/*.c print them as lines):

    calls F N            F was called N times (all processes and threads)
    calls A->B N         A called B N times
    per-thread F N...    F's count in each thread that called it (any order)
    thread T F N         thread named T called F N times (and no other
                         instrumented function than those listed for T)
    module F PATH        F lives in the object PATH (as dladdr says)

Usage: python3 matrix_check.py JOBS, JOBS holding one line per recording:
    LABEL DATA OUTPUT [trace]
where OUTPUT is what the program printed while recorded.  With "trace", the
recording's Chrome export is checked too: one slice per call, per thread.
Every check is named LABEL/<what>."""
import collections, json, os, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_check import SONDE, say, sonde_json, done


def plain(name):
    """A function's name without a C++ parameter list, as the programs print it."""
    return name.split("(", 1)[0]


def printed(path):
    p = {"calls": {}, "pairs": {}, "per_thread": {}, "threads": collections.defaultdict(dict), "modules": {}}
    for line in open(path, errors="replace"):
        w = line.split()
        if len(w) == 3 and w[0] == "calls" and "->" in w[1]:
            p["pairs"][tuple(w[1].split("->", 1))] = int(w[2])
        elif len(w) == 3 and w[0] == "calls":
            p["calls"][w[1]] = int(w[2])
        elif len(w) >= 3 and w[0] == "per-thread":
            p["per_thread"][w[1]] = sorted(int(x) for x in w[2:])
        elif len(w) == 4 and w[0] == "thread":
            p["threads"][w[1]][w[2]] = int(w[3])
        elif len(w) == 3 and w[0] == "module":
            p["modules"][w[1]] = w[2]
    return p


# A plain build recorded without a rebuild (a job line's word "plain",
# tests/matrix_lib.sh's record with MATRIX_PLAIN=1) has the functions the
# toolchain's start-up files bring (crti.o, crtbegin.o) instrumented too: real
# calls, but not the program's, so the checks leave them out.
CRT = {"_init", "_fini", "frame_dummy", "register_tm_clones", "deregister_tm_clones", "__do_global_dtors_aux"}
IGNORE = set()


def counts(functions):
    c = collections.Counter()
    for f in functions:
        if plain(f["name"]) not in IGNORE:
            c[plain(f["name"])] += f["calls"]
    return c


def check_recording(label, data, output, trace):
    try:
        p = printed(output)
    except OSError as e:
        say(False, f"{label}/program printed its counts", str(e))
        return
    if not p["calls"]:
        say(False, f"{label}/program printed its counts", f"no 'calls' line in {output}")
        return
    try:
        rep = sonde_json("report", "--threads", data=data)
    except (RuntimeError, ValueError) as e:
        say(False, f"{label}/report", str(e))
        return
    total = counts(rep["functions"])
    for f, n in p["calls"].items():
        say(total.get(f) == n, f"{label}/{f} calls", f"sonde {total.get(f)}, program {n}")
    # caller -> callee pairs, from each callee's callers view
    by_callee = collections.defaultdict(dict)
    for (a, b), n in p["pairs"].items():
        by_callee[b][a] = n
    for b, want in by_callee.items():
        try:
            callers = counts(callers_of(b, data))
        except (RuntimeError, ValueError) as e:
            callers = {}
            why = str(e)
        else:
            why = ""
        for a, n in want.items():
            say(callers.get(a) == n, f"{label}/{a}->{b} calls",
                why or f"sonde {callers.get(a)} (callers of {b}: {dict(callers)}), program {n}")
    threads = [(t.get("name", ""), counts(t["functions"])) for t in rep["threads"]]
    for f, want in p["per_thread"].items():
        got = sorted(c[f] for _, c in threads if c.get(f))
        say(got == want, f"{label}/{f} calls per thread", f"sonde {got}, program {want}")
    for t, want in p["threads"].items():
        got = [dict(+c) for name, c in threads if name == t]
        say(got == [want], f"{label}/thread {t} calls", f"sonde {got}, program {want}")
    if p["modules"]:
        where = {plain(f["name"]): f.get("module") for f in rep["functions"]}
        for f, path in p["modules"].items():
            got = where.get(f)
            say(got is not None and os.path.realpath(got) == os.path.realpath(path), f"{label}/{f} in {os.path.basename(path)}",
                f"sonde {got}, dladdr {path}")
    say(rep["lost_events"] == 0 and rep["unnumbered_calls"] == 0, f"{label}/nothing lost",
        f"{rep['lost_events']} lost events, {rep['unnumbered_calls']} unnumbered calls")
    if trace:
        check_trace(label, data, p)


def callers_of(name, data):
    return sonde_json("callers-callees", name, data=data)["callers"]


def check_trace(label, data, p):
    """The Chrome export holds one slice per call, on the thread that made it."""
    out = data.rstrip("/") + ".chrome.json"
    r = subprocess.run([SONDE, "export", "-i", data, "--format=chrome", "-o", out], capture_output=True, text=True)
    if r.returncode != 0:
        say(False, f"{label}/chrome export", r.stderr.strip())
        return
    ev = json.load(open(out))["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    slices = collections.defaultdict(collections.Counter)
    total = collections.Counter()
    for e in ev:
        if e["ph"] == "X" and e.get("cat") != "sched":  # not the state tracks
            if plain(e["name"]) in IGNORE or "begun" in e.get("args", {}):
                continue  # a frame open before its slice (fork, attach, a coroutine resumed): not a call
            slices[names.get((e["pid"], e["tid"]), "?")][plain(e["name"])] += 1
            total[plain(e["name"])] += 1
    for f, n in p["calls"].items():
        say(total.get(f) == n, f"{label}/{f} slices", f"sonde {total.get(f)}, program {n}")
    for t, want in p["threads"].items():
        say(dict(slices.get(t, {})) == want, f"{label}/thread {t} slices", f"sonde {dict(slices.get(t, {}))}, program {want}")


if __name__ == "__main__":
    for line in open(sys.argv[1]):
        w = line.split()
        if len(w) >= 3:
            IGNORE = CRT if "plain" in w[3:] else set()
            check_recording(w[0], w[1], w[2], "trace" in w[3:])
    done()

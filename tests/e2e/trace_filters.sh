# Trace filters keep exactly the calls they should (expected values from the
# test programs' known behaviour): --depth 3 on a recursion 10 deep, --min-time
# 1ms on 3 ms and sub-microsecond calls, -F / -N globs, --domain auto.
. "$ROOT/tests/lib.sh"
for p in trace_recurse trace_mintime trace_filter; do
	"$SONDE_CC_BIN" -O1 -g "$PROGS/$p.c" -o $p || { notok "build $p" "sonde-cc failed"; exit 1; }
done
rec() { # DIR ARGS... -- PROG : record and export chrome JSON to DIR.json
	local d=$1; shift
	"$SONDE" record --trace -o "$d" "$@" >/dev/null 2>"$d.err" && "$SONDE" export -i "$d" --format=chrome -o "$d.json" 2>>"$d.err" \
		|| { notok "record $d" "$(tail -1 "$d.err")"; }
}
rec depth --depth 3 -- ./trace_recurse
rec mintime --min-time 1ms -- ./trace_mintime
rec only -F 'parse_*' -- ./trace_filter
rec never -N 'log_*' -- ./trace_filter
rec both -F 'parse_*' -N helper -- ./trace_filter
# --domain auto: the functions that left records last time (the -F run) become the traced set
rm -rf dom; rec dom -F 'parse_*' -- ./trace_filter
cp dom/domain.txt domain.first
rec dom --domain auto -- ./trace_filter
python3 - <<'PY'
import json, collections
fails = 0
def say(ok, name, why=""):
    print(f"ok - {name}" if ok else f"not ok - {name}: {why}", flush=True)
def slices(d):
    try: return [e for e in json.load(open(d + ".json"))["traceEvents"] if e["ph"] == "X" and e.get("cat") != "sched"]  # not the state tracks
    except Exception as e: return []
def counts(d): return dict(collections.Counter(e["name"] for e in slices(d)))
def max_depth(d):
    m = 0
    by = collections.defaultdict(list)
    for e in slices(d): by[e["tid"]].append(e)
    for s in by.values():
        s.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in s:
            while stack and stack[-1] <= e["ts"] + 1e-6 and stack[-1] < e["ts"] + e["dur"] - 1e-6 or (stack and stack[-1] < e["ts"]):
                stack.pop()
            stack.append(e["ts"] + e["dur"]); m = max(m, len(stack))
    return m
# --depth 3: main (1), rec at depths 2 and 3 for each of the 3 recursions, leaf (2)
c = counts("depth")
say(max_depth("depth") == 3, "--depth 3: nothing deeper than 3", f"max depth {max_depth('depth')}")
say(c == {"main": 1, "rec": 6, "leaf": 1}, "--depth 3: exactly the calls at depth <= 3", str(c))
# --min-time 1ms
s = slices("mintime"); c = counts("mintime")
short = [e for e in s if e["dur"] < 1000.0]
say(not short, "--min-time 1ms: no slice shorter than 1 ms", str(short[:3]))
say(c.get("slow") == 3 and c.get("medium") == 2 and c.get("main") == 1, "--min-time 1ms: every 3 ms call remains", str(c))
# (a fast() call the scheduler preempted for over 1 ms lasts over 1 ms and
# stays, as it should: seen once at load 7-8; a handful of the 5,020 at most)
say(c.get("fast", 0) <= 5, "--min-time 1ms: sub-microsecond calls leave nothing (but a preempted one)", str(c))
# -F / -N
say(counts("only") == {"parse_a": 2, "parse_b": 3, "helper": 6}, "-F 'parse_*': the matches and what they call", str(counts("only")))
say(counts("never") == {"main": 1, "parse_a": 2, "parse_b": 3, "helper": 11, "other": 5}, "-N 'log_*': all but log_*", str(counts("never")))
say(counts("both") == {"parse_a": 2, "parse_b": 3}, "-F 'parse_*' -N helper", str(counts("both")))
dom = [l.strip() for l in open("domain.first") if l.strip() and not l.startswith("#")]
say(sorted(dom) == ["helper", "parse_a", "parse_b"], "domain.txt: the functions that left records", str(dom))
say(counts("dom") == {"parse_a": 2, "parse_b": 3, "helper": 11}, "--domain auto: exactly the domain's functions, wherever called", str(counts("dom")))
PY
grep -q "domain: 3 of" dom.err && ok "--domain reports what it left out" || notok "--domain reports what it left out" "$(cat dom.err)"
# -N 'log_*' leaves log_x and log_y dormant: their sleds stay nops, so their 5
# calls never reach a hook (none is even counted as filtered).
check "-N: log_x and log_y stay dormant, their calls never reach a hook" \
	grep -q "2 functions left dormant (their calls cost nothing); 0 calls kept out" never.err

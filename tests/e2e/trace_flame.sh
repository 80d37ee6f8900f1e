# The SVG flame graph (from a profile, from a trace and from a trace's time
# range) is well-formed XML, and shows exactly the call tree the program
# reports it made (tests/progs/flame_counts.c prints each calling path with
# its calls and the time it measured inside the function): one frame per
# path, each frame inside its caller's, the call counts of the paths, and
# widths in the ratios of the program's own measured times.  It renders in
# headless Chromium with its script running (skip if Chromium is missing).
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O1 -g "$PROGS/flame_counts.c" -o flame_counts || { notok build "sonde-cc failed"; exit 1; }
"$SONDE" record -o prof -- ./flame_counts >prof.out 2>prof.err || notok "record" "$(tail -3 prof.err)"
"$SONDE" record --trace -o tr -- ./flame_counts >tr.out 2>tr.err || notok "record --trace" "$(tail -3 tr.err)"
check "flamegraph of a profile" "$SONDE" flamegraph -i prof -o prof.svg
check "flamegraph of a trace" "$SONDE" flamegraph -i tr -o tr.svg
check "flamegraph of a trace time range" "$SONDE" flamegraph -i tr --time-range 0,100 -o range.svg
"$SONDE" report -i prof --format=json >prof.rep.json
"$SONDE" report -i tr --format=json >tr.rep.json
python3 - <<'PY'
import json, re, xml.etree.ElementTree as ET
def say(ok, name, why=""):
    print(f"ok - {name}" if ok else f"not ok - {name}: {why}", flush=True)
NS = "{http://www.w3.org/2000/svg}"

def program(out):
    """What the program says it did: {path: (calls, ns)}, and its fast() loop span."""
    paths, span = {}, None
    for line in open(out):
        f = line.split()
        if f[:1] == ["path"]:
            paths[f[1]] = (int(f[2]), int(f[3]))
        elif f[:2] == ["span", "main;fast"]:
            span = int(f[2])
    return paths, span

# The same recording gives the profile's and the trace's graphs; the time
# range 0..100 s covers the whole trace, so it shows the whole program too.
for svg, out in (("prof.svg", "prof.out"), ("tr.svg", "tr.out"), ("range.svg", "tr.out")):
    want, span = program(out)
    # The share of each function's time off the CPU, as sonde split it: a
    # thread preempted between a hook and the program's own clock read (a
    # loaded machine) widens a frame beyond what the program measured, by
    # at most that time.  On an idle machine it is ~0 and the check strict.
    rep = {f["name"]: f for f in json.load(open(out.replace(".out", ".rep.json")))["functions"]}
    def off(path):
        f = rep.get(path.split(";")[-1])
        if not f or f.get("inclusive_cpu_ns") is None or not f["inclusive_ns"]:
            return 0.0
        return max(0, f["inclusive_ns"] - f["inclusive_cpu_ns"]) / f["inclusive_ns"]
    if "main" not in want or span is None:
        say(False, f"{svg}: the program reported its calls", open(out).read()[:300]); continue
    try:
        root = ET.parse(svg).getroot()
    except Exception as e:
        say(False, f"{svg} is well-formed XML", repr(e)); continue
    say(root.tag == NS + "svg", f"{svg} is well-formed SVG")
    say(root.find(NS + "script") is not None, f"{svg}: zoom script embedded")
    g = [x for x in root.iter(NS + "g") if x.get("class") == "f"]
    say(len(g) > 0 and all(x.find(NS + "title") is not None for x in g), f"{svg}: every frame has a hover title")
    # Each frame's calling path, from the geometry alone: its caller is the
    # frame one row down whose span contains it.
    fr = [dict(n=x.get("data-n"), x=float(x.get("data-x")), w=float(x.get("data-w")), d=int(x.get("data-d")),
               t=x.find(NS + "title").text or "") for x in g]
    fr.sort(key=lambda f: f["d"])
    orphans = []
    for f in fr:
        if f["d"] == 0:
            f["path"] = None if f["n"] == "all" else "?"
            continue
        up = [p for p in fr if p["d"] == f["d"] - 1 and "path" in p and
              p["x"] - 1e-9 <= f["x"] and f["x"] + f["w"] <= p["x"] + p["w"] + 1e-9]
        if len(up) != 1:
            orphans.append(f["n"]); f["path"] = "?"; continue
        f["path"] = f["n"] if up[0]["path"] is None else up[0]["path"] + ";" + f["n"]
    say(not orphans and sum(f["d"] == 0 for f in fr) == 1, f"{svg}: one root, every frame inside its caller's frame",
        f"frames without a caller: {orphans}")
    got = {f["path"]: f for f in fr if f["d"] > 0}
    say(sorted(got) == sorted(want) and len(got) == len(fr) - 1,
        f"{svg}: one frame per calling path the program reports ({len(want)})",
        f"graph {sorted(f['path'] for f in fr if f['d'])}, program {sorted(want)}")
    calls = {p: int(m.group(1)) for p, f in got.items() if (m := re.search(r"\((\d+) calls?,", f["t"]))}
    say(all(calls.get(p) == c for p, (c, _) in want.items()), f"{svg}: call counts of every path as the program counted them",
        f"graph {calls}, program { {p: c for p, (c, _) in want.items()} }")
    if any(p not in got for p in want):
        continue
    W = {p: got[p]["w"] for p in want}
    # main is the program's only outermost call: all of the graph.
    say(abs(W["main"] - 1.0) < 1e-6, f"{svg}: main is the whole graph", str(W["main"]))
    # Paths of calls of at least 0.1 ms each (so the cost of a call, its
    # hooks and clock reads, is negligible): width ratios equal the ratios of
    # the times the program measured inside the functions, within 3%.
    big = [p for p, (c, ns) in want.items() if ns >= 1e5 * c and p != "main"]
    def why(p):  # what sonde and the program each measured, to explain a failure
        f = rep.get(p.split(";")[-1], {})
        return f"{p}: sonde {f.get('inclusive_ns')} ns, on CPU {f.get('inclusive_cpu_ns')}, program {want[p][1]}"
    bad = [f"{a}/{b} graph {W[a] / W[b]:.4f} program {want[a][1] / want[b][1]:.4f} ({why(a)}; {why(b)})"
           for a in big for b in big if a < b and
           abs(W[a] / W[b] - want[a][1] / want[b][1]) > (0.03 + off(a) + off(b)) * want[a][1] / want[b][1]]
    say(len(big) >= 3 and not bad, f"{svg}: widths in the ratios of the program's measured times ({', '.join(sorted(big))})",
        "; ".join(bad) or str(big))
    # fast(): a few ns of work each, so the calls' cost around it counts: its
    # width lies between its own measured time and main's span of the loop.
    ref = "main;medium"
    lo, hi = want["main;fast"][1] / want[ref][1], span / want[ref][1]
    r = W["main;fast"] / W[ref]
    say(0.97 * lo <= r <= 1.03 * hi, f"{svg}: fast() width between its measured time and its loop's span",
        f"fast/medium graph {r:.4f}, program {lo:.4f}..{hi:.4f}")
PY
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$chrome" ]; then
	skip "flame graph renders in headless Chromium" "chromium is not installed (apt-get install -y chromium)"
	exit 0
fi
flags="--headless --no-sandbox --disable-gpu --disable-background-networking --disable-dev-shm-usage"
timeout 60 "$chrome" $flags --window-size=1200,300 --screenshot="$PWD/shot.png" "file://$PWD/tr.svg" >chrome.log 2>&1
size=$(stat -c %s shot.png 2>/dev/null || echo 0)
check "headless Chromium renders a screenshot of the SVG" test "$size" -gt 2000
timeout 60 "$chrome" $flags --dump-dom "file://$PWD/tr.svg" >dom.txt 2>>chrome.log
# the script marks the frames it placed: one per path the program reports, plus "all"
frames=$(( $(grep -c '^path ' tr.out) + 1 ))
if grep -q "data-ready=\"$frames\"" dom.txt; then ok "the SVG's script ran in Chromium ($frames frames)"
else notok "the SVG's script ran in Chromium" "no data-ready=\"$frames\" in the DOM: $(head -c 300 dom.txt)"; fi

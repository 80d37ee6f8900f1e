# The SVG flame graph (from a profile and from a trace) is well-formed XML,
# names the functions, has widths proportional to inclusive time, and renders
# in headless Chromium with its script running (skip if Chromium is missing).
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O1 -g "$PROGS/trace_mintime.c" -o trace_mintime || { notok build "sonde-cc failed"; exit 1; }
"$SONDE" record -o prof -- ./trace_mintime >/dev/null 2>&1
"$SONDE" record --trace -o tr -- ./trace_mintime >/dev/null 2>&1
check "flamegraph of a profile" "$SONDE" flamegraph -i prof -o prof.svg
check "flamegraph of a trace" "$SONDE" flamegraph -i tr -o tr.svg
check "flamegraph of a trace time range" "$SONDE" flamegraph -i tr --time-range 0,100 -o range.svg
"$SONDE" report -i prof --format=json >prof.json 2>/dev/null
"$SONDE" report -i tr --format=json >tr.json 2>/dev/null
python3 - <<'PY'
import xml.etree.ElementTree as ET
def say(ok, name, why=""):
    print(f"ok - {name}" if ok else f"not ok - {name}: {why}", flush=True)
NS = "{http://www.w3.org/2000/svg}"
for f in ("prof.svg", "tr.svg", "range.svg"):
    try:
        root = ET.parse(f).getroot()
    except Exception as e:
        say(False, f"{f} is well-formed XML", repr(e)); continue
    say(root.tag == NS + "svg", f"{f} is well-formed SVG")
    g = [x for x in root.iter(NS + "g") if x.get("class") == "f"]
    names = {x.get("data-n") for x in g}
    want = {"all", "main", "slow", "medium", "fast", "spin_ms"}
    say(want <= names, f"{f} names the functions", str(names))
    say(all(x.find(NS + "title") is not None for x in g), f"{f}: every frame has a hover title")
    say(root.find(NS + "script") is not None, f"{f}: zoom script embedded")
    w = {}
    for x in g:
        w.setdefault(x.get("data-n"), 0.0)
        w[x.get("data-n")] += float(x.get("data-w"))
    # slow: 3 calls x 3 ms busy-wait, medium 2 x 3 ms: at least 9 ms vs 6 ms (preemption on a
    # loaded machine only lengthens them), so the widths are ~3:2; and exactly the ratio of the
    # inclusive times sonde reports.
    r = w.get("slow", 0) / max(w.get("medium", 1e-9), 1e-9)
    if f != "range.svg":
        import json
        rep = {x["name"]: x for x in json.load(open(f.replace(".svg", ".json")))["functions"]}
        rr = rep["slow"]["inclusive_ns"] / rep["medium"]["inclusive_ns"]
        say(0.9 < r < 4 and abs(r - rr) < 0.01 * rr, f"{f}: width proportional to inclusive time",
            f"slow/medium widths {r:.3f}, inclusive times {rr:.3f}, program ~1.5")
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
frames=$(grep -c '<g class="f"' tr.svg)
if grep -q "data-ready=\"$frames\"" dom.txt; then ok "the SVG's script ran in Chromium ($frames frames)"
else notok "the SVG's script ran in Chromium" "no data-ready=\"$frames\" in the DOM: $(head -c 300 dom.txt)"; fi

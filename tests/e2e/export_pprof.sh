# sonde export --format=pprof, read by readers sonde did not write:
#  - `go tool pprof` (golang-go from Debian): on the Lua run of profile_lua.sh,
#    -raw and -top give per-function calls and flat time equal to
#    `sonde report --format=json` (calls and exclusive_ns exactly), cumulative
#    time equal to inclusive_ns (within 1 ns per sample: each sample's time is
#    a whole number of ns), recursive functions included; on a five-thread
#    --trace recording (tests/progs/trace_threads.c) -tags lists the threads
#    and the calls per thread are the program's;
#  - gzip -t; readelf -n for the build-ids; c++filt for the mangled names;
#  - tests/protobuf_read.py (written from the .proto text) for the string table.
# test-timeout: 1500 (the first run builds Lua into the test cache: slow under load)
. "$ROOT/tests/lib.sh"
export GOFLAGS=-mod=mod GOCACHE="$T/gocache" HOME="${HOME:-$T}"
if ! command -v go >/dev/null && [ "$(id -u)" = 0 ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null 2>&1
fi
have_go=0
command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1 && have_go=1
pprof() { go tool pprof "$@" 2>pprof.err; }

# Part 1: threads, a --trace recording (the export uses the tree built from the trace).
"$SONDE_CC_BIN" -O1 -g "$PROGS/trace_threads.c" -o trace_threads -lpthread || { notok build "sonde-cc failed"; exit 1; }
"$SONDE" record --trace -o tr -- ./trace_threads >/dev/null 2>rec.err || { notok "record --trace" "$(tail -2 rec.err)"; exit 1; }
"$SONDE" export -i tr --format=pprof -o tr.pb.gz 2>exp.err || { notok "export --format=pprof" "$(cat exp.err)"; exit 1; }
check "gzip -t accepts the export" gzip -t tr.pb.gz
python3 - "$ROOT" <<'PY'
import gzip, subprocess, sys
sys.path.insert(0, sys.argv[1] + "/tests")
from protobuf_read import fields
top = fields(gzip.open("tr.pb.gz").read())
strings = [v.decode() for f, v in top if f == 6]
ok = lambda c, n, why="": print(("ok - " if c else "not ok - ") + n + ("" if c else ": " + why))
ok(strings and strings[0] == "", "pprof: string_table[0] is \"\"", repr(strings[:3]))
types = [(strings[d[1]], strings[d[2]]) for d in (dict(fields(v)) for f, v in top if f == 1)]
# the trace's threads split their time (issue 38): cpu and off_cpu follow
ok(types == [("calls", "count"), ("time", "nanoseconds"), ("cpu", "nanoseconds"), ("off_cpu", "nanoseconds")],
   "pprof: sample types calls/count, time/nanoseconds, cpu/nanoseconds, off_cpu/nanoseconds", repr(types))
# build-id of the program's mapping, as readelf reads it from the ELF note
note = subprocess.run(["readelf", "-n", "trace_threads"], capture_output=True, text=True).stdout
want = next((l.split()[-1] for l in note.splitlines() if "Build ID" in l), None)
maps = {strings[m.get(5, 0)]: strings[m.get(6, 0)] for m in (dict(fields(v)) for f, v in top if f == 3)}
got = next((b for k, b in maps.items() if k.endswith("/trace_threads")), None)
ok(want and got == want, "pprof: mapping build-id equals readelf -n's", f"{got} vs {want}")
PY
if [ $have_go = 0 ]; then
	skip "go tool pprof reads the export" "go tool pprof not available (apt-get install golang-go)"
	exit 0
fi
if pprof -tags tr.pb.gz >tags.txt; then
	python3 - <<'PY'
import re
t = open("tags.txt").read()
sec = {}
for block in t.split("\n\n"):
    m = re.match(r"\s*(\w+): Total", block)
    if m:
        sec[m.group(1)] = [re.sub(r".*\):\s*", "", l).strip() for l in block.splitlines()[1:] if "%)" in l]
names = sorted(sec.get("thread_name", []))
ok = lambda c, n, why="": print(("ok - " if c else "not ok - ") + n + ("" if c else ": " + why))
ok(names == ["trace_threads", "worker-1", "worker-2", "worker-3", "worker-4"], "pprof -tags: the five thread names", repr(names))
tids = sec.get("thread", [])
ok(len(set(tids)) == 5 and all(x.isdigit() for x in tids), "pprof -tags: five thread ids", repr(tids))
ok(len(sec.get("pid", [])) == 1, "pprof -tags: one pid", repr(sec.get("pid")))
PY
else
	notok "pprof -tags" "$(head -3 pprof.err)"
fi
# calls per thread, as trace_threads.c makes them: worker k: mid 10k, leaf 21k; main: mid 5, leaf 10
bad=""
for k in 1 2 3 4 main; do
	if [ $k = main ]; then tag=trace_threads; mid=5; leaf=10; else tag=worker-$k; mid=$((10 * k)); leaf=$((21 * k)); fi
	pprof -top -sample_index=calls -nodefraction=0 -tagfocus="thread_name=^$tag\$" tr.pb.gz >calls_$k.txt
	got=$(awk '$NF == "leaf" {l = $1} $NF == "mid" {m = $1} END {print m + 0, l + 0}' calls_$k.txt)
	[ "$got" = "$mid $leaf" ] || bad="$bad $tag: mid, leaf = $got (want $mid $leaf);"
done
if [ -z "$bad" ]; then ok "pprof -tagfocus per thread: the calls each thread makes"; else notok "pprof calls per thread" "$bad"; fi

# Part 2: Lua 5.4 (profile recording), as in profile_lua.sh.
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
if ! sh "$ROOT/tools/fetch-lua.sh" "$cache" >fetch.log 2>&1; then
	skip "pprof of a Lua run" "could not fetch lua5.4 source ($(tail -1 fetch.log))"; exit 0
fi
LUAFLAGS='-Dluai_makeseed(L)=0u -Dl_randomizePivot()=0u -DSTRCACHE_N=1 -DSTRCACHE_M=1'
real_build lua-sonde lua "$SONDE_CC_BIN" -g $LUAFLAGS || { notok "build lua with sonde-cc" "$(tail -3 build-lua-sonde.log)"; exit 1; }
ln -sf "$cache/lua-sonde" lua-sonde
"$SONDE" record -o lua.data -- ./lua-sonde "$PROGS/bench.lua" 16 >/dev/null 2>rec.err || { notok "record lua" "$(tail -2 rec.err)"; exit 1; }
"$SONDE" report -i lua.data --format=json >so.json
"$SONDE" export -i lua.data --format=pprof -o lua.pb.gz 2>exp.err || { notok "export lua" "$(cat exp.err)"; exit 1; }
check "lua: gzip -t accepts the export" gzip -t lua.pb.gz
pprof -raw lua.pb.gz >raw.txt || notok "pprof -raw" "$(head -3 pprof.err)"
pprof -top -unit=ns -nodefraction=0 -nodecount=100000 lua.pb.gz >top_ns.txt || notok "pprof -top" "$(head -3 pprof.err)"
pprof -top -sample_index=calls -nodefraction=0 -nodecount=100000 lua.pb.gz >top_calls.txt ||
	notok "pprof -top -sample_index=calls" "$(head -3 pprof.err)"
python3 - <<'PY'
import json, re
from collections import defaultdict
ok = lambda c, n, why="": print(("ok - " if c else "not ok - ") + n + ("" if c else ": " + why))
so = json.load(open("so.json"))["functions"]
seen = defaultdict(int)
for f in so:
    seen[f["name"]] += 1
dup = {k for k, v in seen.items() if v > 1}   # same name, two functions: pprof merges them
S = defaultdict(lambda: [0, 0, 0])
for f in so:
    s = S[f["name"]]
    s[0] += f["calls"]; s[1] += f["exclusive_ns"]; s[2] += f["inclusive_ns"]

# -raw: samples (calls, ns: location ids leaf first) and the locations' function names.
samples, loc = [], {}
part = None
for l in open("raw.txt"):
    if l.startswith(("Samples:", "Locations", "Mappings")):
        part = l.split()[0].rstrip(":")
        continue
    if part == "Samples":
        m = re.match(r"\s+(\d+)\s+(\d+)((?:\s+\d+)*): ([\d ]+)$", l)
        if m:   # calls, time, then (a profile with the CPU split) cpu, off_cpu
            more = [int(x) for x in m.group(3).split()]
            samples.append((int(m.group(1)), int(m.group(2)), [int(x) for x in m.group(4).split()], more))
    elif part == "Locations":
        m = re.match(r"\s+(\d+): (?:0x[0-9a-f]+ )?(?:M=\d+ )?(\S+)", l)
        if m:
            loc[int(m.group(1))] = m.group(2)
calls, flat, cum, nleaf, nin = (defaultdict(int) for _ in range(5))
recursive = set()
# each of the three is the growth of its own rounded running total: 2 ns
split_bad = [(ns, more) for c, ns, stack, more in samples if len(more) != 2 or abs(more[0] + more[1] - ns) > 2]
ok(samples and not split_bad, "lua -raw: every sample has cpu and off_cpu values, their sum its time (2 ns of rounding)",
   repr(split_bad[:3]))
for c, ns, stack, more in samples:
    names = [loc[i] for i in stack]
    calls[names[0]] += c; flat[names[0]] += ns; nleaf[names[0]] += 1
    for n in set(names):
        cum[n] += ns; nin[n] += 1
    if len(set(names)) < len(names):
        recursive |= {n for n in names if names.count(n) > 1}
ok(len(samples) > 1000 and len(S) > 300, f"lua -raw: {len(samples)} samples, {len(calls)} functions (sonde: {len(S)})")
bad = [(k, S[k][0], calls.get(k)) for k in S if (S[k][0] or S[k][1]) and S[k][0] != calls.get(k, 0)]
ok(not bad and sum(calls.values()) > 1000000, f"lua -raw: calls per function equal sonde report's ({sum(calls.values())} calls)", repr(bad[:5]))
bad = [(k, S[k][1], flat.get(k)) for k in S if S[k][1] != flat.get(k, 0)]
ok(not bad, "lua -raw: flat (exclusive) ns per function equal sonde report's exclusive_ns", repr(bad[:5]))
bad = [(k, S[k][2], cum.get(k), nin[k]) for k in S if k not in dup and abs(S[k][2] - cum.get(k, 0)) > nin[k] + 1]
rec = len([k for k in recursive if k not in dup])
ok(not bad and rec > 5, f"lua -raw: cumulative ns equal inclusive_ns within 1 ns per sample ({rec} recursive functions among them)",
   repr(bad[:5]) + f" recursive {rec}")

# -top (pprof's own aggregation): flat, cum and calls per function name.
def top(path):
    rows = {}
    for l in open(path):
        m = re.match(r"\s*(\d+)(?:ns)?\s+[-+\d.e]+%\s+[-+\d.e]+%\s+(\d+)(?:ns)?\s+[-+\d.e]+%\s+(\S+)$", l)
        if m:
            rows[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    return rows
tn, tc = top("top_ns.txt"), top("top_calls.txt")
bad = [(k, S[k][0], tc.get(k)) for k in S if S[k][0] and tc.get(k, (0,))[0] != S[k][0]]
ok(not bad and len(tc) > 300, f"lua -top -sample_index=calls: calls equal sonde report's ({len(tc)} rows)", repr(bad[:5]))
bad = [(k, S[k][1], tn.get(k)) for k in S if S[k][1] and tn.get(k, (0,))[0] != S[k][1]]
ok(not bad and len(tn) > 300, f"lua -top -unit=ns: flat equals exclusive_ns ({len(tn)} rows)", repr(bad[:5]))
bad = [(k, S[k][2], tn.get(k)) for k in S if k not in dup and S[k][2] and abs(tn.get(k, (0, 0))[1] - S[k][2]) > nin[k] + 1]
ok(not bad, "lua -top -unit=ns: cum equals inclusive_ns within 1 ns per sample", repr(bad[:5]))
big = max(S, key=lambda k: S[k][2])
print(f"# lua: {big} inclusive {S[big][2]} ns (sonde) vs cum {tn.get(big, (0, 0))[1]} ns (pprof), {nin[big]} samples")
PY

# Part 3: C++: system_name is the mangled symbol, name its demangling (c++filt).
if "$SONDE_CXX_BIN" -O1 -g "$PROGS/exceptions.cpp" -o exc >cxx.log 2>&1 && "$SONDE" record -o cxx -- ./exc >/dev/null 2>&1 &&
	"$SONDE" export -i cxx --format=pprof -o cxx.pb.gz; then
	python3 - "$ROOT" <<'PY'
import gzip, subprocess, sys
sys.path.insert(0, sys.argv[1] + "/tests")
from protobuf_read import fields
top = fields(gzip.open("cxx.pb.gz").read())
strings = [v.decode() for f, v in top if f == 6]
fns = [(strings[d.get(2, 0)], strings[d.get(3, 0)]) for d in (dict(fields(v)) for f, v in top if f == 5)]
mangled = [(n, s) for n, s in fns if s.startswith("_Z")]
dem = subprocess.run(["c++filt"], input="\n".join(s for _, s in mangled), capture_output=True, text=True).stdout.split("\n")
bad = [(n, s, d) for (n, s), d in zip(mangled, dem) if n != d]
print(("ok" if mangled and not bad else "not ok") + f" - pprof C++: system_name mangled, name = c++filt of it ({len(mangled)} functions)"
      + ("" if mangled and not bad else f": {bad[:3]} {fns[:5]}"))
PY
else
	notok "C++ program recorded and exported" "$(tail -3 cxx.log)"
fi

# Part 4: a --locks --trace recording: wait and hold per calling context.
# Expected: `sonde locks`' per-lock totals, which come from the runtime's
# aggregate counters (REC_LOCKS), not from the events the export reads.  In
# tests/progs/lock_basic.c, hot() is the only function taking hot_lock and
# spinner() the only one taking spin.
"$SONDE_CC_BIN" -O2 -g -pthread "$PROGS/lock_basic.c" -o lock_basic || { notok "build lock_basic" "sonde-cc failed"; exit 1; }
"$SONDE" record --locks --trace -o lk -- ./lock_basic >/dev/null 2>lk.err || { notok "record --locks --trace" "$(tail -2 lk.err)"; exit 1; }
"$SONDE" locks -i lk --format=json >locks.json
"$SONDE" export -i lk --format=pprof -o lk.pb.gz 2>exp.err || { notok "export locks" "$(cat exp.err)"; exit 1; }
for v in wait hold; do
	pprof -top -sample_index=$v -unit=ns -nodefraction=0 -nodecount=100000 lk.pb.gz >lk_$v.txt || notok "pprof -sample_index=$v" "$(head -3 pprof.err)"
done
python3 - <<'PY'
import json, re
ok = lambda c, n, why="": print(("ok - " if c else "not ok - ") + n + ("" if c else ": " + why))
L = {l["name"]: l for l in json.load(open("locks.json"))["locks"]}
def top(path):
    rows, total = {}, None
    for l in open(path):
        m = re.search(r"Total samples = (\d+)ns", l)
        if m:
            total = int(m.group(1))
        m = re.match(r"\s*(\d+)ns\s+[-+\d.e]+%\s+[-+\d.e]+%\s+(\d+)ns\s+[-+\d.e]+%\s+(\S+)$", l)
        if m:
            rows[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    return rows, total
for v in ("wait", "hold"):
    rows, total = top(f"lk_{v}.txt")
    for fn, lock in (("hot", "hot_lock"), ("spinner", "spin")):
        # a run without contention waits 0 ns: pprof then has no row for it
        want, got = L[lock][v + "_ns"], rows.get(fn, (0,))[0]
        ok((want > 0 or v == "wait") and abs(got - want) <= 2,
           f"locks: pprof {v} of {fn}() = {lock}'s {v}_ns in sonde locks ({got} vs {want})", f"{got} vs {want}")
    want = sum(l[v + "_ns"] for l in L.values())
    ok(total is not None and abs(total - want) <= len(L) + 1,
       f"locks: pprof total {v} = sum of the locks' {v}_ns ({total} vs {want})", f"{total} vs {want}")
PY
# The same program built without sonde-cc and recorded with --no-patch: no
# function is recorded, so all lock time is outside every call, on the "<root>" frame.
cc -O2 -g -pthread "$PROGS/lock_basic.c" -o lock_plain || { notok "build lock_plain" "cc failed"; exit 1; }
"$SONDE" record --no-patch --locks --trace -o lkp -- ./lock_plain >/dev/null 2>lkp.err || { notok "record plain --locks --trace" "$(tail -2 lkp.err)"; exit 1; }
"$SONDE" locks -i lkp --format=json >locksp.json
"$SONDE" export -i lkp --format=pprof -o lkp.pb.gz 2>exp.err || { notok "export plain locks" "$(cat exp.err)"; exit 1; }
pprof -top -sample_index=hold -unit=ns -nodefraction=0 lkp.pb.gz >lkp_hold.txt || notok "pprof plain locks" "$(head -3 pprof.err)"
python3 - <<'PY'
import json, re
want = sum(l["hold_ns"] for l in json.load(open("locksp.json"))["locks"])
rows = [l.split() for l in open("lkp_hold.txt") if re.match(r"\s*\d+ns\s", l)]
names = [r[-1] for r in rows]
got = int(rows[0][0][:-2]) if rows else None
ok = names == ["<root>"] and got is not None and abs(got - want) <= 12
print(("ok" if ok else "not ok") + f" - uninstrumented program: all hold time ({got} vs {want} ns) on <root>"
      + ("" if ok else f": rows {names[:5]}"))
PY

# The Perfetto export read by a consumer that is not sonde's code: the
# protobuf library (python3-protobuf) with the module protoc generates from
# tests/proto/perfetto_trace_subset.proto (Perfetto's public field numbers),
# decoded by tests/perfetto_pb_decode.py under the format's sequence rules
# (per-thread sequences, interned names, defaults, incremental timestamps).
# tests/progs/pf_threads.c prints, per thread, its calls of rec() and leaf()
# and its deepest nesting: the decoded slices must say the same, and equal
# the chrome export and `sonde replay`.  Then the size: at most 12 bytes per
# slice event on a trace of 500,000 short calls (tests/progs/flight.c; the
# 100M-event figure is bench/'s: bench/perfetto_verify.py decodes it).  The same
# checks on plain gcc and clang builds of pf_threads, recorded without a
# rebuild (their functions patched at the start).
# test-timeout: 900 (the protobuf library decodes a 1M-packet trace in Python: 12 s of CPU, minutes under load)
. "$ROOT/tests/lib.sh"
if ! perfetto_pb pb; then
	skip "export_perfetto" "python3-protobuf and protobuf-compiler are not installed (Debian packages), or protoc failed"
	exit 0
fi
PY=$PB_PY
"$SONDE_CC_BIN" -O1 -g -I"$PROGS" "$PROGS/pf_threads.c" -o pf_threads -lpthread || { notok build "sonde-cc failed"; exit 1; }
# and plain builds, never built for sonde (their functions patched at the start): the same nesting
runs="sonde-cc:4 sonde-cc:140" # 140 threads: sequence ids past one varint byte
for cc in gcc clang; do
	command -v $cc >/dev/null && $cc -O2 -g -I"$PROGS" "$PROGS/pf_threads.c" -o pf_threads.$cc -lpthread &&
		runs="$runs $cc:4"
done
for run in $runs; do
	n=${run#*:} bin=./pf_threads k=${run/:/-}
	[ "${run%%:*}" = sonde-cc ] || bin=./pf_threads.${run%%:*}
	label="${run%%:*} build, $n threads"
	$bin $n >plain$k.out
	"$SONDE" record --trace -o r$k -- $bin $n >rec$k.out 2>rec$k.err; rc=$?
	[ $rc -eq 0 ] && cmp -s plain$k.out rec$k.out && ok "$label: program output unchanged" ||
		notok "$label: program output unchanged" "exit $rc; $(tail -2 rec$k.err)"
	"$SONDE" export -i r$k --format=perfetto -o t$k.pftrace 2>err.txt || notok "$label: perfetto export" "$(cat err.txt)"
	"$SONDE" export -i r$k --format=chrome -o t$k.json 2>err.txt || notok "$label: chrome export" "$(cat err.txt)"
	"$SONDE" replay -i r$k --format=json >replay$k.json 2>err.txt || notok "$label: replay" "$(cat err.txt)"
	"$PY" "$ROOT/tests/perfetto_pb_decode.py" pb t$k.pftrace >dec$k.json 2>dec.err ||
		{ notok "$label: the protobuf library decodes the trace" "$(tail -3 dec.err)"; continue; }
	python3 - "$k" "$n" "$label" <<'PY'
import json, sys
k, n, label = sys.argv[1:4]
def say(good, name, why=""):
    print(("ok - " if good else "not ok - ") + f"{label}: {name}" + ("" if good else f": {why}"))
D = json.load(open(f"dec{k}.json"))
say(not D["errors"] and D["unknown_fields"] == 0,
    "decodes under the format's rules, no unknown field", str(D["errors"][:3]) + f" unknown {D['unknown_fields']}")
say(D["sequences"] == int(n) + 2, "one packet sequence per thread and one for the descriptors", str(D["sequences"]))
# the program's own counts
want = {}
for l in open(f"plain{k}.out"):
    name, rec, leaf, deep = l.split()
    want[name] = (int(rec), int(leaf), int(deep))
# a plain build's C runtime functions are patched too (they run on main, outside main())
CRT = {"_init", "_fini", "frame_dummy", "register_tm_clones", "deregister_tm_clones", "__do_global_dtors_aux"}
got = {}
for tid, t in D["threads"].items():
    c = {}
    for s in t["slices"]:
        if s[0] not in CRT:
            c[s[0]] = c.get(s[0], 0) + 1
    nm = t["name"] if t["name"].startswith("w-") else "main"
    got[nm] = (c.get("rec", 0), c.get("leaf", 0), max(s[3] for s in t["slices"]))
    outer = c.get("main" if nm == "main" else "worker", 0)
    if outer != 1 or len(c) != 3:
        got[nm] = ("outer", c)
bad = {k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)}
say(not bad, "per thread: calls of rec() and leaf(), one main()/worker(), deepest nesting as the program counted",
    str(list(bad.items())[:3]))
# nesting: every slice lies within the one that encloses it
nest_ok = True
for t in D["threads"].values():
    ss = sorted(t["slices"], key=lambda s: (s[1], s[3]))
    stack = []
    for s in ss:
        while stack and not (stack[-1][1] <= s[1] and s[2] <= stack[-1][2]):
            stack.pop()
        if len(stack) + 1 != s[3]:
            nest_ok = False
        stack.append(s)
say(nest_ok, "slices nest by time as their depth says")
# the chrome export: same slices per thread (name, start, duration).  Both exports convert
# ticks with src/export/tick_ns.h: the same start to the ns; chrome rounds the duration,
# Perfetto the end time, so durations agree within 1 ns.
C = json.load(open(f"t{k}.json"))["traceEvents"]
cs = sorted((e["tid"], e["name"], round(e["ts"] * 1000), round(e["dur"] * 1000)) for e in C
            if e["ph"] == "X" and e.get("cat") != "sched")
ps = sorted((int(tid), s[0], s[1], s[2] - s[1]) for tid, t in D["threads"].items() for s in t["slices"])
off = max((abs(a[2] - b[2]) for a, b in zip(cs, ps)), default=0)
doff = max((abs(a[3] - b[3]) for a, b in zip(cs, ps)), default=0)
say(len(cs) == len(ps) and [a[:2] for a in cs] == [b[:2] for b in ps] and off == 0 and doff <= 1,
    "same slices as the chrome export (thread, name; start to the ns, duration within 1 ns)",
    f"{len(cs)} vs {len(ps)}, start off {off}, duration off {doff}")
# the threads' state tracks (running / runnable / blocked, the kernel's switch
# records): Perfetto's "TID state" child tracks hold chrome's "sched" slices
cst = sorted((e["args"]["tid"], e["name"], round(e["ts"] * 1000)) for e in C if e["ph"] == "X" and e.get("cat") == "sched")
pst = sorted((int(tid), x[0], x[1]) for tid, t in D["threads"].items() for x in t.get("tracks", {}).get(f"{tid} state", []))
soff = max((abs(a[2] - b[2]) for a, b in zip(cst, pst)), default=0)
say(len(cst) == len(pst) and [a[:2] for a in cst] == [b[:2] for b in pst] and soff <= 1,
    "the threads' state tracks: the same slices as chrome's (thread, state; start within 1 ns)",
    f"{len(cst)} vs {len(pst)}, start off {soff}")
R = json.load(open(f"replay{k}.json"))["calls"]
rs = sorted((c["tid"], c["name"], c["depth"], round(c["start_ns"])) for c in R)
ps = sorted((int(tid), s[0], s[3], s[1]) for tid, t in D["threads"].items() for s in t["slices"])
off = max((abs(a[3] - b[3]) for a, b in zip(rs, ps)), default=0)
say(len(rs) == len(ps) and [a[:3] for a in rs] == [b[:3] for b in ps] and off <= 2,
    "same calls, depths and times as sonde replay", f"{len(rs)} vs {len(ps)}, off {off}")
PY
done
# size per slice event
"$SONDE_CC_BIN" -O2 -g -I"$PROGS" "$PROGS/flight.c" -o flight || { notok build "sonde-cc failed"; exit 1; }
"$SONDE" record --trace -o big -- ./flight 500000 1000 >big.out 2>big.err || notok "record 500,000 calls" "$(tail -2 big.err)"
"$SONDE" export -i big --format=perfetto -o big.pftrace 2>err.txt || notok "perfetto export of 500,000 calls" "$(cat err.txt)"
calls=$(awk '{s += $2} END {print s + 1}' big.out) # the program's calls of old, recent, last, and main
size=$(stat -c %s big.pftrace)
python3 -c "import sys; s, c = int(sys.argv[1]), int(sys.argv[2]); b = s / (2 * c)
print(('ok - ' if b <= 12 else 'not ok - ') + f'at most 12 bytes per slice event: {b:.2f} ({s} bytes, {c} calls)')" "$size" "$calls"
"$PY" "$ROOT/tests/perfetto_pb_decode.py" pb big.pftrace >big.json 2>dec.err &&
python3 - <<'PY' || notok "the big trace decodes" "$(tail -2 dec.err)"
import json
D = json.load(open("big.json"))
want = {l.split()[0]: int(l.split()[1]) for l in open("big.out")}
c = {}
for t in D["threads"].values():
    for s in t["slices"]:
        c[s[0]] = c.get(s[0], 0) + 1
good = not D["errors"] and all(c.get(k) == v for k, v in want.items())
print(("ok - " if good else "not ok - ") + "the big trace decodes with the program's counts" +
      ("" if good else f": {D['errors'][:2]} {c} vs {want}"))
PY
# bad input: the exports say what is wrong
"$SONDE" export -i nonexistent --format=perfetto -o x.pftrace 2>err.txt; rc=$?
[ $rc -eq 2 ] && grep -q "^sonde: error: " err.txt && ok "export of a missing recording: exit 2, says why" ||
	notok "export of a missing recording: exit 2, says why" "exit $rc $(cat err.txt)"

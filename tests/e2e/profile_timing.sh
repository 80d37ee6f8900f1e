# test-timeout: 900
# record --timing (issue 39): functions of a plain build (patched without a
# rebuild) counted, not timed.  tests/progs/timing_counts.c prints how many
# times it called each of its functions (a longjmp out of one of them
# included); under --timing=all, none and auto each count equals the
# program's, the output is the program's own, the functions counted only say
# "timed": false in the report's JSON and 'untimed' in its table, and under
# auto the small leaf (tick) is counted only while its caller (step) is
# timed, with tick's time in step's exclusive time (step then calls nothing
# timed: exclusive = inclusive; under all, it is less).  Built with gcc and
# clang; the same of --trace recordings under none and auto, whose export
# has a slice per timed call and the counted functions' calls.  Then Lua (a
# plain build of Debian's source running bench.lua), SQLite's speedtest1 and
# zstd (plain builds): every function's count under none and auto (and, for
# Lua, auto in a trace) equals all's, and under auto the timed functions'
# exclusive and inclusive times keep the seed's invariants.
. "$ROOT/tests/lib.sh"
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}

"$SONDE" record --timing=some -- /bin/true >bad.out 2>bad.err
rc=$?
if [ $rc -ne 0 ] && grep -q "invalid value 'some' for --timing" bad.err; then ok "--timing=some refused"
else notok "--timing=some refused" "exit $rc: $(cat bad.err)"; fi
"$SONDE" record --trace --timing=none -F main -- /bin/true >bad.out 2>bad.err
rc=$?
if [ $rc -ne 0 ] && grep -q "use them with --timing=all" bad.err; then ok "--trace --timing=none with -F refused"
else notok "--trace --timing=none with -F refused" "exit $rc: $(cat bad.err)"; fi

"$SONDE" record --timed step -- /bin/true >bad.out 2>bad.err
rc=$?
if [ $rc -ne 0 ] && grep -q "under --timing=none or auto" bad.err; then ok "--timed without --timing=none|auto refused"
else notok "--timed without --timing=none|auto refused" "exit $rc: $(cat bad.err)"; fi

# counts LABEL PROGRAM-OUTPUT REPORT-JSON TIMING: the program's counts, and the timed flags
counts() {
	python3 - "$@" <<'PY'
import json, sys
label, out, rep, timing = sys.argv[1:5]
want = dict((l.split()[0], int(l.split()[1])) for l in open(out))
fns = {f["name"]: f for f in json.load(open(rep))["functions"]}
bad = [(k, v, fns.get(k, {}).get("calls")) for k, v in want.items() if fns.get(k, {}).get("calls") != v]
print(("ok" if not bad and len(want) == 4 else "not ok") + f" - {label}: calls equal the program's {want}" +
      ("" if not bad else f": (name, program, sonde) {bad}"))
untimed = sorted(k for k in want if not fns.get(k, {}).get("timed", True))
expect = {"all": [], "none": sorted(want), "auto": ["tick"], "none-step": sorted(k for k in want if k != "step")}[timing]
print(("ok" if untimed == expect else "not ok") + f" - {label}: counted only {untimed}" +
      ("" if untimed == expect else f", expected {expect}"))
st = fns.get("step", {})
if timing in ("auto", "none-step"):
    good = st.get("timed") and st.get("exclusive_ns") == st.get("inclusive_ns") and st.get("inclusive_ns", 0) > 0
    print(("ok" if good else "not ok") + f" - {label}: step's exclusive time holds tick's ({st.get('exclusive_ns')} of {st.get('inclusive_ns')} ns)")
if timing == "all":
    good = st.get("exclusive_ns", 0) < st.get("inclusive_ns", 0)
    print(("ok" if good else "not ok") + f" - {label}: step's exclusive time is below its inclusive time, tick timed ({st.get('exclusive_ns')} of {st.get('inclusive_ns')} ns)")
PY
}

perfetto_pb pb || { PB_PY=; skip "the Perfetto export of counted functions" "python3-protobuf or protoc missing"; }
for cc in gcc clang; do
	command -v $cc >/dev/null || { skip "$cc" "not installed"; continue; }
	$cc -O2 -g -fno-inline -o tc-$cc "$PROGS/timing_counts.c" || { notok "$cc builds timing_counts.c" "failed"; continue; }
	./tc-$cc 3000 >plain-$cc.txt
	for t in all none auto; do
		"$SONDE" record --timing=$t -o $cc-$t.data -- ./tc-$cc 3000 >rec-$cc-$t.txt 2>rec-$cc-$t.err
		check "$cc --timing=$t: output unchanged" cmp -s plain-$cc.txt rec-$cc-$t.txt
		"$SONDE" report -i $cc-$t.data --format=json >$cc-$t.json 2>/dev/null
		counts "$cc --timing=$t" plain-$cc.txt $cc-$t.json $t
	done
	# --trace: slices of the timed functions, counts of the others
	for t in none auto; do
		"$SONDE" record --trace --timing=$t -o $cc-tr-$t.data -- ./tc-$cc 3000 >rec-$cc-tr-$t.txt 2>rec-$cc-tr-$t.err
		check "$cc --trace --timing=$t: output unchanged" cmp -s plain-$cc.txt rec-$cc-tr-$t.txt
		"$SONDE" report -i $cc-tr-$t.data --format=json >$cc-tr-$t.json 2>/dev/null
		counts "$cc --trace --timing=$t" plain-$cc.txt $cc-tr-$t.json $t
		"$SONDE" export -i $cc-tr-$t.data --format=chrome -o $cc-tr-$t.chrome.json 2>$cc-tr-$t.exp.err
		python3 - plain-$cc.txt $cc-tr-$t.chrome.json $t "$cc --trace --timing=$t" <<'PY'
import json, sys, collections
out, path, t, label = sys.argv[1:5]
want = dict((l.split()[0], int(l.split()[1])) for l in open(out))
d = json.load(open(path))
slices = collections.Counter(e["name"] for e in d["traceEvents"] if e.get("ph") == "X")
counted = {c["name"]: c["calls"] for c in d["otherData"].get("counted", [])}
timed = {"none": [], "auto": [k for k in want if k != "tick"]}[t]
bad = [(k, slices.get(k, 0), counted.get(k)) for k in want
       if (k in timed and (slices.get(k, 0) != want[k] or k in counted)) or
          (k not in timed and (slices.get(k, 0) != 0 or counted.get(k) != want[k]))]
print(("ok" if not bad else "not ok") + f" - {label}: the export has a slice per timed call {timed}, the counted "
      f"functions' calls in otherData" + ("" if not bad else f": (name, slices, counted) {bad}, program {want}"))
PY
		"$SONDE" replay -i $cc-tr-$t.data --format=json >$cc-tr-$t.replay.json 2>$cc-tr-$t.replay.err
		python3 - plain-$cc.txt $cc-tr-$t.replay.json $t "$cc --trace --timing=$t" <<'PY'
import json, sys, collections
out, path, t, label = sys.argv[1:5]
want = dict((l.split()[0], int(l.split()[1])) for l in open(out))
d = json.load(open(path))
calls = collections.Counter(c["name"] for c in d["calls"])
counted = {c["name"]: c["calls"] for c in d["counted"]}
timed = {"none": [], "auto": [k for k in want if k != "tick"]}[t]
bad = [(k, calls.get(k, 0), counted.get(k)) for k in want
       if (k in timed and (calls.get(k, 0) != want[k] or k in counted)) or
          (k not in timed and (calls.get(k, 0) != 0 or counted.get(k) != want[k]))]
print(("ok" if not bad else "not ok") + f" - {label}: replay lists each timed call and the counted functions' calls" +
      ("" if not bad else f": (name, calls, counted) {bad}"))
PY
		# the Perfetto export, read by the protobuf library: the same slices, each counted function a counter
		# track of its thread ending at its calls
		if [ -n "${PB_PY:-}" ]; then
			"$SONDE" export -i $cc-tr-$t.data --format=perfetto -o $cc-tr-$t.pftrace 2>$cc-tr-$t.pf.err
			$PB_PY "$ROOT/tests/perfetto_pb_decode.py" pb $cc-tr-$t.pftrace >$cc-tr-$t.pf.json 2>>$cc-tr-$t.pf.err
			python3 - plain-$cc.txt $cc-tr-$t.pf.json $t "$cc --trace --timing=$t" <<'PY'
import json, sys, collections
out, path, t, label = sys.argv[1:5]
want = dict((l.split()[0], int(l.split()[1])) for l in open(out))
d = json.load(open(path))
th = list(d["threads"].values())
slices = collections.Counter(s[0] for x in th for s in x["slices"])
counters = {k[len("calls: "):]: v[-1][1] for x in th for k, v in x.get("counters", {}).items()}
timed = {"none": [], "auto": [k for k in want if k != "tick"]}[t]
bad = [(k, slices.get(k, 0), counters.get(k)) for k in want
       if (k in timed and (slices.get(k, 0) != want[k] or k in counters)) or
          (k not in timed and (slices.get(k, 0) != 0 or counters.get(k) != want[k]))]
good = not bad and not d["errors"] and not d["unknown_fields"]
print(("ok" if good else "not ok") + f" - {label}: the Perfetto export has a slice per timed call, a counter track of "
      f"each counted function's calls" + ("" if good else f": (name, slices, counter) {bad}, {d['errors'][:3]}, "
      f"unknown fields {d['unknown_fields']}"))
PY
		fi
	done
	# --timed: step timed under none, the others counted only
	"$SONDE" record --timing=none --timed step -o $cc-nstep.data -- ./tc-$cc 3000 >rec-$cc-nstep.txt 2>rec-$cc-nstep.err
	check "$cc --timing=none --timed step: output unchanged" cmp -s plain-$cc.txt rec-$cc-nstep.txt
	"$SONDE" report -i $cc-nstep.data --format=json >$cc-nstep.json 2>/dev/null
	counts "$cc --timing=none --timed step" plain-$cc.txt $cc-nstep.json none-step
	# a glob that names nothing is said, once; one that names step is not
	"$SONDE" record --timing=none --timed step --timed no_such_fn_xyz -o $cc-nx.data -- ./tc-$cc 30 >/dev/null 2>rec-$cc-nx.err
	if [ "$(grep -c "no_such_fn_xyz' names no function" rec-$cc-nx.err)" = 1 ] && ! grep -q "'step' names no" rec-$cc-nx.err &&
	   ! grep -q "names no function" rec-$cc-nstep.err; then ok "$cc --timed: a glob naming nothing is said, once"
	else notok "$cc --timed: a glob naming nothing is said" "$(cat rec-$cc-nx.err | head -3)"; fi
	"$SONDE" report -i $cc-none.data >$cc-none.tab 2>&1
	if grep -E '^ +3000 +untimed +- +untimed' $cc-none.tab | grep -q ' step ' && grep -q '^untimed: counted, not timed' $cc-none.tab; then
		ok "$cc --timing=none: the table says untimed"
	else
		notok "$cc --timing=none: the table says untimed" "$(head -5 $cc-none.tab)"
	fi
	"$SONDE" info -i $cc-none.data --format=json >$cc-none.info 2>/dev/null
	"$SONDE" info -i $cc-all.data --format=json >$cc-all.info 2>/dev/null
	if jq_py $cc-none.info 'p = d["patched"][0]; sys.exit(0 if p["counted_only"] == p["patchable"] > 4 else 1)' &&
	   jq_py $cc-all.info 'sys.exit(0 if d["patched"][0]["counted_only"] == 0 else 1)'; then
		ok "$cc: sonde info counts the functions counted only (none: every patchable one; all: none)"
	else
		notok "$cc: sonde info counts the functions counted only" "$(grep -o '"counted_only": [0-9]*' $cc-none.info $cc-all.info)"
	fi
	"$SONDE" tree -i $cc-auto.data >$cc-auto.tree 2>&1
	if grep -Eq '^ +untimed +- +[0-9]+ +(- +)?tick$' $cc-auto.tree && grep -Eq '^ +[0-9.]+ [mun]?s +[0-9.]+% +3000 +([0-9.]+ [mun]?s +)?step$' $cc-auto.tree; then
		ok "$cc --timing=auto: the tree says tick untimed, step timed"
	else
		notok "$cc --timing=auto: the tree says tick untimed, step timed" "$(head -8 $cc-auto.tree)"
	fi
done

# A sonde-cc build: under none every function counted through its sled
# (profile and trace), under auto it stays timed (its sleds call the timed
# hook), each count the program's
if "$SONDE_CC_BIN" -O2 -g -fno-inline -o tc-sonde "$PROGS/timing_counts.c"; then
	./tc-sonde 3000 >plain-sonde.txt
	for t in none tr-none auto; do
		flag=; [ $t = tr-none ] && flag=--trace
		"$SONDE" record $flag --timing=${t#tr-} -o sonde-$t.data -- ./tc-sonde 3000 >rec-sonde-$t.txt 2>rec-sonde-$t.err
		check "sonde-cc${flag:+ $flag} --timing=${t#tr-}: output unchanged" cmp -s plain-sonde.txt rec-sonde-$t.txt
		"$SONDE" report -i sonde-$t.data --format=json >sonde-$t.json 2>/dev/null
		counts "sonde-cc${flag:+ $flag} --timing=${t#tr-}" plain-sonde.txt sonde-$t.json $([ $t = auto ] && echo all || echo none)
	done
else
	notok "sonde-cc builds timing_counts.c" "failed"
fi

# Counted in the stubs: four threads, a SIGPROF handler landing in the
# counting instructions, a forked child (tests/progs/timing_threads.c):
# every process's count of tick equals its own, under none and auto.
if cc -O2 -g -pthread -o tt "$PROGS/timing_threads.c" && "$SONDE_CC_BIN" -O2 -g -pthread -o tt-sonde "$PROGS/timing_threads.c"; then
	for t in none auto sonde-none; do
		prog=./tt; [ $t = sonde-none ] && prog=./tt-sonde
		"$SONDE" record --timing=${t#sonde-} -o tt-$t.data -- $prog >tt-$t.txt 2>tt-$t.err
		"$SONDE" report -i tt-$t.data --processes --format=json >tt-$t.json 2>tt-$t.rep.err
		python3 - tt-$t.txt tt-$t.json $t <<'PY'
import json, sys
out, rep, t = sys.argv[1:4]
name = "timing_threads (sonde-cc)" if t.startswith("sonde-") else "timing_threads"
t = t.replace("sonde-", "")
want = {l.split()[0]: int(l.split()[2]) for l in open(out) if l.split()[1:2] == ["tick"]}
d = json.load(open(rep))
got = {}
for p in d.get("processes", []):
    role = "parent" if p.get("ppid") not in [q.get("pid") for q in d["processes"]] else "child"
    got[role] = sum(f["calls"] for f in p["functions"] if f["name"] == "tick")
    timed = [f.get("timed") for f in p["functions"] if f["name"] == "tick"]
ok = want.get("handler", 0) > 0 and got.get("parent") == want.get("parent") and got.get("child") == want.get("child")
print(("ok" if ok else "not ok") + f" - {name} --timing={t}: tick's count in each process equals the program's "
      f"(threads, {want.get('handler')} calls from a SIGPROF handler, a fork child)" + ("" if ok else f": program {want}, sonde {got}"))
# none times nothing: the off-CPU split is not taken, and the report says why; auto times some
split = d.get("cpu_split", "")
ok = ("--timing=none" in split) == (t == "none") and split.startswith(("not measured", "measured"))
print(("ok" if ok else "not ok") + f" - {name} --timing={t}: the off-CPU split " +
      ("not taken, said" if t == "none" else "taken as for timed functions") + ("" if ok else f": {split!r}"))
PY
	done
else
	notok "timing_threads.c builds" "cc failed"
fi

# The learned policy (tests/progs/timing_phases.c): work() short and
# frequent, then slow.  Under auto it is counted after the first window and
# timed again once a probe finds it slow: sonde info lists both switches in
# that order, the report says it was switched (its timed calls fewer than
# its calls), and its count is the program's.
if cc -O2 -g -o tp "$PROGS/timing_phases.c"; then
	"$SONDE" record --timing=auto -o tp.data -- ./tp >tp.txt 2>tp.err
	"$SONDE" info -i tp.data --format=json >tp.info.json 2>tp.info.err
	"$SONDE" report -i tp.data --format=json >tp.json 2>tp.rep.err
	"$SONDE" info -i tp.data >tp.info 2>&1
	"$SONDE" callers-callees -i tp.data work --format=json >tp.cc.json 2>tp.cc.err
	python3 - tp.txt tp.info.json tp.json tp.cc.json <<'PY'
import json, sys
out, info, rep, cc = sys.argv[1:5]
want = sum(int(l.split()[2]) for l in open(out) if l.startswith("work "))
sw = json.load(open(info)).get("timing_switches", {})
mine = [k for k in sw.get("kept", []) if k.get("function") == "work"]
order = [k["to"] for k in mine]
ok = order[:2] == ["counted", "timed"] and mine[0]["at_ms"] < mine[1]["at_ms"] and mine[1]["window_mean_ns"] > 2000
print(("ok" if ok else "not ok") + " - timing_phases --timing=auto: sonde info: work counted when short, then timed when slow"
      + ("" if ok else f": {mine[:4]}"))
w = [f for f in json.load(open(rep))["functions"] if f["name"] == "work"]
got = w[0] if w else {}
ok = got.get("calls") == want and got.get("switched") is True and 0 < got.get("timed_calls", 0) < want
print(("ok" if ok else "not ok") + f" - timing_phases --timing=auto: work's {want} calls, some timed, marked switched"
      + ("" if ok else f": {got}"))
# its callers: phase (the program's only caller of work) for the timed calls, <root> for the counted
c = json.load(open(cc))
by = {r["name"]: r["calls"] for r in c.get("callers", [])}
t = got.get("timed_calls")
ok = c.get("callers_recorded_calls") == t and by.get("phase") == t and by.get("<root>") == want - (t or 0)
print(("ok" if ok else "not ok") + " - timing_phases --timing=auto: callers-callees: phase for the timed calls, <root> for the counted"
      + ("" if ok else f": {by}, {c.get('callers_recorded_calls')}, timed {t}"))
PY
	# the same in a trace: the learned policy reads the trees a --trace --timing=auto recording keeps
	# beside its timeline; work's timed calls are its slices, its counted ones its count
	"$SONDE" record --trace --timing=auto -o tpt.data -- ./tp >tpt.txt 2>tpt.err
	"$SONDE" info -i tpt.data --format=json >tpt.info.json 2>tpt.info.err
	"$SONDE" report -i tpt.data --format=json >tpt.json 2>tpt.rep.err
	# (a million slices: counted by line, the export's last line holds otherData)
	"$SONDE" export -i tpt.data --format=chrome -o tpt.chrome.json 2>tpt.exp.err
	grep -c '"ph":"X","name":"work"' tpt.chrome.json >tpt.slices
	tail -1 tpt.chrome.json | sed -e 's/^\],"otherData"://' -e 's/}$//' >tpt.other.json
	"$SONDE" export -i tpt.data --format=pprof --time-range 0,1000 -o tpt.pb 2>tpt.range.err
	rrc=$?
	python3 - tpt.txt tpt.info.json tpt.json tpt.slices tpt.other.json <<'PY'
import json, sys
out, info, rep, sl, other = sys.argv[1:6]
want = sum(int(l.split()[2]) for l in open(out) if l.startswith("work "))
i = json.load(open(info))
order = [k["to"] for k in i.get("timing_switches", {}).get("kept", []) if k.get("function") == "work"]
w = [f for f in json.load(open(rep))["functions"] if f["name"] == "work"]
got = w[0] if w else {}
slices = int(open(sl).read())
counted = sum(c["calls"] for c in json.load(open(other)).get("counted", []) if c["name"] == "work")
t = got.get("timed_calls", 0)
ok = (order[:2] == ["counted", "timed"] and i.get("mode") == "trace + profile" and got.get("calls") == want and
      0 < t < want and slices == t and counted == want - t)
print(("ok" if ok else "not ok") + f" - timing_phases --trace --timing=auto: learned in a trace (work counted, then timed), "
      f"its {want} calls: {t} slices, the rest counted" +
      ("" if ok else f": switches {order[:4]}, mode {i.get('mode')}, report {got}, slices {slices}, counted {counted}"))
PY
	if [ $rrc = 0 ] && [ -s tpt.pb ] && grep -q "time-range leaves them out" tpt.range.err; then
		ok "timing_phases --trace --timing=auto: a time range of it is read from its timeline, the counted calls said left out"
	else
		notok "timing_phases --trace --timing=auto: a time range" "status $rrc: $(cat tpt.range.err)"
	fi
	if grep -q "^  .* counted  work " tp.info && grep -q "^  .* timed    work " tp.info; then
		ok "timing_phases --timing=auto: the table of sonde info lists work's switches"
	else
		notok "timing_phases --timing=auto: the table of sonde info lists work's switches" "$(grep -A4 '^timing' tp.info)"
	fi
else
	notok "timing_phases.c builds" "cc failed"
fi

# same_counts NAME ALL-JSON X-JSON MODE MIN: each function's count in X's
# report (--timing=MODE; tr-auto: --trace --timing=auto) equals its count
# under --timing=all, of at least MIN functions; how many were counted only;
# under auto, the seed's invariants for the timed functions: exclusive
# within inclusive, and the exclusive times adding up to the total
same_counts() {
	python3 - "$@" <<'PY'
import json, sys
name, a, b, t, least = sys.argv[1:6]
label = "--trace --timing=auto" if t == "tr-auto" else f"--timing={t}"
t = t.replace("tr-", "")
ca, cb, timed = {}, {}, {}
for f in json.load(open(a))["functions"]:
    ca[f["name"]] = ca.get(f["name"], 0) + f["calls"]
rb = json.load(open(b))
for f in rb["functions"]:
    cb[f["name"]] = cb.get(f["name"], 0) + f["calls"]
    timed[f["name"]] = f["timed"]
diff = sorted((k, ca.get(k), cb.get(k)) for k in set(ca) | set(cb) if ca.get(k) != cb.get(k))
print(("ok" if not diff and len(ca) >= int(least) else "not ok") +
      f" - {name} {label}: {len(ca)} functions, {sum(ca.values())} calls, each equal to --timing=all's" +
      ("" if not diff else f": differ (name, all, {label}) {diff[:6]}"))
n = sum(1 for v in timed.values() if not v)
good = n == len(timed) if t == "none" else 0 < n < len(timed)  # (a trace's auto: the small leaves)
print(("ok" if good else "not ok") + f" - {name} {label}: {n} of {len(timed)} functions counted only")
if t == "auto":
    fs = [f for f in rb["functions"] if f["timed"]]
    bad = [f["name"] for f in fs if not 0 <= f["exclusive_ns"] <= f["inclusive_ns"] <= rb["total_ns"]]
    sx = sum(f["exclusive_ns"] for f in fs)
    good = not bad and abs(sx - rb["total_ns"]) <= len(fs) + 1  # (each rounded to a ns)
    print(("ok" if good else "not ok") + f" - {name} {label}: the timed functions' exclusive within their inclusive "
          f"times, adding up to the total ({sx} of {rb['total_ns']} ns)" + ("" if good else f": {bad[:5]}"))
PY
}

# Lua: every function's count under none and auto equals all's
LUAFLAGS='-Dluai_makeseed(L)=0u -Dl_randomizePivot()=0u -DSTRCACHE_N=1 -DSTRCACHE_M=1'
real_build lua-plain lua cc -g $LUAFLAGS
rc=$?
if [ $rc -eq 2 ]; then
	skip "Lua from Debian source" "could not fetch lua5.4 ($(tail -1 fetch-lua-plain.log))"
elif [ $rc -ne 0 ] || [ ! -x "$cache/lua-plain" ]; then
	notok "Lua (plain build)" "$(tail -3 build-lua-plain.log)"
else
	"$cache/lua-plain" "$PROGS/bench.lua" 12 >lua-plain.txt
	for t in all none auto; do
		"$SONDE" record --timing=$t -o lua-$t.data -- "$cache/lua-plain" "$PROGS/bench.lua" 12 >lua-$t.txt 2>lua-$t.err
		check "lua --timing=$t: output unchanged" cmp -s lua-plain.txt lua-$t.txt
		"$SONDE" report -i lua-$t.data --format=json >lua-$t.json 2>/dev/null
	done
	# and a trace: its counted functions' calls kept beside the slices
	"$SONDE" record --trace --timing=auto -o lua-tr-auto.data -- "$cache/lua-plain" "$PROGS/bench.lua" 12 >lua-tr-auto.txt 2>lua-tr-auto.err
	check "lua --trace --timing=auto: output unchanged" cmp -s lua-plain.txt lua-tr-auto.txt
	"$SONDE" report -i lua-tr-auto.data --format=json >lua-tr-auto.json 2>/dev/null
	for t in none auto tr-auto; do same_counts lua lua-all.json lua-$t.json $t 100; done
fi

# SQLite's speedtest1 and zstd (plain builds from Debian's source, as
# patch_sqlite.sh and patch_zstd.sh build them): the same under none and
# auto.  timing_prog NAME NORM PROGRAM ARGS...: NORM a sed script for its
# output (speedtest1 prints each test's time), or "" to compare it whole.
timing_prog() {
	local name=$1 norm=$2 t; shift 2
	"$@" >$name-plain.out 2>&1
	for t in all none auto; do
		"$SONDE" record --timing=$t -o $name-$t.data -- "$@" >$name-$t.out 2>$name-$t.err
		"$SONDE" report -i $name-$t.data --format=json >$name-$t.json 2>/dev/null
	done
	for t in plain none auto; do
		if [ -n "$norm" ]; then sed -e "$norm" $name-$t.out >$name-$t.cmp; else cp $name-$t.out $name-$t.cmp; fi
	done
	for t in none auto; do
		check "$name --timing=$t: output unchanged" cmp -s $name-plain.cmp $name-$t.cmp
		same_counts $name $name-all.json $name-$t.json $t 100
	done
}
real_build sqlite-plain sqlite cc
rc=$?
if [ $rc -eq 2 ]; then skip "SQLite from Debian source" "could not fetch sqlite3 ($(tail -1 fetch-sqlite-plain.log))"
elif [ $rc -ne 0 ] || [ ! -x "$cache/sqlite-plain/speedtest1" ]; then notok "SQLite (plain build)" "$(tail -3 build-sqlite-plain.log)"
else
	timing_prog speedtest1 's/ *[0-9.]*s$//; s/\.*$//' "$cache/sqlite-plain/speedtest1" --size 5 --testset main
fi
real_build zstd-plain zstd cc -g
rc=$?
if [ $rc -eq 2 ]; then skip "zstd from Debian source" "could not fetch zstd ($(tail -1 fetch-zstd-plain.log))"
elif [ $rc -ne 0 ] || [ ! -x "$cache/zstd-plain/zstd" ]; then notok "zstd (plain build)" "$(tail -3 build-zstd-plain.log)"
else
	sh "$ROOT/tools/gen-data.sh" data.txt 4
	timing_prog zstd "" "$cache/zstd-plain/zstd" -3 -q -c data.txt
fi

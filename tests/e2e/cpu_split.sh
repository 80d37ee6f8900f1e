#!/usr/bin/env bash
# cpu_split.sh — issue 38's on-CPU / off-CPU split of each function's time.
# tests/progs/cpu_wait.c measures every call itself (CLOCK_THREAD_CPUTIME_ID
# and CLOCK_MONOTONIC in its body) and prints its sums: functions that spin
# (CPU), sleep, wait on a condition variable, read a pipe another process
# fills slowly, and spin beside a hog pinned to the same CPU (preempted).
# For each function, sonde's CPU and off-CPU time (inclusive) must be the
# program's within 2% or 100 us, whichever is larger (the program's reading
# in the body, or its caller's around the call, or between); the invariants of seed
# 002 must hold for CPU time as for wall time.  Profiles of sonde-cc builds
# (gcc, clang), of plain gcc and clang builds (patched at launch), of the
# gcc sonde-cc build attached (record -p, and once blocked when sonde
# ends), and a trace of it (--trace: the report from the timeline); pprof's
# cpu and off_cpu types read by go tool pprof.  Then: without the source (a
# seccomp filter), the report says the split is not known and shows no CPU
# numbers; and `sonde diff`'s call paths have the CPU time of `sonde tree`'s
# nodes (all threads), or null against the seccomp run.
source "$ROOT/tests/lib.sh"
src="$PROGS/cpu_wait.c"

# compare LABEL DATA OWN: the main process's report against the program's sums
compare() {
	local label=$1 data=$2 own=$3 pid
	pid=$("$SONDE" info -i "$data" --format=json | python3 -c 'import json,sys; print(json.load(sys.stdin)["processes"][0]["pid"])')
	"$SONDE" info -i "$data" --format=json >"$label.info.json"
	"$SONDE" report -i "$data" --pid "$pid" --format=json >"$label.rep.json" 2>"$label.rep.err" ||
		{ notok "$label: report" "$(head -2 "$label.rep.err")"; return; }
	"$SONDE" callers-callees -i "$data" --pid "$pid" burn --format=json >"$label.burn.json" 2>>"$label.rep.err"
	"$SONDE" callers-callees -i "$data" --pid "$pid" mixed --format=json >"$label.mixed.json" 2>>"$label.rep.err"
	python3 - "$label" "$own" "$label.rep.json" "$label.burn.json" "$label.mixed.json" "$label.info.json" <<'PY'
import json, re, sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import say, done
label, own_path, rep, burn, mixed, info = sys.argv[1:7]
# A hook that waits for the recorder (a trace's full ring) does so after
# its call's time was taken: inside the call for sonde, outside the
# program's own clocks.  sonde says how long its writers waited.
waited = json.load(open(info)).get("writer_wait_ns", 0)
own, outer = {}, {}
for line in open(own_path):
    m = re.match(r"own (\w+) calls (\d+) wall (\d+) cpu (\d+) outer_wall (\d+) outer_cpu (\d+)", line)
    if m:
        own[m.group(1)] = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
        outer[m.group(1)] = (int(m.group(5)), int(m.group(6)))
d = json.load(open(rep))
say(d.get("cpu_split") == "measured", f"{label}: the split was measured", d.get("cpu_split"))
f = {x["name"]: x for x in d["functions"]}
tol = lambda v: max(0.02 * v, 100e3) + waited
# want: the program's reading in the body; then the caller's around the
# call, which holds sonde's hooks too (their system calls when they look at
# the clocks after a switch): sonde's time is within tol of the two or
# between them
def near(name, got, want, around):
    lo, hi = min(want, around), max(want, around)
    say(got is not None and lo - tol(lo) <= got <= hi + tol(hi),
        f"{label}: {name} = the program's {want / 1e6:.3f} ms (its caller's {around / 1e6:.3f})",
        f"got {None if got is None else round(got / 1e6, 3)} ms")
quarter = lambda got, want, around: 0.75 * min(want, around) - waited <= got <= 1.25 * max(want, around) + waited
for fn in ("burn", "nap", "await", "drain", "contend", "mixed"):
    if fn not in f or fn not in own:
        say(False, f"{label}: {fn} reported and measured", f"report {fn in f}, program {fn in own}")
        continue
    calls, wall, cpu = own[fn]
    x = f[fn]
    say(x["calls"] == calls, f"{label}: {fn} calls = the program's {calls}", f"got {x['calls']}")
    near(f"{fn} on-CPU time", x["inclusive_cpu_ns"], cpu, outer[fn][1])
    # contend shares its CPU with a hog: it is switched out at any
    # instruction, the hooks' too (inside the call for sonde, outside the
    # program's clocks), so its wait is checked within a quarter (of the
    # body's or the caller's reading, or between)
    off = None if x["inclusive_cpu_ns"] is None else x["inclusive_ns"] - x["inclusive_cpu_ns"]
    if fn == "contend":
        say(off is not None and quarter(off, wall - cpu, outer[fn][0] - outer[fn][1]),
            f"{label}: {fn} off-CPU time = the program's {(wall - cpu) / 1e6:.3f} ms (within 25%; its caller's {(outer[fn][0] - outer[fn][1]) / 1e6:.3f})",
            f"got {None if off is None else round(off / 1e6, 3)} ms")
    else:
        near(f"{fn} off-CPU time", off, wall - cpu, outer[fn][0] - outer[fn][1])
# contend ran beside a hog on its CPU: most of its wall time waiting to run
say(own["contend"][1] - own["contend"][2] > 0.2 * own["contend"][1],
    f"{label}: contend was preempted (the program measured {(own['contend'][1] - own['contend'][2]) / 1e6:.1f} ms off the CPU)")
# Runnable or blocked (the kernel's switch records): contend never blocks
# (it spins), so all of the wait the program measured around it was
# runnable, within the quarter its off-CPU check allows; nap, await and
# drain block (sleep, a condition variable, a pipe), so little of theirs
# was (a preemption in their few microseconds of CPU: under a quarter);
# no function waited runnable longer than it waited.
say(d.get("total_runnable_ns") is not None, f"{label}: runnable and blocked time told apart", str(d.get("total_runnable_ns")))
if d.get("total_runnable_ns") is not None and all(k in f and k in own for k in ("contend", "nap", "await", "drain")):
    calls, wall, cpu = own["contend"]
    run = f["contend"]["inclusive_runnable_ns"]
    say(quarter(run, wall - cpu, outer["contend"][0] - outer["contend"][1]),
        f"{label}: contend's runnable time = the wait the program measured, {(wall - cpu) / 1e6:.3f} ms (within 25%; its caller's {(outer['contend'][0] - outer['contend'][1]) / 1e6:.3f})",
        f"got {run / 1e6:.3f} ms")
    for fn in ("nap", "await", "drain"):
        x = f[fn]
        off = x["inclusive_ns"] - x["inclusive_cpu_ns"]
        say(x["inclusive_runnable_ns"] <= 0.25 * off, f"{label}: {fn}: blocked, not runnable ({x['inclusive_runnable_ns'] / 1e6:.3f} ms runnable of {off / 1e6:.3f} ms off the CPU)",
            str(x))
    bad = [x["name"] for x in d["functions"] if x["inclusive_runnable_ns"] is not None and
           (x["inclusive_runnable_ns"] > x["inclusive_ns"] - x["inclusive_cpu_ns"] + 1 or
            x["exclusive_runnable_ns"] > x["exclusive_ns"] - x["exclusive_cpu_ns"] + 1 or x["exclusive_runnable_ns"] < 0)]
    say(not bad, f"{label}: runnable time within each function's off-CPU time (exclusive and inclusive)", ", ".join(bad[:5]))
# the invariants of seed 002, in CPU time: callers sum to the inclusive
# time, exclusive + callees too (1 ns of rounding per term)
bad = []
for path in (burn, mixed):
    cc = json.load(open(path))
    fn = cc["function"]
    n = len(cc["callers"]) + len(cc["callees"]) + 2
    if abs(sum(c["attributed_cpu_ns"] for c in cc["callers"]) - fn["inclusive_cpu_ns"]) > n:
        bad.append(f"{fn['name']}: callers' CPU != inclusive CPU")
    if abs(fn["exclusive_cpu_ns"] + sum(c["attributed_cpu_ns"] for c in cc["callees"]) - fn["inclusive_cpu_ns"]) > n:
        bad.append(f"{fn['name']}: exclusive + callees' CPU != inclusive CPU")
    for c in cc["callers"] + cc["callees"]:
        if not 0 <= c["attributed_cpu_ns"] <= c["attributed_ns"] + 1:
            bad.append(f"{fn['name']}/{c['name']}: CPU {c['attributed_cpu_ns']} outside [0, wall {c['attributed_ns']}]")
say(not bad, f"{label}: the invariants hold in CPU time, and CPU <= wall", "; ".join(bad))
done()
PY
}

# run LABEL BINARY [RECORD OPTIONS]: launched under sonde, output and status unchanged
run() {
	local label=$1 bin=$2
	shift 2
	"$SONDE" record "$@" -o "$label.data" -- "$bin" 6 >"$label.out" 2>"$label.own"
	local rc=$?
	[ $rc = 0 ] && grep -qx "cpu_wait done" "$label.out" && ok "$label: recorded, output unchanged" ||
		{ notok "$label: recorded" "status $rc: $(grep -v '^own' "$label.own" | head -3)"; return; }
	compare "$label" "$label.data" "$label.own"
}

"$SONDE_CC_BIN" -O2 -g -pthread "$src" -o cw-gcc || { notok build "sonde-cc gcc"; exit 0; }
run "sonde-cc gcc" ./cw-gcc
# a trace: the waits as TRX_OFFCPU events, the report built from the timeline
run "sonde-cc gcc --trace" ./cw-gcc --trace

# pprof's cpu and off_cpu sample types, read by `go tool pprof`: each
# function's flat values are sonde's exclusive CPU and off-CPU time
export GOCACHE="$T/gocache" HOME="${HOME:-$T}"
if command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1; then
	"$SONDE" export -i "sonde-cc gcc.data" --format=pprof -o cw.pb.gz 2>exp.err || notok "pprof export" "$(cat exp.err)"
	"$SONDE" report -i "sonde-cc gcc.data" --format=json >all.json
	for t in cpu off_cpu; do
		go tool pprof -top -sample_index=$t -unit=ns -nodefraction=0 -nodecount=100000 cw.pb.gz >top_$t.txt 2>pprof.err ||
			notok "go tool pprof -sample_index=$t" "$(head -2 pprof.err)"
	done
	python3 - <<'PY'
import json, re, sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import say, done
f = {x["name"]: x for x in json.load(open("all.json"))["functions"]}
for t in ("cpu", "off_cpu"):
    flat = {}
    for line in open(f"top_{t}.txt"):
        m = re.match(r"\s*(\d+)ns\s.*%\s+(\S+)$", line)
        if m:
            flat[m.group(2)] = int(m.group(1))
    bad = []
    for n, x in f.items():
        want = x["exclusive_cpu_ns"] if t == "cpu" else x["exclusive_ns"] - x["exclusive_cpu_ns"]
        if abs(flat.get(n, 0) - want) > 2:
            bad.append(f"{n}: pprof {flat.get(n)} sonde {want}")
    say(flat and not bad, f"go tool pprof -sample_index={t}: every function's flat time is sonde's exclusive {t.replace('_', '-')} time", "; ".join(bad[:4]))
done()
PY
else
	skip "go tool pprof reads the cpu and off_cpu types" "no go tool pprof (apt-get install golang-go)"
fi
# The trace's thread-state track (the kernel's switch records, TRX_SWITCH):
# Chrome's JSON and Perfetto's protobuf (decoded with its schema by
# tests/perfetto_pb_decode.py, when python3-protobuf and protoc are here).
# On the main thread's state track, the runnable time inside contend's
# calls is the wait the program measured around them (within 25%, as the
# profile's check), the blocked time inside nap's is nap's (within 10% +
# 100 us), the slices go forward without overlap, running ones carry a CPU;
# Perfetto's track is a child of the thread's with the same slices.
"$SONDE" export -i "sonde-cc gcc --trace.data" --format=chrome -o st.json 2>st.err || notok "chrome export of the trace" "$(cat st.err)"
"$SONDE" export -i "sonde-cc gcc --trace.data" --format=perfetto -o st.pftrace 2>>st.err || notok "perfetto export of the trace" "$(cat st.err)"
PBPY=
if perfetto_pb pb; then
	"$PB_PY" "$ROOT/tests/perfetto_pb_decode.py" pb st.pftrace >st.dec.json 2>st.dec.err && PBPY=1 ||
		notok "perfetto: the protobuf library decodes the trace" "$(tail -2 st.dec.err)"
fi
python3 - "$PBPY" <<'PY'
import json, re, sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import say, done
own = {}
for line in open("sonde-cc gcc --trace.own"):
    m = re.match(r"own (\w+) calls (\d+) wall (\d+) cpu (\d+)", line)
    if m:
        own[m.group(1)] = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
ev = json.load(open("st.json"))["traceEvents"]
pid = next(e["pid"] for e in ev if e.get("ph") == "X" and e.get("name") == "contend")
calls = {}
for e in ev:
    if e.get("ph") == "X" and e.get("tid") == pid and e.get("name") in ("contend", "nap"):
        calls.setdefault(e["name"], []).append((e["ts"], e["ts"] + e["dur"]))
st = sorted((e["ts"], e["ts"] + e["dur"], e["name"], e["args"]) for e in ev
            if e.get("cat") == "sched" and e["args"].get("tid") == pid)
say(st, "chrome: the main thread has a state track", f"{len(st)} state slices")
def inside(kind, fn):  # us of `kind` state inside fn's calls
    t = 0.0
    for a, b, k, _ in st:
        if k == kind:
            for c0, c1 in calls.get(fn, []):
                t += max(0.0, min(b, c1) - max(a, c0))
    return t * 1e3
want = own["contend"][1] - own["contend"][2]
got = inside("runnable", "contend")
say(abs(got - want) <= 0.25 * want, f"chrome: runnable inside contend's calls = the wait the program measured, {want / 1e6:.3f} ms (within 25%)", f"got {got / 1e6:.3f} ms")
want = own["nap"][1] - own["nap"][2]
got = inside("blocked", "nap")
say(abs(got - want) <= 0.1 * want + 100e3, f"chrome: blocked inside nap's calls = nap's wait, {want / 1e6:.3f} ms (within 10% + 100 us)", f"got {got / 1e6:.3f} ms")
say(all(st[i][1] <= st[i + 1][0] + 0.001 for i in range(len(st) - 1)), "chrome: the state slices go forward, none overlaps")
say(all(x[3].get("cpu") is not None for x in st if x[2] == "running") and any(x[2] == "running" for x in st),
    "chrome: running slices say the CPU")
if sys.argv[1]:
    d = json.load(open("st.dec.json"))
    say(not d["errors"], "perfetto (protobuf schema): decodes", "; ".join(d["errors"][:3]))
    t = d["threads"].get(str(pid), {})
    tr = t.get("tracks", {}).get(f"{pid} state", [])
    say(len(tr) == len(st), "perfetto: the main thread's state track, a child of its track, with the same slices as chrome", f"{len(tr)} vs {len(st)}")
    say(sorted(x[0] for x in tr) == sorted(x[2] for x in st), "perfetto: the same states")
    say(all("cpu" in x[4] for x in tr if x[0] == "running"), "perfetto: running slices carry the cpu annotation")
else:
    print("skip - perfetto state track: python3-protobuf or protoc not installed (Debian packages)")
done()
PY

if command -v clang >/dev/null; then
	if SONDE_CC=clang "$SONDE_CC_BIN" -O2 -g -pthread "$src" -o cw-clang; then run "sonde-cc clang" ./cw-clang
	else notok "sonde-cc clang" "build failed"; fi
	if clang -O2 -g -pthread "$src" -o cw-plain-clang; then run "plain clang (patched)" ./cw-plain-clang
	else notok "plain clang" "build failed"; fi
else
	skip "clang builds" "no clang"
fi
if gcc -O2 -g -pthread "$src" -o cw-plain-gcc; then run "plain gcc (patched)" ./cw-plain-gcc
else notok "plain gcc" "build failed"; fi

# attach_to NAME ARGS...: ./cw-gcc ARGS started, its stdin a FIFO (fd 3),
# its output in NAME.out (then "status N"), its sums in NAME.own; once it
# waits (it prints "waiting PID"), `sonde record -p` on it in the
# background (its stderr NAME.err, its pid sp) until it says it records
attach_to() {
	local name=$1
	shift
	rm -f "$name.fifo"
	mkfifo "$name.fifo"
	(./cw-gcc "$@" <"$name.fifo" >"$name.out" 2>"$name.own"; echo "status $?" >>"$name.out") &
	runner=$!
	exec 3>"$name.fifo"
	for _ in $(seq 500); do grep -q "^waiting [0-9]" "$name.out" 2>/dev/null && break; sleep 0.02; done
	pid=$(awk '$1 == "waiting" {print $2; exit}' "$name.out")
	"$SONDE" record -p "$pid" -o "$name.data" 2>"$name.err" &
	sp=$!
	for _ in $(seq 1000); do grep -q "recording process $pid" "$name.err" 2>/dev/null && break; sleep 0.02; done
}

# attached: the program waits for a byte on its stdin meanwhile
attach_to att 6 wait
echo g >&3
exec 3>&-
wait $runner
wait $sp
rc=$?
[ $rc = 0 ] && grep -qx "status 0" att.out && ok "attached: recorded, the program ended normally" ||
	notok "attached: recorded" "status $rc: $(tail -3 att.err; tail -2 att.out)"
compare "attached" att.data att.own

# attached, the program's work done and then blocked (main waiting on its
# stdin, in read: no hook runs) when sonde ends: main's open call spent
# that wait off the CPU (the recorder reads the thread's CPU time at the
# end), not on it
attach_to blk 1 wait end
printf g >&3
for _ in $(seq 1500); do grep -q "waiting again" blk.out 2>/dev/null && break; sleep 0.02; done
sleep 1 # the window: the program stays blocked in it
kill -INT $sp
wait $sp
rc=$?
printf g >&3
exec 3>&-
wait $runner
"$SONDE" report -i blk.data --pid "$pid" --format=json >blk.json 2>blk.rerr
python3 - $rc <<'PY'
import json, sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import say, done
f = {x["name"]: x for x in json.load(open("blk.json"))["functions"]}
m = f.get("main", {})
own = {}
for line in open("blk.own"):
    w = line.split()
    if w[:1] == ["own"]:
        own[w[1]] = int(w[7])
work = sum(own[k] for k in ("burn", "nap", "await", "drain", "contend", "mixed") if k in own)
say(sys.argv[1] == "0" and m.get("inclusive_ns", 0) > 0.8e9,
    "attached, blocked: sonde ended on SIGINT, main open for the window", str(m))
say(len(own) == 6 and m.get("inclusive_cpu_ns") is not None and m["inclusive_cpu_ns"] < work + 50e6,
    f"attached, blocked: main's CPU time is its work's ({work / 1e6:.1f} ms; + 50 ms), the wait at the end off the CPU", str(m))
done()
PY
grep -qx "status 0" blk.out && ok "attached, blocked: the program then ran to its end" || notok "attached, blocked: the program" "$(tail -2 blk.out)"

# no source: a seccomp filter on the program (a filter that allows all),
# the split not tried; the report says so and shows no CPU numbers
{
	gcc -O2 "$PROGS/seccomp_run.c" -o seccomp_run || notok "seccomp helper" "build failed"
	"$SONDE" record -o sc.data -- ./seccomp_run ./cw-gcc 1 >sc.out 2>sc.own
	rc=$?
	"$SONDE" report -i sc.data --format=json >sc.json 2>sc.err
	python3 - <<'PY'
import json, sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import say, done
d = json.load(open("sc.json"))
say("seccomp" in d.get("cpu_split", ""), "seccomp: the report says the split was not tried", d.get("cpu_split"))
say(d.get("total_cpu_ns") is None and all(f["inclusive_cpu_ns"] is None for f in d["functions"]),
    "seccomp: no CPU numbers (null), not zeros")
done()
PY
	[ $rc = 0 ] && grep -qx "cpu_wait done" sc.out && ok "seccomp: the program ran as without sonde" ||
		notok "seccomp: the program ran" "status $rc"
	"$SONDE" report -i sc.data >sc.txt 2>&1
	check "seccomp: the table says why the CPU columns are missing" grep -q "^on-CPU / off-CPU time: not measured: the program runs under a seccomp filter" sc.txt
}

# sonde diff's call paths: their CPU time summed over the threads and
# processes of each recording as `sonde tree` has each path's nodes (two
# builds, both split); against the seccomp run, null
"$SONDE" diff "sonde-cc gcc.data" "plain gcc (patched).data" --format=json >dp.json 2>dp.err || notok "diff of two builds" "$(cat dp.err)"
"$SONDE" diff "sonde-cc gcc.data" sc.data --format=json >dsc.json 2>dsc.err || notok "diff with the seccomp run" "$(cat dsc.err)"
python3 - <<'PY'
import json, sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import say, done, check_diff_paths
check_diff_paths("diff of two builds", json.load(open("dp.json")), "sonde-cc gcc.data", "plain gcc (patched).data")
check_diff_paths("diff with the seccomp run", json.load(open("dsc.json")), "sonde-cc gcc.data", "sc.data")
done()
PY
exit 0

# record --syscalls (issue 38): system calls per calling function, from the
# interposed libc wrappers.  tests/progs/syscall_counts.c (a sonde-cc build)
# makes known numbers of read, write and nanosleep calls in each of its
# functions (one function in a second thread, one whose write is a tail
# call) and writes its own tally.
# Checks, in profile and trace mode (sonde-cc) and profile mode (a plain cc
# build patched without a rebuild): output unchanged; per function, sonde's
# count and bytes equal the program's; the time inside nanosleep is at least
# what was asked for (10 x 1 ms) and at most the wall time the program
# measured around its sleeps; per process, the counts equal the program's
# totals and equal strace -f -c's (the difference of a SCALE 2 and a SCALE 0
# run of the same program: strace also sees the loader's and stdio's calls,
# which are the same in both); a forked child's calls are its own process's.
# Attached (record --syscalls -p), sonde-cc and plain builds: the same
# per-function checks.  Then the error: report --syscalls of a recording
# made without it.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O2 -g -pthread -o sc "$PROGS/syscall_counts.c" || { notok build "sonde-cc"; exit 0; }
${CC:-cc} -O2 -g -pthread -o scplain "$PROGS/syscall_counts.c" || { notok build "cc"; exit 0; }
plain=$(./sc 2 plain.json) || notok "plain run" "exit $?"

# cmp.py MODE TALLY REPORT: the report's rows against the program's tally
cat > cmp.py <<'PY'
import json, sys
mode, tally, rep = sys.argv[1:4]
T = json.load(open(tally)); R = json.load(open(rep))
T.pop("tids")
def say(c, n, why=""):
    print(("ok - " if c else "not ok - ") + f"{mode}: {n}" + ("" if c else f": {why}"), flush=True)
rows = {}
for r in R["functions"]:
    rows[(r["name"], r["syscall"])] = r
# futex: from the kernel's exit events, where sonde can read the tracepoint's
# id (root); else the report says why, and no futex row is there
futex = R["futex"] == "counted"
calls = (("read", "read_bytes"), ("write", "write_bytes"), ("nanosleep", None), ("send", "send_bytes"),
         ("recv", "recv_bytes")) + ((("futex", None),) if futex else ())
bad = []
for fn, t in T.items():
    for call, key in calls:
        want = t[call]
        got = rows.get((fn, call))
        gc = got["count"] if got else 0
        if gc != want:
            bad.append(f"{fn} {call}: {gc} != {want}")
        if key and got and got["bytes"] != t[key]:
            bad.append(f"{fn} {call} bytes: {got['bytes']} != {t[key]}")
        errs = t["read_errors"] if call == "read" else t["futex_errors"] if call == "futex" else 0
        if got and got["errors"] != errs:
            bad.append(f"{fn} {call} errors: {got['errors']} != {errs}")
say(not bad, "per function, counts, bytes and errors equal the program's" + (" (futex too)" if futex else ""),
    "; ".join(bad))
# glibc's own futex calls (main's pthread_cond_wait and pthread_join,
# hello's pthread_cond_signal, a thread's start and end) are real calls of
# functions the tally does not list, in numbers the program cannot know
extra = [k for k in rows if k[0] not in T and not (k[1] == "futex" and k[0] in ("main", "hello", None))]
say(not extra, "no system call charged to a function that made none", str(extra))
if futex:
    say(all(r["ns"] is None for r in R["functions"] if r["syscall"] == "futex") and R["lost_futex"] == 0,
        "futex rows are counted, not timed (ns null), none lost", str(R["lost_futex"]))
else:
    print(f"skip - {mode}: futex per function: {R['futex']}")
n = rows.get(("nap_a_little", "nanosleep"))
want = T["nap_a_little"]
say(n is not None and 10 * 1000000 <= n["ns"] <= want["sleep_wall_ns"],
    "nanosleep time: >= the 10 x 1 ms asked for, <= the wall time the program measured",
    f"{n and n['ns']} vs {want['sleep_wall_ns']}")
tot = {c: sum(t[c] for t in T.values()) for c in ("read", "write", "nanosleep", "send", "recv")}
procs = R["processes"]
pc = {p["syscall"]: p["count"] for p in procs}
say(len({p["pid"] for p in procs}) == 1 and all(pc.get(c, 0) == tot[c] for c in tot),
    "per process, counts equal the program's totals", f"{pc} vs {tot}")
say(R["lost_syscalls"] == 0, "nothing lost", str(R["lost_syscalls"]))
json.dump(tot, open(f"totals.{mode}.json", "w"))
PY

# profile and trace of the sonde-cc build; profile of the plain build (patched without a rebuild)
for mode in profile trace plain; do
	opt=; prog=./sc
	[ $mode = trace ] && opt=--trace
	[ $mode = plain ] && prog=./scplain
	out=$("$SONDE" record $opt --syscalls -o rec.$mode -- $prog 2 tally.$mode.json 2>rec.$mode.err)
	rc=$?
	check "$mode: exit status 0 and output unchanged" test "$rc:$out" = "0:$plain"
	"$SONDE" report --syscalls -i rec.$mode --format=json >sys.$mode.json 2>sys.$mode.err ||
		{ notok "$mode: report --syscalls --format=json" "$(cat sys.$mode.err)"; continue; }
	"$SONDE" report --syscalls -i rec.$mode >sys.$mode.txt 2>&1 ||
		notok "$mode: report --syscalls table" "$(cat sys.$mode.txt)"
	check "$mode: the table names nanosleep in nap_a_little" grep -q "nanosleep *nap_a_little" sys.$mode.txt
	python3 cmp.py $mode tally.$mode.json sys.$mode.json
done

# The trace's system calls as slices (TRX_SYSCALL): in the Chrome export,
# each function's sys_read / sys_write / sys_nanosleep / sys_send / sys_recv
# slices directly inside its own slices (the innermost call slice around
# each) are as many as the program's tally says it made, the errors carry
# result -1; the Perfetto export (decoded with the protobuf schema) has the
# same slices.
"$SONDE" export -i rec.trace --format=chrome -o sys.trace.chrome.json 2>exp.err || notok "trace: chrome export" "$(cat exp.err)"
"$SONDE" export -i rec.trace --format=perfetto -o sys.trace.pftrace 2>>exp.err || notok "trace: perfetto export" "$(cat exp.err)"
dec=
if perfetto_pb pb; then
	"$PB_PY" "$ROOT/tests/perfetto_pb_decode.py" pb sys.trace.pftrace >sys.trace.dec.json 2>dec.err && dec=1 ||
		notok "trace: the protobuf library decodes the perfetto export" "$(tail -2 dec.err)"
fi
python3 - "$dec" <<'PY'
import json, sys, collections
def say(c, n, why=""):
    print(("ok - " if c else "not ok - ") + f"trace: {n}" + ("" if c else f": {why}"), flush=True)
T = json.load(open("tally.trace.json"))
T.pop("tids")
ev = [e for e in json.load(open("sys.trace.chrome.json"))["traceEvents"] if e.get("ph") == "X"]
calls = [e for e in ev if e.get("cat") not in ("syscall", "sched", "lock")]
sysc = [e for e in ev if e.get("cat") == "syscall"]
got, errs = collections.Counter(), collections.Counter()
for s in sysc:
    a, b = s["ts"], s["ts"] + s["dur"]
    around = [c for c in calls if c["tid"] == s["tid"] and c["ts"] <= a + 0.001 and b <= c["ts"] + c["dur"] + 0.001]
    fn = min(around, key=lambda c: c["dur"])["name"] if around else None
    got[(fn, s["name"][4:])] += 1
    if s["args"]["result"] == -1:
        errs[fn] += 1
bad = []
for fn, t in T.items():
    for call in ("read", "write", "nanosleep", "send", "recv"):
        if got[(fn, call)] != t[call]:
            bad.append(f"{fn} {call}: {got[(fn, call)]} slices, the program made {t[call]}")
    if errs[fn] != t["read_errors"]:
        bad.append(f"{fn}: {errs[fn]} failed, the program's {t['read_errors']}")
say(sysc and not bad, f"chrome: {len(sysc)} system call slices, each function's inside its calls as the program counted", "; ".join(bad[:4]))
if sys.argv[1]:
    d = json.load(open("sys.trace.dec.json"))
    n = sum(1 for t in d["threads"].values() for x in t["slices"] if x[0].startswith("sys_"))
    say(not d["errors"] and n == len(sysc), f"perfetto: the same {n} system call slices, on the threads' tracks",
        f"{d['errors'][:2]} {n} vs {len(sysc)}")
else:
    print("skip - trace: perfetto system call slices: python3-protobuf or protoc not installed (Debian packages)")
PY

# strace -f -c of the program alone, SCALE 2 minus SCALE 0
if command -v strace >/dev/null; then
	strace -f -c -o st2.txt ./sc 2 st2.json >/dev/null && strace -f -c -o st0.txt ./sc 0 st0.json >/dev/null ||
		notok "strace runs" "failed"
	python3 - st2.txt st0.txt totals.profile.json <<'PY'
import json, sys
def counts(p):
    c = {}
    for line in open(p):
        f = line.split()
        if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
            c[f[-1]] = int(f[3])
    return c
a, b = counts(sys.argv[1]), counts(sys.argv[2])
d = lambda k: a.get(k, 0) - b.get(k, 0)
tot = json.load(open(sys.argv[3]))
# glibc's send and recv are the sendto and recvfrom system calls on x86-64
got = {"read": d("read"), "write": d("write"), "nanosleep": d("nanosleep") + d("clock_nanosleep"),
       "send": d("sendto") + d("send"), "recv": d("recvfrom") + d("recv")}
ok = got == tot
print(("ok - " if ok else "not ok - ") + "per process, sonde's counts equal strace -f -c's (SCALE 2 - SCALE 0)"
      + ("" if ok else f": strace {got} sonde {tot}"))
PY
	# futex, per process: one strace -f over the recording itself (sonde and
	# the program), the futex calls of the program's threads (their ids from
	# its tally) against sonde's count for its process: glibc's own calls
	# (pthread_join, the thread's start) are in both
	# (LeakSanitizer stops the world with ptrace at exit, which a traced
	# process cannot: the sanitizer build's leak check is left to the other runs)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		strace -f -qq -e trace=futex -o stf.txt "$SONDE" record --syscalls -o rec.stf -- ./sc 2 tally.stf.json \
		>/dev/null 2>stf.err || notok "strace of a recording" "$(tail -2 stf.err)"
	"$SONDE" report --syscalls -i rec.stf --format=json >sys.stf.json 2>stf.err ||
		notok "report of the straced recording" "$(tail -2 stf.err)"
	python3 - stf.txt tally.stf.json sys.stf.json <<'PY'
import json, re, sys
T = json.load(open(sys.argv[2])); R = json.load(open(sys.argv[3]))
if R["futex"] != "counted":
    print(f"skip - futex per process against strace: {R['futex']}"); sys.exit(0)
tids = set(T["tids"])
n = sum(1 for l in open(sys.argv[1]) if (m := re.match(r"(\d+)\s+futex\(", l)) and int(m.group(1)) in tids)
got = sum(p["count"] for p in R["processes"] if p["syscall"] == "futex")
own = sum(t["futex"] for k, t in T.items() if k != "tids")
ok = got == n and n >= own
print(("ok - " if ok else "not ok - ") + f"futex per process: sonde's {got} equal strace -f's {n} (the program made {own} itself)"
      + ("" if ok else f": sonde {got}, strace {n}, own {own}"))
PY
else
	notok "strace" "not installed (the .ci/run apt line installs it)"
fi

# errors
"$SONDE" record -o plainrec -- ./sc 1 t.json >/dev/null 2>&1
"$SONDE" report --syscalls -i plainrec >err.out 2>&1
rc=$?
check "report --syscalls of a recording without them: exit 2" test $rc -eq 2
check "... and says to record with --syscalls" grep -q "recorded without --syscalls" err.out
# attached: record --syscalls -p, the wrappers through the GOT of every
# object (src/rt/got.c), on the sonde-cc and the plain build; the program
# waits for go.B before its first counted call
. "$ROOT/tests/attach_lib.sh"
if [ "$(id -u)" != 0 ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" != 0 ]; then
	skip "record --syscalls -p" "ptrace of a non-child needs root or kernel.yama.ptrace_scope 0"
else
	for b in sc scplain; do
		rm -f go.$b
		SC_WAIT=go.$b ./$b 2 tally.att-$b.json > att.$b.out &
		p=$!
		wait_for att.$b.out '^waiting' || { notok "attached $b: the program waits" "no 'waiting'"; kill $p; continue; }
		"$SONDE" record --syscalls -p $p -o rec.att-$b 2> att.$b.err &
		sp=$!
		wait_for att.$b.err "recording process $p" || notok "attached $b: sonde attached" "$(tail -2 att.$b.err)"
		touch go.$b
		wait $p; rc=$?
		wait $sp; src=$?
		check "attached $b: the program's output and status unchanged, sonde's 0" \
			test "$rc:$src:$(tail -n +2 att.$b.out)" = "0:0:$plain"
		"$SONDE" report --syscalls -i rec.att-$b --format=json > sys.att-$b.json 2> sys.att-$b.err ||
			{ notok "attached $b: report --syscalls" "$(cat sys.att-$b.err)"; continue; }
		python3 cmp.py attached-$b tally.att-$b.json sys.att-$b.json
	done
fi
"$SONDE" info -i rec.profile --format=json >info.json 2>&1
check "sonde info says the recording has system calls" jq_py info.json 'sys.exit(0 if d["syscalls"] is True else 1)'
"$SONDE" info -i plainrec --format=json >info0.json 2>&1
check "... and that one without --syscalls has none" jq_py info0.json 'sys.exit(0 if d["syscalls"] is False else 1)'

# a forked child: its calls are its own process's
"$SONDE_CC_BIN" -O2 -g -o sf "$PROGS/syscall_fork.c" || { notok build "sonde-cc syscall_fork"; exit 0; }
"$SONDE" record --syscalls -o rec.fork -- ./sf >fork.out 2>fork.err || notok "record the forking program" "$(cat fork.err)"
"$SONDE" report --syscalls -i rec.fork --format=json >fork.json 2>&1 || notok "report of the fork" "$(cat fork.json)"
python3 - fork.out fork.json <<'PY'
import json, sys
f = open(sys.argv[1]).read().split()   # parent PID N child PID M
want = {int(f[1]): int(f[2]), int(f[4]): int(f[5])}
d = json.load(open(sys.argv[2]))
got = {p["pid"]: p["count"] for p in d["processes"] if p["syscall"] == "write"}
fn = [(r["name"], r["count"]) for r in d["functions"] if r["syscall"] == "write"]
ok = got == want and fn == [("writes", sum(want.values()))]
print(("ok - " if ok else "not ok - ") + "fork: each process's writes are its own, all in writes()" +
      ("" if ok else f": {got} {fn} vs {want}"))
PY

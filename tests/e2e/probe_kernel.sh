#!/usr/bin/env bash
# probe_kernel.sh — sonde probe --kernel (issue 42) in one boot of Debian's
# kernel under QEMU (tests/guest.sh), with the test module tests/kmod: the
# kprobe and kretprobe counts of its functions equal the counts it keeps
# itself (/proc/sonde_kmod) while a program drives it; vfs_read counted for
# one program (tests/progs/kread.c, static) equals the reads it made while
# another process reads too; a blacklisted
# function and a missing one are refused before anything is placed; the
# durations and return values of a recursing function that spins a known
# time and returns known values (/proc/sonde_kmod_ret) equal the module's;
# a ring overflow is counted and shown, the counts staying exact;
# nothing is left in the kernel's kprobe list (debugfs kprobes/list) or
# kprobe_events after Ctrl-C, --duration and a SIGKILL of sonde; without
# root, one clear line.  No qemu, kernel or headers: a skip.
# test-timeout: 900 (a TCG guest: ~60 s idle, 3-5x under ASan on a loaded machine)
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/guest.sh"

why=$(guest_ready) || { skip "probe --kernel" "$why (apt-get install qemu-system-x86 linux-image-amd64 busybox-static cpio)"; exit 0; }
kmod=$cache/kmod-$GUEST_KVER
sh "$ROOT/tests/kmod/build.sh" "$kmod" "$GUEST_KVER" >kmod-build.log 2>&1
case $? in
0) ;;
2) skip "probe --kernel" "no headers for $GUEST_KVER (apt-get install linux-headers-amd64)"; exit 0 ;;
*) notok "probe --kernel: test module" "$(tail -3 kmod-build.log)"; exit 0 ;;
esac

cc -O1 -static -o kread "$PROGS/kread.c" 2>kread.log || { notok "probe --kernel: kread" "$(tail -3 kread.log)"; exit 0; }
# the return values and durations of sonde_kmod_ret against the module's own
# counts (/proc/sonde_kmod_ret): guest-checks.sh's check_ret
cat >check_ret.py <<'PY'
import json, sys
name, path, before, after, rounds, depth, rc = sys.argv[1:8]
rounds, depth = int(rounds), int(depth)
def own(f):
    calls = spin = 0; vals = {}
    for line in open(f):
        w = line.split()
        if w[0] == "calls": calls, spin = int(w[1]), int(w[3])
        elif w[0] == "ret": vals[int(w[1])] = int(w[2])
    return calls, spin, vals
c0, spin, v0 = own(before)
c1, _, v1 = own(after)
want_calls = c1 - c0
want_vals = {v: v1[v] - v0.get(v, 0) for v in v1 if v1[v] - v0.get(v, 0)}
bad = []
if rc != "0": bad.append(f"status {rc}")
if want_calls != rounds * (depth + 1): bad.append(f"the module counted {want_calls} calls, driven {rounds * (depth + 1)}")
try:
    q = json.load(open(path))["probes"][0]
except Exception as e:
    q = {}; bad.append(f"no JSON: {e}")
for k, want in (("calls", want_calls), ("returns", want_calls), ("hits", want_calls), ("untimed", 0),
                ("lost_samples", 0), ("unmatched_returns", 0), ("malformed_records", 0), ("timed", True),
                ("errors", sum(n for v, n in want_vals.items() if v < 0))):
    if q.get(k) != want: bad.append(f"{k} {q.get(k)}, want {want}")
got_vals = {r["value"]: r["calls"] for r in q.get("returned", [])}
if got_vals != want_vals: bad.append(f"returned {got_vals}, the module returned {want_vals}")
# each call spins spin ns; round i's level-L call waits for the L below it too
if not q.get("min_ns", 0) >= spin: bad.append(f"min_ns {q.get('min_ns')} < the spin {spin}")
if not q.get("max_ns", 0) >= (depth + 1) * spin: bad.append(f"max_ns {q.get('max_ns')} < {depth + 1} spins")
least = rounds * sum(range(1, depth + 2)) * spin
if not q.get("total_ns", 0) >= least: bad.append(f"total_ns {q.get('total_ns')} < {least} (nested spins)")
print(f"ok - {name} ({want_calls} calls, values {sorted(want_vals.items())}, min {q.get('min_ns')} ns >= {spin})"
      if not bad else f"not ok - {name}: " + "; ".join(bad))
PY
# one --library file for a process probe and a kernel probe of the same shape
printf '%s\n' '# probes of a process and of the kernel' 'pmain = func:main' 'kstep = func:sonde_kmod:sonde_kmod_step' >probes.lib
cc -O1 -g -o kread_dyn "$PROGS/kread.c"
"$BUILD/bin/sonde" probe --library probes.lib -e @pmain --format=json -o lib-proc.json -- ./kread_dyn 3 >lib-proc.out 2>lib-proc.err
rc=$?
calls=$(jq_py lib-proc.json 'print(d["probes"][0].get("calls"))' 2>/dev/null)
[ $rc = 0 ] && [ "$calls" = 1 ] && ok "library: @pmain on a process (main called once)" \
	|| notok "library: @pmain on a process" "status $rc, calls $calls: $(head -2 lib-proc.err)"
dir=$(pwd)
cat >guest-checks.sh <<EOF
SONDE=$BUILD/bin/sonde
CHECK_RET=$dir/check_ret.py
KO=$kmod/sonde_kmod.ko
LIB=$ROOT/tests/lib.sh
L_SUM=$(grep -n 's->sum += v;' "$ROOT/tests/kmod/sonde_kmod.c" | cut -d: -f1)
L_CLAMP=$(grep -n 'sonde_kmod_g.clamp_calls++;' "$ROOT/tests/kmod/sonde_kmod.c" | cut -d: -f1)
EOF
cat >>guest-checks.sh <<'EOF'
ok()    { echo "ok - $1"; }
notok() { echo "not ok - $1: $2"; }
LIST=/sys/kernel/debug/kprobes/list
EVENTS=/sys/kernel/tracing/kprobe_events
insmod "$KO" || { notok "insmod sonde_kmod" "failed"; exit 1; }
# counts FILE: the module's own "step_calls X clamp_calls Y" as "X Y"
own() { awk '{print $2, $4}' /proc/sonde_kmod; }
# ownsum: the same and the module's sum, "X Y Z"
ownsum() { awk '{print $2, $4, $6}' /proc/sonde_kmod; }
# compare NAME JSON STEP0 CLAMP0: the probes' calls and returns against the module's counts since STEP0/CLAMP0
compare() {
	set -- "$1" "$2" "$3" "$4" $(own)
	python3 - "$@" <<'PY'
import json, sys
name, path, s0, c0, s1, c1 = sys.argv[1:7]
steps, clamps = int(s1) - int(s0), int(c1) - int(c0)
p = {q["spec"]: q for q in json.load(open(path))["probes"]}
bad = []
for spec, want in (("func:sonde_kmod:sonde_kmod_step", steps), ("func:sonde_kmod_clamp", clamps)):
    q = p.get(spec)
    if q is None: continue
    if q.get("calls") != want or q.get("returns") != want or q.get("hits") != want:
        bad.append(f"{spec}: calls {q.get('calls')} returns {q.get('returns')} hits {q.get('hits')}, module counted {want}")
if steps == 0: bad.append("the module counted no calls")
print(f"ok - {name} ({steps} steps, {clamps} clamps)" if not bad else f"not ok - {name}: " + "; ".join(bad))
PY
}
# nothing NAME: no kprobe of sonde's left in the kernel
nothing() {
	if grep -q sonde_kmod "$LIST" 2>/dev/null || [ -s "$EVENTS" ]; then
		notok "$1: nothing left" "$(cat "$LIST" "$EVENTS" 2>&1 | head -3)"
	else ok "$1: nothing left"; fi
}
# placed PID: waits until sonde's probes are in the kernel's list (bounded)
placed() {
	for _ in $(seq 3000); do
		grep -q sonde_kmod_step "$LIST" 2>/dev/null && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.02
	done
	return 1
}
# said FILE TEXT PID: until FILE has a line with TEXT, while PID runs (bounded, 60 s)
said() {
	for _ in $(seq 3000); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.02
	done
	return 1
}
# ready PID ERR: waits (bounded) for sonde's own word that every event is open
# ("sonde: probes in ..." on its stderr): the list shows a function's kprobe
# before its kretprobe, so a call made between the two is counted but not returned
ready() { said "$2" "probes in" "$1"; }
# sampled PID: waits until all of sonde's events of sonde_kmod_step are in
# the list: per CPU a counting kprobe and kretprobe, a sampling pair (bounded)
sampled() {
	for _ in $(seq 3000); do
		[ "$(grep -c sonde_kmod_step "$LIST" 2>/dev/null)" -ge $((4 * $(nproc))) ] && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.02
	done
	return 1
}
# ends PID: waits (bounded, 120 s) for a signalled sonde to exit; 1 if it did not
ends() {
	for _ in $(seq 6000); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.02
	done
	kill -9 "$1"
	return 1
}

[ -r "$LIST" ] && ok "debugfs kprobes/list readable" || notok "debugfs kprobes/list readable" "no $LIST"

# 1. counts while a program drives the module
set -- $(own)
"$SONDE" probe --kernel --format=json -o k1.json -e func:sonde_kmod:sonde_kmod_step -e func:sonde_kmod_clamp \
	-- sh -c 'echo 3000 >/proc/sonde_kmod; echo 7 >/proc/sonde_kmod' >k1.out 2>k1.err
rc=$?
[ $rc = 0 ] && compare "func and return counts = the module's" k1.json "$1" "$2" || notok "probe --kernel ran" "status $rc: $(head -3 k1.err)"
nothing "program's end"

# 1b. a program's own hits only: vfs_read while another process reads too
( while :; do cat /proc/sonde_kmod >/dev/null; done ) &
noise=$!
"$SONDE" probe --kernel --format=json -o k1b.json -e func:vfs_read -- ./kread 1234 >k1b.out 2>k1b.err
rc=$?
kill $noise; wait $noise 2>/dev/null
python3 - k1b.json k1b.out $rc <<'PY'
import json, sys
path, out, rc = sys.argv[1:4]
want = int(open(out).read().split()[1])
q = json.load(open(path))["probes"][0]
got = (q.get("calls"), q.get("returns"))
name = "vfs_read filtered to the program = its own reads"
print(f"ok - {name} ({want})" if rc == "0" and got == (want, want) else f"not ok - {name}: calls/returns {got}, it read {want} times (status {rc})")
# its return type from the kernel's BTF: ssize_t; without BTF null and one note
import os
btf = os.path.exists("/sys/kernel/btf/vmlinux")
rt, err = q.get("return_type", "absent"), open("k1b.err").read()
name = "vfs_read returns ssize_t (BTF)" if btf else "no BTF: return_type null, said once"
good = rt == "ssize_t" if btf else rt is None and err.count("no kernel BTF") == 1
print(f"ok - {name}" if good else f"not ok - {name}: return_type {rt!r}, stderr {err[:200]!r}")
PY
nothing "a program's probes"

# 1d. durations and return values: sonde_kmod_ret recursing, every call
# spinning a known time and returning a known value (the module counts them)
cat /proc/sonde_kmod_ret >ret0.txt
"$SONDE" probe --kernel --format=json -o k1d.json -e func:sonde_kmod:sonde_kmod_ret \
	-- sh -c 'echo "20 2" >/proc/sonde_kmod_ret' >k1d.out 2>k1d.err
rc=$?
cat /proc/sonde_kmod_ret >ret1.txt
python3 "$CHECK_RET" "return values and durations = the module's (recursing)" k1d.json ret0.txt ret1.txt 20 2 $rc
# the same system-wide, in the table (rounds 0-3 return 0, -EINVAL, 1, -ENOENT)
"$SONDE" probe --kernel -e func:sonde_kmod_ret -- sh -c 'echo "4 0" >/proc/sonde_kmod_ret' >k1e.out 2>k1e.err
rc=$?
cat k1e.out k1e.err >k1e.all
if [ $rc = 0 ] && grep -q 'calls 4, total' k1e.all && grep -q 'returned .*(errors 2)' k1e.all; then ok "table: durations, returned values and errors"
else notok "table: durations, returned values and errors" "status $rc: $(cat k1e.out k1e.err | head -5)"; fi

# 1e. a ring that overflows: sonde stopped while 20000 calls are sampled; the
# counts stay exact, the samples lost and the calls not timed are shown
set -- $(own)
"$SONDE" probe --kernel --format=json -o k1f.json -e func:sonde_kmod:sonde_kmod_step >k1f.out 2>k1f.err &
pid=$!
if sampled $pid && ready $pid k1f.err; then
	kill -STOP $pid
	echo 20000 >/proc/sonde_kmod
	kill -CONT $pid
	kill -INT $pid
	if ends $pid; then wait $pid; rc=$?; else wait $pid; rc="still running 120 s after its SIGINT"; fi
	[ "$rc" = 0 ] && compare "overflow: counts still = the module's" k1f.json "$1" "$2" || notok "overflow" "status $rc: $(cat k1f.err)"
	python3 - k1f.json <<'PY'
import json, sys
q = json.load(open(sys.argv[1]))["probes"][0]
name = "overflow: lost samples and calls not timed shown"
c, u, l = q.get("calls", 0), q.get("untimed", 0), q.get("lost_samples", 0)
ok = l > 0 and 0 < u <= c and q.get("returns") == c
print(f"ok - {name} ({c} calls, {u} not timed, {l} samples lost)" if ok else f"not ok - {name}: calls {c} untimed {u} lost_samples {l} returns {q.get('returns')}")
PY
else notok "overflow: placed" "$(cat k1f.err)"; kill -9 $pid; wait $pid; fi
nothing "overflow"

# 1c. the same library file's kernel probe
"$SONDE" probe --kernel --library probes.lib -e @kstep --format=json -o lib-k.json -- sh -c 'echo 40 >/proc/sonde_kmod' >lib-k.out 2>lib-k.err
rc=$?
calls=$(python3 -c 'import json; print(json.load(open("lib-k.json"))["probes"][0].get("calls"))' 2>/dev/null)
[ $rc = 0 ] && [ "$calls" = 40 ] && ok "library: @kstep on the kernel (40 calls driven)" \
	|| notok "library: @kstep on the kernel" "status $rc, calls $calls: $(head -2 lib-k.err)"

# 1g. stacks: sonde_kmod_step's callers, sampled callchains (the module's
# source: only sonde_kmod_write calls it, from the write(2) path)
set -- $(own)
# The shell writes once sonde's probes are in and stays until sonde has
# ended: its user frames are named from its /proc/PID/maps when sonde reads
# the records, so it must still be there then.
kgo=$(mktemp -u /tmp/kgo.XXXXXX) && mkfifo "$kgo" || notok "stack: a fifo" "mkfifo $kgo"
sh -c 'read x; echo 300 >/proc/sonde_kmod; echo written; read x' <"$kgo" >kst.sh 2>&1 &
shp=$!
exec 7>"$kgo"
"$SONDE" probe --kernel --format=json -o kst.json -e stack:sonde_kmod:sonde_kmod_step >kst.out 2>kst.err &
pid=$!
if said kst.err "^sonde: probes in" $pid; then
	echo go >&7
	said kst.sh written $shp || notok "stack: the shell's write" "$(cat kst.sh)"
fi
kill -INT $pid
if ends $pid; then wait $pid; rc=$?; else wait $pid; rc="still running 120 s after its SIGINT"; fi
echo done >&7
exec 7>&-
wait $shp
rm -f "$kgo"
set -- $(own) "$1" "$2"
python3 - kst.json $(($1 - $3)) $rc <<'PY'
import json, sys
path, steps, rc = sys.argv[1], int(sys.argv[2]), sys.argv[3]
q = json.load(open(path))["probes"][0]
st = q.get("stacks", [])
total = sum(s["count"] for s in st) + q.get("other", 0)
name = "stack: hits and the stacks' counts = the module's calls"
good = rc == "0" and q.get("hits") == steps == total and q.get("lost_samples") == 0
print(f"ok - {name} ({steps})" if good else f"not ok - {name}: hits {q.get('hits')}, stacks {total}, module {steps}, status {rc}")
fr = [f["name"] for f in st[0]["frames"]] if st else []
name = "stack: innermost sonde_kmod_step [sonde_kmod], then sonde_kmod_write, then vfs_write"
good = len(fr) > 3 and fr[0] == "sonde_kmod_step [sonde_kmod]" and fr[1] == "sonde_kmod_write [sonde_kmod]" and "vfs_write" in fr[2:]
print(f"ok - {name}" if good else f"not ok - {name}: {fr[:8]}")
k = next((i for i, f in enumerate(fr) if "libc.so.6" in f), -1)
name = "stack: the user stack after the kernel's: the shell's write in libc.so.6"
print(f"ok - {name} (frame {k})" if k > 2 else f"not ok - {name}: {fr}")
pr = {p["pid"]: p["hits"] for p in q.get("processes", [])}
name = "stack: hits by process: one process (the shell's echo) made them all"
print(f"ok - {name}" if list(pr.values()) == [steps] else f"not ok - {name}: {pr}")
PY
"$SONDE" probe --kernel -e stack:sonde_kmod_step -- sh -c 'echo 5 >/proc/sonde_kmod' >kst2.out 2>kst2.err
grep -Eq '^ +5 +sonde_kmod_step \[sonde_kmod\]$' kst2.err && grep -q '^ *sonde_kmod_write \[sonde_kmod\]$' kst2.err &&
	ok "stack: the table lists the stack, counted, and its frames" || notok "stack: the table" "$(head -8 kst2.err)"
nothing "stack probe"

# 1h. lines from the .ko's DWARF: the line of each step (step_calls) and
# the line of each clamp (clamp_calls), counted by the module itself
set -- $(own)
"$SONDE" probe --kernel --format=json -o kl.json -e "line:$KO:sonde_kmod.c:$L_SUM" -e "line:$KO:sonde_kmod.c:$L_CLAMP" \
	-- sh -c 'echo 900 >/proc/sonde_kmod; echo 31 >/proc/sonde_kmod' >kl.out 2>kl.err
rc=$?
set -- $(own) "$1" "$2"
python3 - kl.json $(($1 - $3)) $(($2 - $4)) $rc <<'PY'
import json, sys
path, steps, clamps, rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
q = json.load(open(path))["probes"] if rc == "0" else []
got = [p.get("hits") for p in q]
name = "line: hits of each step's line and each clamp's line = the module's counts"
print(f"ok - {name} ({steps}, {clamps})" if got == [steps, clamps] and steps and clamps
      else f"not ok - {name}: {got}, the module counted {steps} and {clamps} (status {rc}; {open('kl.err').read()[:200]})")
w = q[0].get("where", "") if q else ""
name = "line: placed at sonde_kmod_step + its offset from the .ko's DWARF"
print(f"ok - {name} ({w[:60]})" if "sonde_kmod:sonde_kmod_step+0x" in w else f"not ok - {name}: {w!r}")
PY
"$SONDE" probe --kernel -e "line:$KO:sonde_kmod.c:1" --duration 1 >kl2.out 2>kl2.err
rc=$?
[ $rc != 0 ] && grep -q "no code at sonde_kmod.c:1" kl2.err && ok "line: a line without code refused" ||
	notok "line: a line without code refused" "status $rc: $(cat kl2.err)"
nothing "line probes"

# 1i. variables through kprobe_events' fetch arguments, from the .ko's
# DWARF: sonde_kmod_step(s, v) is called with v = 0..N-1 on the module's
# state (its own step_calls and sum before each add: a pointer-chased int
# and long), sonde_kmod_clamp(long v) with the multiples of 3 below N, and
# clamp_calls (a global's member) counts them; the module's counts and sum
# before and after are the expected values
N=300
set -- $(ownsum)
"$SONDE" probe --kernel --format=json -o kv.json -e "var:$KO:sonde_kmod_step:v" -e "var:$KO:sonde_kmod_step:s->step_calls" \
	-e "var:$KO:sonde_kmod_step:s->sum" -e "var:$KO:sonde_kmod_clamp:v" -e "var:$KO:sonde_kmod_clamp:sonde_kmod_g.clamp_calls" \
	-e "assert:$KO:sonde_kmod_step:v < 250" -e "var:$KO:sonde_kmod.c:$L_SUM:s->sum + v" \
	-- sh -c "echo $N >/proc/sonde_kmod" >kv.out 2>kv.err
rc=$?
set -- "$@" $(ownsum)
python3 - kv.json $N $rc "$@" <<'PY'
import json, sys
path, n, rc, s0, c0, m0, s1, c1, m1 = sys.argv[1], int(sys.argv[2]), sys.argv[3], *map(int, sys.argv[4:10])
steps, clamps = s1 - s0, c1 - c0
q = json.load(open(path))["probes"] if rc == "0" else []
def stats(count, lo, hi, total, last):
    return {"count": count, "min": lo, "max": hi, "sum": total, "last": last}
mult3 = [i for i in range(n) if i % 3 == 0]
# s->sum at each entry: the module's sum before adding v = i
sums = [m0 + i * (i - 1) // 2 for i in range(n)]
want = [
    ("var v (int, a register argument)", stats(steps, 0, n - 1, m1 - m0, n - 1)),
    ("var s->step_calls (int through a pointer)", stats(steps, s0, s1 - 1, sum(range(s0, s1)), s1 - 1)),
    ("var s->sum (long through a pointer)", stats(steps, sums[0], sums[-1], sum(sums), m1 - (n - 1))),
    ("var v of clamp (long)", stats(clamps, 0, mult3[-1], sum(mult3), mult3[-1])),
    ("var sonde_kmod_g.clamp_calls (a global's member)", stats(clamps, c0, c1 - 1, sum(range(c0, c1)), c1 - 1)),
]
if steps != n or clamps != len(mult3):
    print(f"not ok - var: the module counted {steps} steps and {clamps} clamps, driven {n} and {len(mult3)}")
for (name, w), p in zip(want, q):
    got = {k: p.get(k) for k in w}
    # kernel_missed: kprobe_profile's nmissed of its probe, 0 with nothing else probing
    good = got == w and p.get("hits") == w["count"] and p.get("lost_samples") == 0 and p.get("kernel_missed") == 0
    print(f"ok - {name} = the module's ({w['count']} values, sum {w['sum']})" if good else f"not ok - {name}: {got} hits {p.get('hits')} kernel_missed {p.get('kernel_missed')}, want {w}")
if len(q) != 7:
    print(f"not ok - var: 7 probes placed: status {rc}, {len(q)} in the JSON: {open('kv.err').read()[:300]}")
else:
    a = q[5]
    fails = sum(1 for i in range(n) if not i < 250)
    good = a.get("evaluated") == steps and a.get("failures") == fails and (a.get("first_failures") or [""])[0].endswith("v=250")
    print(f"ok - assert v < 250: {fails} failures of {steps}, the first v=250" if good else f"not ok - assert v < 250: {a}")
    l = q[6]
    # at the line s->sum += v, before it runs: the sum before the add, plus v
    w = [m0 + i * (i - 1) // 2 + i for i in range(n)]
    got = (l.get("count"), l.get("sum"), l.get("max"))
    good = got == (steps, sum(w), w[-1]) and "sonde_kmod:sonde_kmod_step+0x" in l.get("where", "")
    print(f"ok - var at a line: s->sum + v = the module's ({steps} values)" if good else f"not ok - var at a line: {got}, want {(steps, sum(w), w[-1])}: {l.get('where')}")
PY
"$SONDE" probe --kernel -e "var:$KO:sonde_kmod_step:no_such_var" --duration 1 >kv2.out 2>kv2.err
rc=$?
[ $rc != 0 ] && grep -q "no_such_var" kv2.err && ok "var: an unknown variable refused, by name" ||
	notok "var: an unknown variable refused" "status $rc: $(cat kv2.err)"
"$SONDE" probe --kernel -e "var:$KO:sonde_kmod_step:s->step_calls" >kv3.out 2>kv3.err &
pid=$!
for _ in $(seq 3000); do grep -q sonde_kmod_step "$EVENTS" 2>/dev/null && break; kill -0 $pid 2>/dev/null || break; sleep 0.02; done
if grep -q "sonde_$pid/" "$EVENTS"; then
	kill -9 $pid; wait $pid
	# the guardian removes the probe once sonde's perf events are gone (bounded: 10 s)
	for _ in $(seq 500); do [ -s "$EVENTS" ] || break; sleep 0.02; done
	ok "var: placed in kprobe_events as sonde_$pid, then sonde SIGKILLed"
else notok "var: placed in kprobe_events" "$(cat kv3.err)"; kill -9 $pid; wait $pid; fi
"$SONDE" probe --kernel --format=json -o kv4.json -e "var:$KO:sonde_kmod_step:v" --duration 1 >kv4.out 2>kv4.err
rc=$?
[ $rc = 0 ] && [ -s kv4.json ] && ok "var: --duration ends by itself" || notok "var: --duration" "status $rc: $(cat kv4.err)"
"$SONDE" probe --kernel --format=json -o kv5.json -e "var:$KO:sonde_kmod_step:v" >kv5.out 2>kv5.err &
pid=$!
# its perf events open after the probe is listed: wait for sonde's own word that they are
ready $pid kv5.err
echo 20 >/proc/sonde_kmod
kill -INT $pid
if ends $pid; then wait $pid; rc=$?; else wait $pid; rc="still running 120 s after its SIGINT"; fi
[ "$rc" = 0 ] && python3 -c 'import json,sys; q=json.load(open("kv5.json"))["probes"][0]; sys.exit(0 if q["count"] == q["hits"] == 20 else 1)' &&
	ok "var: Ctrl-C: the 20 values made before it" || notok "var: Ctrl-C" "status $rc: $(cat kv5.err)"
nothing "var probes, SIGKILL included"

# 2. refusals before anything is placed
bl=$(awk 'NR==1 {print $2}' /sys/kernel/debug/kprobes/blacklist)
"$SONDE" probe --kernel -e "func:$bl" --duration 1 >bl.out 2>bl.err
rc=$?
if [ $rc != 0 ] && grep -q blacklist bl.err && ! grep -q "$bl" "$LIST"; then ok "blacklisted $bl refused"
else notok "blacklisted $bl refused" "status $rc: $(cat bl.err)"; fi
"$SONDE" probe --kernel -e func:sonde_no_such_function --duration 1 >nf.out 2>nf.err
rc=$?
[ $rc != 0 ] && grep -q "no function" nf.err && ok "missing function refused" || notok "missing function refused" "status $rc: $(cat nf.err)"

# 3. Ctrl-C: counts up to it, nothing left
set -- $(own)
"$SONDE" probe --kernel --format=json -o k3.json -e func:sonde_kmod:sonde_kmod_step >k3.out 2>k3.err &
pid=$!
if ready $pid k3.err; then
	echo 500 >/proc/sonde_kmod
	kill -INT $pid
	if ends $pid; then wait $pid; rc=$?; else wait $pid; rc="still running 120 s after its SIGINT"; fi
	[ "$rc" = 0 ] && compare "Ctrl-C: counts = the module's" k3.json "$1" "$2" || notok "Ctrl-C" "status $rc: $(cat k3.err)"
else notok "Ctrl-C: placed" "$(cat k3.err)"; kill -9 $pid; wait $pid; fi
nothing "Ctrl-C"

# 4. --duration
"$SONDE" probe --kernel --format=json -o k4.json -e func:sonde_kmod:sonde_kmod_step --duration 2 >k4.out 2>k4.err &
pid=$!
placed $pid && ok "--duration: placed" || notok "--duration: placed" "$(cat k4.err)"
wait $pid; rc=$?
[ $rc = 0 ] && [ -s k4.json ] && ok "--duration: ended by itself" || notok "--duration: ended" "status $rc: $(cat k4.err)"
nothing "--duration"

# 5. SIGKILL of sonde
"$SONDE" probe --kernel -e func:sonde_kmod:sonde_kmod_step -e func:sonde_kmod_clamp >k5.out 2>k5.err &
pid=$!
if placed $pid; then kill -9 $pid; wait $pid; ok "SIGKILL: placed then killed"
else notok "SIGKILL: placed" "$(cat k5.err)"; kill -9 $pid; wait $pid; fi
nothing "SIGKILL"
echo 10 >/proc/sonde_kmod && ok "module still driven after the SIGKILL" || notok "module after SIGKILL" "write failed"

# 6. without root
setpriv --reuid=65534 --regid=65534 --clear-groups "$SONDE" probe --kernel -e func:sonde_kmod_step --duration 1 >nr.out 2>nr.err
rc=$?
if [ $rc != 0 ] && [ "$(wc -l <nr.err)" = 1 ] && grep -q "needs root" nr.err; then ok "non-root: one clear line"
else notok "non-root: one clear line" "status $rc: $(cat nr.err)"; fi
rmmod sonde_kmod && ok "module unloads (no probe holds it)" || notok "rmmod" "failed"
EOF

guest_run "$dir" "$dir/guest-checks.sh" 840
rc=$?
cat guest.out 2>/dev/null | grep -E '^(ok|not ok|skip) - ' | sed 's/^\(ok\|not ok\|skip\) - /\1 - kernel: /'
if [ $rc = 124 ]; then notok "kernel: guest" "no status back from the guest: $(grep -v '^\[' guest.console | tail -5)"
elif [ $rc != 0 ] && ! grep -q '^not ok' guest.out; then notok "kernel: guest script" "status $rc: $(tail -5 guest.out)"; fi
exit 0

#!/usr/bin/env bash
# kernel_probe_bench.sh — a counted kernel probe hit (sonde probe --kernel)
# against bpftrace's kprobe counting the same function, side by side in one
# boot of the same guest (issue 42).  tests/guest.sh boots Debian's kernel
# under QEMU TCG (the host has no kprobes); the test module tests/kmod runs
# N calls of sonde_kmod_step inside the kernel in one write to
# /proc/sonde_kmod, which bench/kernel_target.c times on the guest's clock
# once each tool says its probes are in ("sonde: probes in the kernel";
# bpftrace's BEGIN), so no tool's start-up or placement is in the figures.
# Rows: plain; sonde's func probe (kprobe + kretprobe, counted and timed);
# sonde's line probe on the step's `s->sum += v;` (a kprobe at its offset);
# bpftrace's kprobe count, kprobe + kretprobe (count, duration histogram),
# and kprobe at the address of sonde's line.  One write of N steps fills
# sonde's rings on the guest's one CPU (sonde cannot drain them meanwhile:
# the samples beyond are lost, the counts stay exact), so sonde's rows are
# also run as writes of B steps 20 ms apart (every sample kept), against a
# plain run of the same writes.  Each row is the fastest of REPS runs (the
# rows taken in turn, REPS rounds), per hit, minus its plain run's.  sonde's
# JSON counts and bpftrace's @c are checked against N (and the module's own
# count) every run; a mismatch is printed as a note.  The guest's CPU is
# emulated: absolute ns are of that CPU, the ratios are the figure.  Root
# only; ~4.5 minutes at REPS=3 on 2 CPUs.  Prints figures; never fails on
# timing.
#   BUILD=build bash bench/kernel_probe_bench.sh [N]     (N=200000, REPS=3, B=1000)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$root/build}
SONDE=${SONDE:-$BUILD/bin/sonde}
N=${1:-200000}
REPS=${REPS:-3}
B=${B:-1000}   # the batched rows: writes of B steps, 20 ms apart
[ "$(id -u)" = 0 ] || { echo "kernel_probe_bench: needs root"; exit 0; }
[ -x "$SONDE" ] || { echo "kernel_probe_bench: no $SONDE (make BUILD=...)"; exit 0; }
ROOT=$root
source "$root/tests/guest.sh"
why=$(guest_ready) || { echo "kernel_probe_bench: no guest: $why"; exit 0; }
export SONDE_TEST_CACHE=${SONDE_TEST_CACHE:-$BUILD/test-cache}
kmod=$SONDE_TEST_CACHE/kmod-bench-$GUEST_KVER
sh "$root/tests/kmod/build.sh" "$kmod" "$GUEST_KVER" >/dev/null 2>"$SONDE_TEST_CACHE/kmod-bench.log" ||
	{ echo "kernel_probe_bench: no test module: $(tail -2 "$SONDE_TEST_CACHE/kmod-bench.log")"; exit 0; }
tmp=$(mktemp -d /tmp/sonde-kernel-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
gcc -O2 -static -o ktarget "$root/bench/kernel_target.c" || { echo "kernel_probe_bench: no static ktarget"; exit 0; }
cp "$kmod/sonde_kmod.ko" .
L=$(grep -n 's->sum += v;' "$root/tests/kmod/sonde_kmod.c" | cut -d: -f1)
BT=$(command -v bpftrace || true)
# bpftrace's BEGIN runs once every probe is attached ("Attaching" is said before)
cat >bk.bt <<'EOF'
BEGIN { printf("sonde-ready\n"); }
kprobe:sonde_kmod_step { @c = count(); }
EOF
cat >bkr.bt <<'EOF'
BEGIN { printf("sonde-ready\n"); }
kprobe:sonde_kmod_step { @c = count(); @s[tid] = nsecs; }
kretprobe:sonde_kmod_step /@s[tid]/ { @d = hist(nsecs - @s[tid]); delete(@s[tid]); }
EOF

cat >guest-bench.sh <<EOF
SONDE=$SONDE
KO=$tmp/sonde_kmod.ko
N=$N
B=$B
REPS=$REPS
L=$L
BT=$BT
EOF
cat >>guest-bench.sh <<'EOF'
LIST=/sys/kernel/debug/kprobes/list
insmod "$KO" || { echo "x all 0 insmod $KO failed"; exit 1; }
echo "g $(uname -r) $(nproc)"
steps() { awk '{print $2}' /proc/sonde_kmod; }
up() { read u _ </proc/uptime; echo "${u%.*}"; }
# one LABEL REP STEPS-A-WRITE WAIT CMD...: one timed run; CMD (NONE: plain) is
# started in the background and waited for (WAIT on its output, bounded:
# 120 s of the guest's clock), then the writes go; CMD is stopped with SIGINT
# and waited for (bounded), its status reported.  Lines: "t LABEL REP NS",
# "m LABEL REP STEPS" (the module's own count), "rc LABEL REP RC",
# "k LABEL LIST-LINE" (the kernel's kprobes, first round), "x LABEL REP WHY".
one() {
	label=$1 rep=$2 batch=$3 wait=$4
	shift 4
	f=$label-$rep
	p=
	if [ "$1" != NONE ]; then
		"$@" >"$f.out" 2>&1 &
		p=$!
		end=$(($(up) + 120))
		until grep -q "$wait" "$f.out" 2>/dev/null; do
			if ! kill -0 $p 2>/dev/null; then
				wait $p; echo "x $label $rep the tool exited (status $?) before it was ready: $(head -3 "$f.out" | tr '\n' ' ')"; return
			fi
			if [ "$(up)" -gt $end ]; then
				kill -9 $p; wait $p; echo "x $label $rep the tool not ready in 120 s: $(head -3 "$f.out" | tr '\n' ' ')"; return
			fi
			sleep 0.01
		done
		kill -0 $p 2>/dev/null || { wait $p; echo "x $label $rep the tool exited (status $?) once ready"; return; }
		[ "$rep" = 1 ] && awk '{$1 = ""; print}' "$LIST" | sort | uniq -c | sed "s/^/k $label /"
	fi
	s0=$(steps)
	r=$(./ktarget "$N" "$batch") || echo "x $label $rep ktarget failed: $r"
	echo "t $label $rep ${r%% *}"
	echo "m $label $rep $(($(steps) - s0))"
	if [ -n "$p" ]; then
		kill -0 $p 2>/dev/null || echo "x $label $rep the tool was gone before it was stopped"
		kill -INT $p 2>/dev/null
		end=$(($(up) + 120))
		while kill -0 $p 2>/dev/null; do
			[ "$(up)" -gt $end ] && { kill -9 $p; echo "x $label $rep still running 120 s after its SIGINT: killed"; break; }
			sleep 0.01
		done
		wait $p
		echo "rc $label $rep $?"
	fi
}
READY="sonde: probes in the kernel"
for rep in $(seq "$REPS"); do
	one plain $rep $N - NONE
	one plainb $rep $B - NONE
	one sfunc $rep $N "$READY" "$SONDE" probe --kernel --format=json -o sfunc-$rep.json -e func:sonde_kmod:sonde_kmod_step
	one sfuncb $rep $B "$READY" "$SONDE" probe --kernel --format=json -o sfuncb-$rep.json -e func:sonde_kmod:sonde_kmod_step
	one sline $rep $N "$READY" "$SONDE" probe --kernel --format=json -o sline-$rep.json -e "line:$KO:sonde_kmod.c:$L"
	one slineb $rep $B "$READY" "$SONDE" probe --kernel --format=json -o slineb-$rep.json -e "line:$KO:sonde_kmod.c:$L"
	if [ -n "$BT" ]; then
		one bk $rep $N sonde-ready "$BT" -B line bk.bt
		one bkr $rep $N sonde-ready "$BT" -B line bkr.bt
		# bpftrace's kprobe at the address sonde placed the line's at
		if [ "$rep" = 1 ]; then
			off=$(grep -o 'sonde_kmod_step+0x[0-9a-f]*' sline-1.json 2>/dev/null | head -1)
			off=${off#sonde_kmod_step+}
			[ -n "$off" ] && printf '%s\n' 'BEGIN { printf("sonde-ready\n"); }' \
				"kprobe:sonde_kmod_step+$((off)) { @c = count(); }" >bkl.bt
			echo "o $off"
		fi
		[ -s bkl.bt ] && one bkl $rep $N sonde-ready "$BT" -B line bkl.bt
	fi
done
rmmod sonde_kmod || echo "x all 0 rmmod failed"
EOF

t0=$(date +%s)
guest_run "$tmp" "$tmp/guest-bench.sh" $((120 + 150 * REPS))
grc=$?
secs=$(($(date +%s) - t0))
python3 - "$tmp" "$N" "$B" "$REPS" "$grc" "$secs" "$GUEST_KVER" "$L" "$BT" "$(nproc)" \
	"$(lscpu | sed -n 's/^Model name: *//p' | head -1)" <<'PY'
import json, os, re, sys
d, N, B, REPS, grc, secs, kver, L, bt, ncpu, model = sys.argv[1:12]
N, B, REPS = int(N), int(B), int(REPS)
rows = [  # label, steps a write, what
    ("plain", N, "plain (one write of N steps)"),
    ("plainb", B, f"plain, writes of {B} steps"),
    ("sfunc", N, "sonde --kernel func (kprobe+kretprobe, counted, timed)"),
    ("sfuncb", B, f"the same, writes of {B} steps (the rings drained)"),
    ("sline", N, f"sonde --kernel line sonde_kmod.c:{L} (kprobe, counted)"),
    ("slineb", B, f"the same, writes of {B} steps (the ring drained)"),
    ("bk", N, "bpftrace kprobe: @c = count()"),
    ("bkr", N, "bpftrace kprobe+kretprobe: @c = count(), hist(duration)"),
    ("bkl", N, "bpftrace kprobe at the line's address: @c = count()"),
]
t, m, rc, notes, klist = {}, {}, {}, [], {}
try:
    out = open(os.path.join(d, "guest.out")).read().splitlines()
except OSError:
    out = []
guest, off = "?", None
for line in out:
    w = line.split()
    if not w: continue
    if w[0] == "t" and len(w) > 3:
        try: t.setdefault(w[1], {})[w[2]] = float(w[3])
        except ValueError: notes.append(f"{w[1]} run {w[2]}: no time ({line})")
    elif w[0] == "m": m[(w[1], w[2])] = int(w[3])
    elif w[0] == "rc": rc[(w[1], w[2])] = w[3]
    elif w[0] == "k": klist.setdefault(w[1], []).append(" ".join(w[2:]))
    elif w[0] == "x": notes.append(f"{w[1]} run {w[2]}: {' '.join(w[3:])}")
    elif w[0] == "g": guest = f"{w[1]}, {w[2]} CPU"
    elif w[0] == "o": off = w[1] if len(w) > 1 else None
    else: notes.append("guest: " + line)
if grc != "0":
    notes.append(f"guest: status {grc}" + (" (no status back in time)" if grc == "124" else "")
                 + "; " + " | ".join(l for l in open(os.path.join(d, "guest.console"), errors="replace").read().splitlines()[-3:]))
# the counts of every run: the module's own, sonde's JSON, bpftrace's @c
extra, checked = {}, 0
for label, _, _ in rows:
    for r in map(str, range(1, REPS + 1)):
        if r not in t.get(label, {}): continue
        checked += 1
        if m.get((label, r)) != N: notes.append(f"{label} run {r}: the module counted {m.get((label, r))} steps, driven {N}")
        if label in ("plain", "plainb"): continue
        if rc.get((label, r)) != "0": notes.append(f"{label} run {r}: the tool's status {rc.get((label, r))}")
        if label.startswith("s"):
            try: q = json.load(open(os.path.join(d, f"{label}-{r}.json")))["probes"][0]
            except Exception as e:
                notes.append(f"{label} run {r}: no JSON ({e})"); continue
            keys = ("hits",) if label.startswith("sline") else ("calls", "returns")
            bad = [f"{k} {q.get(k)}" for k in keys if q.get(k) != N]
            if bad: notes.append(f"{label} run {r}: sonde's " + ", ".join(bad) + f", want {N}")
            x = extra.setdefault(label, [])
            x.append((q.get("untimed"), q.get("lost_samples")))
        else:
            o = open(os.path.join(d, f"{label}-{r}.out"), errors="replace").read()
            c = re.findall(r"^@c: (\d+)", o, re.M)
            if c != [str(N)]: notes.append(f"{label} run {r}: bpftrace's @c {c}, want {N}")
print(f"== {N} calls of sonde_kmod_step (tests/kmod) inside the kernel per write to /proc/sonde_kmod, timed on the guest's clock;"
      f" fastest of {REPS}; guest {guest} under QEMU TCG (emulated: the ratios are the figure); host {model}, {ncpu} CPUs; {secs} s")
best = {k: min(v.values()) for k, v in t.items() if v}
above = {}
for label, steps, what in rows:
    if label == "bkl" and off: what = f"bpftrace kprobe:sonde_kmod_step+{int(off, 16)}: @c = count()"
    if label.startswith("b") and not bt:
        print(f"{what:<60} no figure: bpftrace not installed"); continue
    if label == "bkl" and not off:
        print(f"{what:<60} no figure: no address from sonde's line probe"); continue
    if label not in best:
        print(f"{what:<60} no figure (see the notes)"); continue
    v = best[label]
    base = best.get("plainb" if steps == B and label != "plain" else "plain")
    if label in ("plain", "plainb") or base is None:
        print(f"{what:<60} {v:9.1f} ns per hit"); continue
    above[label] = v - base
    print(f"{what:<60} {v:9.1f} ns per hit ({v - base:.1f} above plain)")
# the ratios of the costs above plain: sonde's rows against bpftrace's
# doing the same (entry and return; a kprobe at the same address)
names = {"sfunc": "sonde func", "sfuncb": f"sonde func, writes of {B}", "sline": "sonde line", "slineb": f"sonde line, writes of {B}",
         "bk": "bpftrace kprobe", "bkr": "bpftrace kprobe+kretprobe", "bkl": "bpftrace kprobe at the line"}
r = [f"{names[a]} / {names[b]} {above[a] / above[b]:.2f}" for a, b in
     (("sfunc", "bkr"), ("sfuncb", "bkr"), ("sline", "bkl"), ("slineb", "bkl"), ("sline", "bk"), ("bkr", "bk"))
     if a in above and above.get(b, 0) > 0]
print("ratios, above plain: " + ("; ".join(r) if r else "none"))
for label, x in extra.items():
    if label.startswith("sline"):
        print(f"  {names[label]}: samples lost (its sampler, for the hits by process) per run: " + ", ".join(str(l) for _, l in x))
    else:
        print(f"  {names[label]}: calls not timed / samples lost per run: " + ", ".join(f"{u}/{l}" for u, l in x))
if not notes:
    print(f"  counts: every run's sonde calls, returns, hits and bpftrace's @c = {N} (the module's own count too): {checked} runs")
for label in klist:
    print(f"  {names.get(label, label)}: the kernel's kprobes ({'; '.join(klist[label])})")
for n in notes: print("note: " + n)
PY

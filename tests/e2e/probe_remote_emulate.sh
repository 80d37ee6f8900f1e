#!/usr/bin/env bash
# probe_remote_emulate.sh — the displaced instructions that sonde executes
# itself at a remote breakpoint (src/arch/*/remote_emulate.c) instead of
# single-stepping them.  A `line:FUNC+OFF` probe on every instruction of
# step() and account() of tests/progs/remote_counts.c (objdump lists them), built with -O1 and -O2, under qemu-aarch64 -g, qemu-mips -g and
# gdbserver (x86-64): every kind of instruction the compiler put there is
# emulated or stepped, and
# - the program's output (its own sums over all its work: any register or
#   memory the emulator got wrong changes them, or crashes it) is unchanged;
# - each function's first instruction counts the function's calls, as the
#   program prints them;
# - every address counts what the same session counts with every instruction
#   single-stepped by the stub (SONDE_REMOTE_EMULATE=0: the stub's CPU, not
#   sonde's emulator, executes them);
# - most hits were emulated on aarch64 and MIPS, some on x86-64 (the JSON's
#   emulated_hits / stepped_hits).
# A missing toolchain or stub is a skip.
source "$ROOT/tests/lib.sh"

src="$PROGS/remote_counts.c"
N=60
source "$ROOT/tests/remote_lib.sh"

# specs OBJDUMP PROG: "-e line:F+OFF" for every instruction of step() and
# account() (sonde takes 64 probes at most: the first 64).
specs() {
	"${1%objdump}nm" -S "$2" > "nm.$2"
	"$1" -d --no-show-raw-insn "$2" | python3 -c '
import re, sys
size = {f[3]: int(f[1], 16) for f in (l.split() for l in open(sys.argv[1])) if len(f) == 4}
fn = start = None
for l in sys.stdin:
    m = re.match(r"([0-9a-f]+) <(\w+)>:", l)
    if m:
        fn = m.group(2) if m.group(2) in ("step", "account") else None
        start = int(m.group(1), 16)
        continue
    m = re.match(r"\s+([0-9a-f]+):\s+(\S+)", l)
    if fn and m and int(m.group(1), 16) - start < size[fn]:  # not the padding after it
        print("-e line:%s+0x%x" % (fn, int(m.group(1), 16) - start))
' "nm.$2" | head -64
}

# session NAME MODE STUB...: sonde on a fresh stub; MODE emulate or step.
session() {
	local name=$1 mode=$2; shift 2
	local port; port=$(free_port)
	"$@" "$port" > "stub.$name.$mode" 2>&1 &
	local pid=$!; stubs+=("$pid")
	wait_listen "$port" || { notok "$name: stub listens" "$*"; return 1; }
	local env=()
	[ "$mode" = step ] && env=(SONDE_REMOTE_EMULATE=0)
	env "${env[@]}" SONDE_REMOTE_TRACEPOINTS=0 timeout 300 "$SONDE" probe --target "tcp:127.0.0.1:$port" \
		--exe "prog.$name" $(cat "specs.$name") --format=json -o "out.$name.$mode.json" 2> "err.$name.$mode"
	local rc=$?
	[ "$rc" -eq 0 ] || kill "$pid" 2>/dev/null
	wait "$pid"
	check "$name ($mode): sonde exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { head -5 "err.$name.$mode"; return 1; }
	check "$name ($mode): program output unchanged" cmp -s "plain.$name" "stub.$name.$mode"
}

qemu_stub() { local q=$1 root=$2 prog=$3; shift 3; "$q" -g "$1" -L "$root" "./$prog" $N; }
gdbserver_stub() { gdbserver --once "127.0.0.1:$2" "./$1" $N 2> "gdbserver.$1.err"; }

# one NAME OBJDUMP RUNNER...: build done; plain run, the two sessions, the checks.
one() {
	local name=$1 objdump=$2; shift 2
	specs "$objdump" "prog.$name" > "specs.$name"
	local n; n=$(wc -l < "specs.$name")
	[ "$n" -gt 20 ] || { notok "$name: instructions listed by objdump" "$n"; return; }
	session "$name" emulate "$@" || return
	session "$name" step "$@" || return
	python3 - "$name" "plain.$name" "out.$name.emulate.json" "out.$name.step.json" <<'EOF'
import json, sys
name, plain, em, st = sys.argv[1:]
w = open(plain).read().split()
c = {w[i]: int(w[i + 1]) for i in range(0, len(w), 2)}
e, s = json.load(open(em)), json.load(open(st))
pe = {p["spec"]: p["hits"] for p in e["probes"]}
ps = {p["spec"]: p["hits"] for p in s["probes"]}
def say(ok, what, detail=""):
    print(f"ok - {name}: {what}" if ok else f"not ok - {name}: {what}: {detail}")
say(pe["line:step+0x0"] == c["step_calls"] and pe["line:account+0x0"] == c["line_runs"],
    f"entries count the program's calls (step {c['step_calls']}, account {c['line_runs']})",
    (pe["line:step+0x0"], pe["line:account+0x0"]))
diff = {k: (pe[k], ps.get(k)) for k in pe if pe[k] != ps.get(k)}
say(not diff and len(pe) == len(ps), f"all {len(pe)} addresses count what single-stepping counts", diff)
t = e["target"]
# x86-64 uses the local engine's emulator (emulate.c: moves, lea, push, pop,
# jumps, calls, returns), which leaves arithmetic to the step.
x86 = name.startswith("x86")
say(t["emulated_hits"] > 0 and (x86 or t["emulated_hits"] >= 2 * t["stepped_hits"]),
    f"{'some' if x86 else 'most'} hits emulated ({t['emulated_hits']} emulated, {t['stepped_hits']} stepped)", t)
say(s["target"]["emulated_hits"] == 0, "SONDE_REMOTE_EMULATE=0 steps every hit", s["target"])
EOF
}

for opt in O1 O2; do
	if command -v qemu-aarch64 >/dev/null && command -v aarch64-linux-gnu-gcc >/dev/null; then
		name=aarch64-$opt
		aarch64-linux-gnu-gcc -g -$opt -I"$PROGS" -o "prog.$name" "$src" &&
			qemu-aarch64 -L /usr/aarch64-linux-gnu "./prog.$name" $N > "plain.$name" &&
			one "$name" aarch64-linux-gnu-objdump qemu_stub qemu-aarch64 /usr/aarch64-linux-gnu "prog.$name"
	else
		skip "aarch64-$opt: emulated instructions" "qemu-aarch64 or aarch64-linux-gnu-gcc missing"
	fi
	if command -v qemu-mips >/dev/null && command -v mips-linux-gnu-gcc >/dev/null; then
		name=mips-$opt
		mips-linux-gnu-gcc -g -$opt -I"$PROGS" -o "prog.$name" "$src" &&
			qemu-mips -L /usr/mips-linux-gnu "./prog.$name" $N > "plain.$name" &&
			one "$name" mips-linux-gnu-objdump qemu_stub qemu-mips /usr/mips-linux-gnu "prog.$name"
	else
		skip "mips-$opt: emulated instructions" "qemu-mips or mips-linux-gnu-gcc missing"
	fi
	if command -v gdbserver >/dev/null; then
		name=x86-$opt
		gcc -g -$opt -I"$PROGS" -o "prog.$name" "$src" && "./prog.$name" $N > "plain.$name" &&
			one "$name" objdump gdbserver_stub "prog.$name"
	else
		skip "x86-$opt: emulated instructions" "gdbserver missing"
	fi
done

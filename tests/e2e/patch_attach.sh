#!/usr/bin/env bash
# patch_attach.sh — `sonde record -p PID` and `record --trace -p PID` on a
# running program never built for sonde (tests/progs/attach_profile.c built
# with plain gcc -O2, 2 worker threads; docs/INSTRUMENTATION.md, "Programs
# never built for sonde").  The program waits on a FIFO before its work and
# counts its own calls; sonde attaches while it waits and patches its
# functions while it runs; the counts of phase 1 are the program's own, the
# output and exit status an unattached run's.  Then 10 rounds of SIGKILL of
# sonde in the middle of the work: the program finishes with its normal
# output and status, and its code is byte for byte its file's again.  Needs
# ptrace of a non-child: root, or kernel.yama.ptrace_scope 0.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
need_ptrace "attach without a rebuild"
gcc -O2 -g -pthread -I"$PROGS" -o ap "$PROGS/attach_profile.c" || { notok build "gcc"; exit 0; }
reference_run 3

# counts NAME: phase 1's counts as the program printed them equal sonde's
counts() {
	"$SONDE" report -i "$1.data" --format=json > "$1.json" 2> "$1.rep.err"
	python3 - "$1" <<'PY'
import json, re, sys
name = sys.argv[1]
own = {}
for line in open(name + ".out"):
    m = re.match(r"phase 1: leaf (\d+) middle (\d+) rec (\d+) worker (\d+) phase (\d+)", line)
    if m:
        own = dict(zip(["leaf", "middle", "rec", "worker", "phase"], map(int, m.groups())))
d = json.load(open(name + ".json"))
f = {x["name"]: x["calls"] for x in d["functions"]}
bad = {k: (n, f.get(k)) for k, n in own.items() if f.get(k) != n}
print(("ok" if own and not bad and d["lost_events"] == 0 else "not ok") +
      f" - {name}: phase 1's calls equal the program's own counts {own}, nothing lost" + ("" if not bad else f": {bad}"))
PY
}

# text_restored NAME: the program's code equals its file's (nothing sonde wrote stays)
text_restored() {
	python3 - "$pid" "$PWD/ap" <<'PY'
import sys
pid, exe = int(sys.argv[1]), sys.argv[2]
ok = True
for l in open(f"/proc/{pid}/maps"):
    w = l.split()
    if len(w) > 5 and w[5] == exe and "x" in w[1]:
        lo, hi = (int(x, 16) for x in w[0].split("-"))
        with open(f"/proc/{pid}/mem", "rb") as m, open(exe, "rb") as f:
            m.seek(lo); f.seek(int(w[2], 16))
            ok = ok and m.read(hi - lo) == f.read(hi - lo)
sys.exit(0 if ok else 1)
PY
}

for mode in profile trace; do
	opt=()
	[ $mode = trace ] && opt=(--trace)
	start "att$mode"
	record_attached "att$mode" "${opt[@]}" || notok "$mode: attach" "sonde did not start: $(cat att$mode.err)"
	check "$mode: sonde says it patched the program's functions" grep -q "recording process $pid (1 instrumented module)" "att$mode.err"
	echo go >&3
	wait_for "att$mode.out" "^phase 1"
	kill -INT $sp
	wait $sp
	check "$mode: sonde ends on SIGINT with status 0" test $? -eq 0
	check "$mode: the agent has ended" agent_ended "$pid"
	check "$mode: the program's code is its file's again" text_restored
	finish
	check "$mode: output and exit status equal the unattached run's" cmp -s ref.out "att$mode.out"
	counts "att$mode"
done
"$SONDE" info -i attprofile.data --format=json > info.json
check "sonde info: the module is patched without a rebuild" \
	jq_py info.json "assert [m['how'] for m in d['modules']] == ['patched'], d['modules']"

# ---- SIGKILL of sonde while attached, in the middle of the work ----
run_plain kref 3000000
for round in $(seq 10); do
	start "k$round" 3000000
	record_attached "k$round" || true
	echo go >&3
	sleep 0.$((round % 5 + 1))
	kill -KILL $sp
	wait $sp 2>/dev/null
	wait_for "k$round.out" "^phase 1" || true
	ended=ok; agent_ended "$pid" || ended=no
	restored=ok; text_restored || restored=no
	finish
	check "round $round: SIGKILL of sonde mid-work: the agent ended ($ended), the code is the file's ($restored), same output and status" \
		sh -c "[ $ended = ok ] && [ $restored = ok ] && cmp -s kref.out k$round.out"
done

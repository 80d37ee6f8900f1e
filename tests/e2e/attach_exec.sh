#!/usr/bin/env bash
# attach_exec.sh — `sonde record -p` follows the execs of the tree it
# attached to (issue 40; docs/ATTACH.md "An exec while recording"): the
# attached program (tests/progs/attach_exec.c, plain gcc) runs Debian's gzip
# through a fork child's shell, posix_spawnp and a vfork child's execle with
# an environment of PATH alone, then execs itself; each new image starts the
# agent in its constructor and is patched as planned by sonde.  Expected
# values: tick's calls as the program counts them (1000 before its exec, 777
# after), gzip's every call count four times a recording of gzip alone on the
# same input (four runs of one computation), the output and exit status of
# a run without sonde (which includes the number of SONDE_ and LD_PRELOAD
# entries the tree's programs see: 0).  sonde ends the attached process's
# new image as the first (its code is its file's again), and the tree runs
# on unharmed when sonde is SIGKILLed in the middle.  A static program
# exec'd in the tree is a process without functions, with the reason.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
need_ptrace "record -p following execs"
command -v gzip >/dev/null || { notok "gzip installed" "no gzip (apt-get install gzip)"; exit 1; }
gcc -O2 -g -o ae "$PROGS/attach_exec.c" || { notok build "gcc"; exit 1; }
seq 1 100000 > F
printf '#include <stdio.h>\nint main(void) { puts("static ran"); return 3; }\n' > st.c
gcc -O2 -static st.c -o st || { notok build "gcc -static failed (libc6-dev's libc.a)"; exit 1; }
# start NAME: ./ae NAME.fifo NAME.pid F in the background (attach_lib's start takes no input file)
start_ae() {
	rm -f "$1.fifo" "$1.pid"
	mkfifo "$1.fifo"
	("./${AE:-ae}" "$1.fifo" "$1.pid" F > "$1.out" 2> "$1.perr"; echo "status $?" >> "$1.out") &
	runner=$!
	started "$1"
}
start_ae ref
echo go >&3
wait_for ref.out "^phase 2" || notok "reference run" "no phase 2 line: $(cat ref.out)"
finish
check "reference run: ends with status 0, and its tree sees no SONDE_ or LD_PRELOAD entry" \
	grep -qx "status 0" ref.out
"$SONDE" record -o g.data -- gzip -c F > /dev/null 2> g.err || notok "gzip recorded alone" "$(cat g.err)"
"$SONDE" report -i g.data --format=json > g.json

# text_restored: the attached process's code (its new image's) equals its file's
text_restored() {
	python3 - "$pid" "$PWD/${AE:-ae}" <<'PY'
import sys
pid, exe = int(sys.argv[1]), sys.argv[2]
ok, seen = True, False
for l in open(f"/proc/{pid}/maps"):
    w = l.split()
    if len(w) > 5 and w[5] == exe and "x" in w[1]:
        seen = True
        lo, hi = (int(x, 16) for x in w[0].split("-"))
        with open(f"/proc/{pid}/mem", "rb") as m, open(exe, "rb") as f:
            m.seek(lo); f.seek(int(w[2], 16))
            ok = ok and m.read(hi - lo) == f.read(hi - lo)
sys.exit(0 if ok and seen else 1)
PY
}

# attached NAME [OPTIONS...]: the whole run under `sonde record OPTIONS -p`,
# ended by SIGINT once the new image has printed its line
attached() {
	local name=$1
	shift
	start_ae "$name"
	record_attached "$name" "$@" || notok "$name: attach" "sonde did not start: $(cat "$name.err")"
	echo go >&3
	wait_for "$name.out" "^phase 2" || notok "$name: phase 2" "not reached: $(cat "$name.out")"
	kill -INT $sp
	wait $sp
	check "$name: sonde ends on SIGINT with status 0" test $? -eq 0
	check "$name: sonde says nothing but its two lines (no exec'd-since warning)" \
		test "$(grep -c . "$name.err")" -eq 2
	check "$name: the agent has ended in the attached process's new image" agent_ended "$pid"
	# (a sonde-cc build keeps the function numbers written into the pads
	# before its functions, never executed, also without an exec: plain only)
	[ -z "${AE:-}" ] && check "$name: the new image's code is its file's again" text_restored
	finish
	check "$name: the tree's output and exit status equal the unattached run's" cmp -s ref.out "$name.out"
	"$SONDE" report -i "$name.data" --format=json > "$name.json"
	"$SONDE" info -i "$name.data" --format=json > "$name.info.json"
}

attached all
attached only --exec gzip
python3 - "$(command -v gzip)" "$PWD/ae" <<'PY'
import json, os, re, sys
def say(good, name, why=""):
    print(("ok - " if good else "not ok - ") + name + ("" if good else ": " + why))
gz, ae = os.path.realpath(sys.argv[1]), sys.argv[2]
own = sum(int(m) for m in re.findall(r"tick (\d+)", open("ref.out").read()))
g = {x["address"]: x["calls"] for x in json.load(open("g.json"))["functions"] if os.path.realpath(x["module"]) == gz}
for name in ("all", "only"):
    d = json.load(open(name + ".json"))
    f = d["functions"]
    t = sum(x["calls"] for x in f if x["name"] == "tick")
    say(own == 1777 and t == own, f"{name}: tick called {t} times in both images, as the program counts ({own})")
    a = {x["address"]: x["calls"] for x in f if os.path.realpath(x["module"]) == gz}
    bad = {k: (a.get(k), 4 * g.get(k, 0)) for k in set(a) | set(g) if a.get(k) != 4 * g.get(k, 0)}
    say(len(g) > 20 and not bad, f"{name}: gzip run four ways in the tree (a shell's exec, posix_spawnp, "
        f"vfork and execle with PATH alone, after the attached process's exec): its {len(g)} functions "
        f"called four times as often as in gzip recorded alone ({sum(g.values())} calls)", str(sorted(bad.items())[:6]))
    say(d["lost_events"] == 0, f"{name}: nothing lost", str(d["lost_events"]))
    info = json.load(open(name + ".info.json"))
    pat = sorted({os.path.realpath(m["path"]) for m in info["modules"] if m["how"] == "patched"})
    want = sorted({gz, ae} | (set() if name == "only" else {os.path.realpath("/bin/sh")}))
    if name == "all":
        say(set(want) <= set(pat), f"all: the shell, gzip and the attached program patched", str(pat))
    else:
        say(pat == want, "--exec gzip -p: gzip and the attached program patched, not the shell", str(pat))
    procs = info["processes"]
    n = sum(1 for p in procs if os.path.realpath(p.get("exe", p.get("program", ""))) == gz)
    say(n == 4, f"{name}: sonde info lists gzip's 4 processes", str(n))
    st = [p.get("no_functions") for p in procs if p["exe"].endswith("/st")]
    say(st == ["statically linked"], f"{name}: the static program exec'd in the tree: a process without "
        "functions, sonde info says why", str(st))
PY

# ---- a sonde-cc build under --no-patch: its exec'd image's sleds, registered by
# its own constructor after the agent started there, switched on and back off ----
"$SONDE_CC_BIN" -O2 -g -o aecc "$PROGS/attach_exec.c" || { notok build "sonde-cc"; exit 1; }
AE=aecc attached cc --no-patch
python3 - <<'PY'
import json
f = {x["name"]: x["calls"] for x in json.load(open("cc.json"))["functions"]}
ok = f.get("tick") == 1777
print(("ok" if ok else "not ok") + " - cc --no-patch: the sonde-cc build's tick called 1777 times in both images, "
      "as the program counts" + ("" if ok else f": {f.get('tick')}"))
PY

# ---- SIGKILL of sonde while the tree execs ----
for round in 1 2 3; do
	start_ae "k$round"
	record_attached "k$round" || notok "k$round: attach" "sonde did not start: $(cat "k$round.err")"
	echo go >&3
	wait_for "k$round.out" "^phase 1" || true
	kill -KILL $sp
	wait $sp 2>/dev/null
	wait_for "k$round.out" "^phase 2" || true
	finish
	check "SIGKILL of sonde $round: the tree's output and exit status unchanged" cmp -s ref.out "k$round.out"
done

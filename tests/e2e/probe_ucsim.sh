#!/usr/bin/env bash
# probe_ucsim.sh — sonde probe --target ucsim:HOST:PORT on 8051 firmware
# (issue 43): tests/progs/mcs51_fw.c built with Debian's sdcc --debug in the
# small and the large memory model, run by ucsim (s51 -Z PORT, its command
# console).  The firmware counts its own calls and values into xdata and
# stops itself (ucsim's simulator interface); the test reads those through
# the console with its own client (tests/tools/ucsim_console.py), from a
# run without sonde and from the run under sonde: func (calls, returns,
# callers; the timer 0 interrupt handler's call of tick), line and var
# (char, int, long, float in data, idata and xdata) must give exactly the
# firmware's figures, the firmware's figures must be the same with and
# without sonde, no breakpoint may be left in the simulator and code memory
# must equal the .ihx.  assert (the firmware's odd count as failures),
# plugin (tests/progs/probe_plugin_mcs51.c: gregs, read, pre and post) and
# -e @NAME from --library, in both models.  Line probes counted in the chip (--target-ram:
# an LCALL into a stub) give the same counts with the bytes restored.  Then
# --duration and Ctrl-C end a session while the firmware runs: the
# breakpoints and patched bytes out, and the firmware, let run on, ends with the same
# figures.  (Each console command waits for ucsim's ~100 ms poll: the
# firmware is small, 8 calls of work.)
# test-timeout: 240
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/remote_lib.sh"

CON="$ROOT/tests/tools/ucsim_console.py"
src="$PROGS/mcs51_fw.c"
need_ucsim "8051 probes (probe --target ucsim:)"
ODD=$(grep -n "own.odd++;" "$src" | cut -d: -f1)
LSUM=$(grep -n "own.lsum += l_xdata;" "$src" | cut -d: -f1)
IFODD=$(grep -n "if (x & 1)" "$src" | cut -d: -f1)
IFR=$(grep -n "if (r > 20)" "$src" | cut -d: -f1)


for model in small large; do
	mkdir -p "$model"
	if ! sdcc --debug -mmcs51 "--model-$model" -o "$model/" "$src" >"$model/build.err" 2>&1; then
		notok "$model: sdcc builds the firmware" "$(head -3 "$model/build.err")"
		continue
	fi
	fw="$model/mcs51_fw.ihx"

	# the firmware's figures without sonde
	ucsim_start "$fw"
	python3 "$CON" "$port" run && python3 "$CON" "$port" own "$model/plain.json"
	check "$model: the firmware runs to its end without sonde" test -s "$model/plain.json"
	ucsim_stop

	ucsim_start "$fw"
	timeout 120 "$SONDE" probe --target "ucsim:127.0.0.1:$port" --exe "$fw" --format=json \
		-e func:work -e func:tick -e "line:mcs51_fw.c:$ODD" \
		-e "var:mcs51_fw.c:$LSUM:c_data" -e "var:mcs51_fw.c:$LSUM:i_idata" -e "var:mcs51_fw.c:$LSUM:l_xdata" \
		-e "var:mcs51_fw.c:$LSUM:f_data" -e "var:mcs51_fw.c:$LSUM:l_idata" -e "var:mcs51_fw.c:$LSUM:f_xdata" \
		$([ "$model" = small ] && echo "-e branch:mcs51_fw.c:$IFODD -e branch:mcs51_fw.c:$IFR -e time:work -e time:tick") \
		>"$model/out.json" 2>"$model/err"
	rc=$?
	check "$model: sonde exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || sed 's/^/# /' "$model/err"
	python3 "$CON" "$port" own "$model/probed.json"
	nbp=$(python3 "$CON" "$port" breakpoints)
	check "$model: no breakpoint left in the simulator" test "$nbp" = 0
	check "$model: code memory equals the .ihx" python3 "$CON" "$port" code "$fw"
	ucsim_stop
	python3 - "$model" "$model/plain.json" "$model/probed.json" "$model/out.json" <<'EOF' || notok "$model: the checks of the output ran" "python failed"
import json, sys
model, plain, probed, out = sys.argv[1:5]
c = json.load(open(plain))
d = json.load(open(out))
p = {q["id"]: q for q in d["probes"]}
n = c["work_calls"]
checks = [
    ("the firmware's own figures are the same with and without sonde", json.load(open(probed)) == c, (c, probed)),
    ("the firmware finished (done = 0x5a5a) and stopped itself", c["done"] == 0x5A5A and d["target"].get("exit_status") == 0, d["target"]),
    (f"func:work {n} calls and returns, called from main",
     (p[1]["calls"], p[1]["returns"], p[1]["callers"]) == (n, n, [{"name": "main", "calls": n}]), p[1]),
    (f"func:work timed by the cycle counter", 0 < p[1]["min_ns"] <= p[1]["max_ns"], p[1]),
    (f"func:tick (from timer 0's handler) {c['tick_calls']} calls and returns, called from timer0_isr",
     c["tick_calls"] > 0 and (p[2]["calls"], p[2]["returns"], p[2]["callers"]) ==
     (c["tick_calls"], c["tick_calls"], [{"name": "timer0_isr", "calls": c["tick_calls"]}]), p[2]),
    (f"line own.odd++ {c['odd']} hits", p[3]["hits"] == c["odd"], p[3]),
    (f"var c_data (char, data) last {c['cfinal']}", (p[4]["count"], p[4]["last"], p[4]["unavailable"]) == (n, c["cfinal"], 0), p[4]),
    (f"var i_idata (int, idata) sums to ifinal - 7 x calls = {c['ifinal'] - 7 * n}",
     (p[5]["count"], p[5]["sum"]) == (n, c["ifinal"] - 7 * n), p[5]),
    (f"var l_xdata (long, xdata) sums to lsum {c['lsum']}", (p[6]["count"], p[6]["sum"]) == (n, c["lsum"]), p[6]),
    (f"var f_data (float, data) sums to fsum {c['fsum']}",
     p[7]["count"] == n and p[7]["type"] == "float" and abs(p[7]["sum"] - c["fsum"]) < 1e-3, p[7]),
    (f"var l_idata (long, idata) ends at ifinal / 3 = {c['ifinal'] // 3}", (p[8]["count"], p[8]["last"]) == (n, c["ifinal"] // 3), p[8]),
    (f"var f_xdata (float, xdata) ends at calls / 4 = {n / 4}", p[9]["count"] == n and abs(p[9]["last"] - n / 4) < 1e-6, p[9]),
]
if model == "small":   # branch and time: the small model's run has them
  checks += [
    (f"branch if (x & 1): taken / not taken are {c['odd']} and {n - c['odd']} (in some order)",
     p[10]["hits"] == n and sorted((p[10]["taken"], p[10]["not_taken"])) == sorted((c["odd"], n - c["odd"])), p[10]),
    (f"branch if (r > 20): taken / not taken are {c['taken']} and {n - c['taken']} (in some order)",
     c["taken"] not in (0, n) and p[11]["hits"] == n and sorted((p[11]["taken"], p[11]["not_taken"])) == sorted((c["taken"], n - c["taken"])), p[11]),
    (f"time:work {n} hits, time:tick {c['tick_calls']} with intervals from work in simulated time",
     (p[12]["hits"], p[13]["hits"], p[13]["interval_from"]) == (n, c["tick_calls"], 12)
     and p[13]["intervals"] == c["tick_calls"] and 0 < p[13]["min_ns"] <= p[13]["max_ns"], p[13]),
]
for what, good, detail in checks:
    print(("ok - " if good else "not ok - ") + model + ": " + what + ("" if good else ": " + json.dumps(detail)[:600]))
EOF
done

# assert, plugin and the probe library, both memory models: an assertion
# false on odd x fails as often as the firmware counted odd calls, one
# always true passes every call, one on a struct (not read) is unavailable
# at every hit; the plugin's pre handler (tests/progs/probe_plugin_mcs51.c)
# reads x from DPL/DPH in gregs, c_data (data) and own.work_calls (xdata)
# through read, its post handler runs after the `step` of work's first
# instruction, and a line probe on the next instruction still counts every
# call (the step ends on its breakpoint: the run would pass over it); a
# plugin probe on the firmware's last instruction (the write that stops
# the simulation) has its post called and the session ends there, the
# program's end; one assertion comes from --library as -e @NAME.
cc -shared -fPIC -Wall -Wextra -Werror -I"$ROOT/include" -o plug51.so "$PROGS/probe_plugin_mcs51.c" \
	|| notok "the 8051 plugin builds with cc -shared -fPIC -Iinclude" "cc failed"
for model in small large; do
	fw="$model/mcs51_fw.ihx"
	[ -s "$model/plain.json" ] && [ -f plug51.so ] || continue
	# c_data's address (data: read's tag 0x40); the length of work's first instruction (the .rst)
	cdata=$(sed -n 's/^L:G\$c_data\$0_0\$0:\([0-9A-Fa-f]*\)$/\1/p' "$model/mcs51_fw.cdb")
	first=$(awk '/ _work:$/ { getline; n = 0; for (i = 2; i <= NF && $i !~ /^\[/; i++) n++; print n; exit }' \
		"$model/mcs51_fw.rst")
	# the firmware's last instruction: movx @dptr,a of sif = 's' (the .rst)
	last=$(awk '/mcs51_fw.c:[0-9]+: sif = .s.;/ { f = 1; next } f && $2 == "F0" { print $1; exit }' "$model/mcs51_fw.rst")
	printf '# probes of the 8051 firmware\nodd_x = assert:mcs51_fw.c:%s:x %% 2 == 0\n' "$LSUM" >"$model/lib.txt"
	ucsim_start "$fw"
	timeout 120 "$SONDE" probe --target "ucsim:127.0.0.1:$port" --exe "$fw" --format=json \
		--library "$model/lib.txt" --plugin ./plug51.so \
		-e @odd_x -e "assert:mcs51_fw.c:$LSUM:i_idata == 3 * c_data - 10 && l_xdata == 100000 * x" \
		-e "assert:mcs51_fw.c:$LSUM:own > 0" -e "plugin:work:$(printf '0x40%04x' "0x$cdata"),0x7f00" -e "line:work+$first" \
		-e "plugin:0x$last:$(printf '0x40%04x' "0x$cdata"),0x7f00" >"$model/ap.json" 2>"$model/ap.err"
	rc=$?
	check "$model: assert/plugin: sonde exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || sed 's/^/# /' "$model/ap.err"
	python3 "$CON" "$port" own "$model/ap.own.json"
	nbp=$(python3 "$CON" "$port" breakpoints)
	check "$model: assert/plugin: no breakpoint left in the simulator" test "$nbp" = 0
	timeout 20 "$SONDE" probe --target "ucsim:127.0.0.1:$port" --exe "$fw" -e "assert:mcs51_fw.c:$LSUM:nosuch == 1" \
		>"$model/bad4.out" 2>"$model/bad4.err"
	rc=$?
	check "$model: an assert on a variable the .cdb does not have: exit 2 with a clear error" \
		sh -c "[ $rc -eq 2 ] && grep -q \"no variable 'nosuch'\" $model/bad4.err"
	ucsim_stop
	python3 - "$model" "$model/plain.json" "$model/ap.own.json" "$model/ap.json" "$first" "$fw" <<'EOF2' || notok "$model: assert/plugin: the checks of the output ran" "python failed"
import json, sys
model, plain, own, out, first, fw = sys.argv[1:7]
first = int(first)
c = json.load(open(plain))
d = json.load(open(out))
p = {q["id"]: q for q in d["probes"]}
n, odd = c["work_calls"], c["odd"]
r = p[4].get("report", "").split()
r = {r[i]: r[i + 1] for i in range(0, len(r) - 1, 2)}
num = lambda k: int(r.get(k, "-1"))
ihx = {}
for ln in open(fw):
    ln = ln.strip()
    if ln.startswith(":") and ln[7:9] == "00":
        for i in range(int(ln[1:3], 16)):
            ihx[int(ln[3:7], 16) + i] = int(ln[9 + 2 * i:11 + 2 * i], 16)
work = int(open(fw.replace(".ihx", ".cdb")).read().split("L:G$work$0$0:")[1].split()[0], 16)
checks = [
    ("the firmware's own figures are the same with and without sonde", json.load(open(own)) == c, own),
    ("the firmware stopped itself", d["target"].get("exit_status") == 0, d["target"]),
    (f"assert x % 2 == 0 (-e @odd_x from --library): {n} evaluated, {odd} failures (the firmware's odd count), x odd in each first failure",
     p[1]["spec"].startswith("assert:") and (p[1]["evaluated"], p[1]["failures"], p[1]["passes"], p[1]["unavailable"]) == (n, odd, n - odd, 0)
     and odd > 0 and len(p[1]["first_failures"]) == min(odd, 5)
     and all(f.startswith("tid 0: x=") and int(f.split("=")[1]) % 2 == 1 for f in p[1]["first_failures"]), p[1]),
    (f"assert always true (idata, data and xdata globals, the local x): {n} evaluated, 0 failures",
     (p[2]["evaluated"], p[2]["failures"], p[2]["unavailable"]) == (n, 0, 0) and "i_idata (idata)" in p[2]["where"], p[2]),
    (f"assert on a struct (not read): {n} unavailable", (p[3]["evaluated"], p[3]["unavailable"]) == (0, n)
     and "own" in p[3].get("unavailable_why", ""), p[3]),
    (f"plugin:work: {n} hits, pre and post {n} times each, arch mcs51, 15 registers of 1 byte",
     (p[4]["hits"], num("pre"), num("post"), r.get("arch"), num("nregs"), num("reg_size")) == (n, n, n, "mcs51", 15, 1), p[4]),
    (f"plugin: x from DPL/DPH sums to ifinal / 3 = {c['ifinal'] // 3}", num("sum_x") == c["ifinal"] // 3, p[4]),
    (f"plugin: c_data (data) and own.work_calls (xdata) read through read are the calls so far at each hit",
     (num("cdata_ok"), num("calls_ok"), num("read_fail")) == (n, n, 0), p[4]),
    ("plugin: the pc is the probed address at pre, R0..R7 those of the bank PSW selects",
     (num("pc_ok"), num("regs_ok")) == (n, n), p[4]),
    (f"plugin: post after the first instruction ({first} bytes); init read its opcode 0x{ihx[work]:02x} from code; bad addresses refused",
     (num("post_off"), num("op"), num("bad_ok")) == (first, ihx[work], 4), p[4]),
    (f"line:work+{first} (where the post's step stops) still counts {n} hits", p[5]["hits"] == n, p[5]),
    ("plugin on the write that stops the firmware: pre and post once, the session's end is the program's",
     p[6]["hits"] == 1 and " pre 1 post 1 " in " " + p[6].get("report", "") + " " and d["target"].get("exit_status") == 0, p[6]),
]
for what, good, detail in checks:
    print(("ok - " if good else "not ok - ") + model + ": assert/plugin: " + what + ("" if good else ": " + json.dumps(detail)[:600]))
EOF2
done

# Line probes counted in the chip (--target-ram: an LCALL to a stub that
# counts in xdata): the firmware's counts, no stop per hit, the sites, the
# stubs and the counters as they were at the end.  The stubs take cycles
# (the timer's interrupts may come elsewhere): tick is checked against the
# firmware's own count of that run.
fw=small/mcs51_fw.ihx
RAM=0x4000:0x400
TICKL=$(grep -n "own.tick_calls++;" "$src" | cut -d: -f1)
CDATA=$(grep -n "c_data = (unsigned char)" "$src" | cut -d: -f1)
if [ -s small/plain.json ]; then
	ucsim_start "$fw"
	before=$(python3 "$CON" "$port" mem rom 0x4000 0x43ff; python3 "$CON" "$port" mem xram 0x4000 0x43ff)
	timeout 60 "$SONDE" probe --target "ucsim:127.0.0.1:$port" --exe "$fw" --format=json --target-ram "$RAM" \
		-e "line:mcs51_fw.c:$ODD" -e "line:mcs51_fw.c:$TICKL" -e "line:mcs51_fw.c:$CDATA" >cnt.json 2>cnt.err
	rc=$?
	check "counted: sonde exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || sed 's/^/# /' cnt.err
	python3 "$CON" "$port" own cnt.own.json
	check "counted: code memory equals the .ihx" python3 "$CON" "$port" code "$fw"
	after=$(python3 "$CON" "$port" mem rom 0x4000 0x43ff; python3 "$CON" "$port" mem xram 0x4000 0x43ff)
	check "counted: the stubs' code memory and the counters' xdata as they were" test "$before" = "$after"
	ucsim_stop
	python3 - small/plain.json cnt.own.json cnt.json <<'EOF' || notok "counted: the checks of the output ran" "python failed"
import json, sys
c, own, d = (json.load(open(f)) for f in sys.argv[1:4])
p = {q["id"]: q for q in d["probes"]}
n = c["work_calls"]
strip = lambda d: {k: v for k, v in d.items() if k not in ("tick_calls", "isr_calls")}
checks = [
    ("the firmware's figures but the timer's the same as without sonde", strip(own) == strip(c), own),
    (f"line own.odd++ {c['odd']} hits, counted in the chip",
     p[1]["hits"] == c["odd"] and p[1].get("counted_in_target") and "counted in the chip" in p[1]["where"], p[1]),
    (f"line in tick (timer 0's handler calls it) {own['tick_calls']} hits, counted in the chip",
     own["tick_calls"] > 0 and p[2]["hits"] == own["tick_calls"] and p[2].get("counted_in_target"), p[2]),
    (f"line c_data = ... {n} hits, counted in the chip", p[3]["hits"] == n and p[3].get("counted_in_target"), p[3]),
]
for what, good, detail in checks:
    print(("ok - counted: " if good else "not ok - counted: ") + what + ("" if good else ": " + json.dumps(detail)[:600]))
EOF
fi

# --duration: the session ends while the firmware runs (breakpoints and
# counted sites in); the simulator is left stopped with no breakpoint, its
# code as it was, and the firmware let run on ends with the figures it has
# without sonde (but its timer's: counting stubs ran).
if [ -s small/plain.json ]; then
	ucsim_start "$fw"
	before=$(python3 "$CON" "$port" mem rom 0x4000 0x43ff)
	timeout 60 "$SONDE" probe --target "ucsim:127.0.0.1:$port" --exe "$fw" --format=json --duration=1 \
		--target-ram "$RAM" -e func:work -e "line:mcs51_fw.c:$ODD" >dur.json 2>dur.err
	rc=$?
	check "--duration: sonde exits 0" test "$rc" -eq 0
	check "--duration: the firmware was left running (detached)" \
		jq_py dur.json 'sys.exit(0 if d["target"]["state"].startswith("detached") and "exit_status" not in d["target"] else 1)'
	nbp=$(python3 "$CON" "$port" breakpoints)
	check "--duration: no breakpoint left in the simulator" test "$nbp" = 0
	check "--duration: code memory equals the .ihx" python3 "$CON" "$port" code "$fw"
	check "--duration: the stubs' code memory as it was" test "$before" = "$(python3 "$CON" "$port" mem rom 0x4000 0x43ff)"
	python3 "$CON" "$port" run && python3 "$CON" "$port" own dur.own.json
	check "--duration: the firmware, run on, ends with its figures without sonde" python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
strip = lambda d: {k: v for k, v in d.items() if k not in ("tick_calls", "isr_calls")}
sys.exit(0 if strip(a) == strip(b) and b["tick_calls"] == b["isr_calls"] > 0 else 1)' small/plain.json dur.own.json
	ucsim_stop
fi

# Ctrl-C (SIGINT) the moment sonde's connection is established (it is then
# connecting, placing or running, breakpoints and counted sites going in):
# whatever the phase, the simulator is left with no breakpoint and its code
# as it was, and the firmware, run on, ends with its figures.
if [ -s small/plain.json ]; then
	ucsim_start "$fw"
	timeout 60 "$SONDE" probe --target "ucsim:127.0.0.1:$port" --exe "$fw" --format=json --target-ram "$RAM" \
		-e func:work -e "line:mcs51_fw.c:$ODD" >int.json 2>int.err &
	sp=$!
	python3 - "$port" <<'EOF'
import sys, time
port = int(sys.argv[1])
for _ in range(2000):
    for line in open("/proc/net/tcp").readlines()[1:]:
        a = line.split()
        if a[3] == "01" and int(a[2].split(":")[1], 16) == port:
            sys.exit(0)
    time.sleep(0.005)
sys.exit(1)
EOF
	kill -INT "$sp"
	wait "$sp"
	rc=$?
	check "Ctrl-C: sonde ends (exit 0, or by the signal before its handler was set)" sh -c "[ $rc -eq 0 ] || [ $rc -eq 130 ]"
	[ "$rc" -eq 0 ] || [ "$rc" -eq 130 ] || sed 's/^/# /' int.err
	nbp=$(python3 "$CON" "$port" breakpoints)
	check "Ctrl-C: no breakpoint left in the simulator" test "$nbp" = 0
	check "Ctrl-C: code memory equals the .ihx" python3 "$CON" "$port" code "$fw"
	python3 "$CON" "$port" run && python3 "$CON" "$port" own int.own.json
	check "Ctrl-C: the firmware, run on, ends with its figures without sonde" python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
strip = lambda d: {k: v for k, v in d.items() if k not in ("tick_calls", "isr_calls")}
sys.exit(0 if strip(a) == strip(b) else 1)' small/plain.json int.own.json
	ucsim_stop
fi

# A simulator that vanishes: killed the moment sonde's connection is
# established (sonde is then connecting, placing or running): sonde ends by
# itself, with the simulator "gone" or a clear error, never a hang or a
# crash.
if [ -f "$fw" ]; then
	ucsim_start "$fw"
	timeout 60 "$SONDE" probe --target "ucsim:127.0.0.1:$port" --exe "$fw" --format=json \
		-e func:work -e "line:mcs51_fw.c:$ODD" >gone.json 2>gone.err &
	sp=$!
	python3 - "$port" <<'EOF'
import sys, time
port = int(sys.argv[1])
for _ in range(2000):
    for line in open("/proc/net/tcp").readlines()[1:]:
        a = line.split()
        if a[3] == "01" and int(a[2].split(":")[1], 16) == port:   # ESTABLISHED, to the simulator
            sys.exit(0)
    time.sleep(0.005)
sys.exit(1)
EOF
	kill -9 "$sim"
	wait "$sim" 2>/dev/null
	wait "$sp"
	rc=$?
	check "a simulator that vanishes: sonde ends (gone, or exit 2 with the reason)" sh -c "
		{ [ $rc -eq 0 ] && grep -q '\"state\": *\"gone\"' gone.json; } ||
		{ [ $rc -eq 2 ] && grep -q 'closed the connection\|cannot connect\|no ucsim console' gone.err; }"
	[ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || sed 's/^/# /' gone.err
fi

# bad input: a firmware without its .cdb, a port with no simulator
cp "$fw" nocdb.ihx
timeout 20 "$SONDE" probe --target "ucsim:127.0.0.1:1" --exe nocdb.ihx -e func:work >bad1.out 2>bad1.err
rc=$?
check "no .cdb beside the .ihx: exit 2 with a clear error" sh -c "[ $rc -eq 2 ] && grep -q 'no SDCC debug file' bad1.err"
timeout 20 "$SONDE" probe --target "ucsim:127.0.0.1:1" --exe "$fw" -e func:work >bad2.out 2>bad2.err
rc=$?
check "no simulator on the port: exit 2 with a clear error" sh -c "[ $rc -eq 2 ] && grep -q 'cannot connect' bad2.err"

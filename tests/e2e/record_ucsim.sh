#!/usr/bin/env bash
# record_ucsim.sh — sonde record --target ucsim:HOST:PORT --exe fw.ihx, the
# function profile of 8051 firmware (issue 43): tests/progs/mcs51_fw.c built
# with Debian's sdcc --debug in the small and the large memory model, run
# by ucsim (s51).  The firmware counts its own calls (work, tick, and its
# timer 0 interrupt handler's) into xdata; the test reads them with its own
# console client (tests/tools/ucsim_console.py), which also runs the
# firmware without sonde to a breakpoint at main and then to its end, for
# the simulator's own count of main's clock ticks.  Checked: every
# function's calls equal the firmware's counts; main's inclusive time is
# the simulator's ticks from main to the end at its clock; the interrupt
# handler and what it calls are the roots of a thread of their own, and
# the time main's thread waited for them is its off-CPU time; both metric
# invariants; every reader and export takes the recording; the firmware's
# figures are the same as without sonde; no breakpoint is left and code
# memory equals the .ihx.  Then -F, and --duration on a firmware that runs
# on; on that firmware, once its own counter says work ran 3 times under
# sonde: Ctrl-C (exit 0, no breakpoint left, code memory the .ihx, the
# calls recorded the firmware's counts where sonde left it, the firmware
# run on to its figures without sonde) and the simulator killed (sonde
# ends by itself and says so, the recording reads with calls between the
# firmware's counts before the kill and its whole run's, sonde info says
# the target went away).  (Each stop costs ucsim's ~100 ms console poll:
# 8 calls of work.)
# test-timeout: 240
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/remote_lib.sh"

CON="$ROOT/tests/tools/ucsim_console.py"
src="$PROGS/mcs51_fw.c"
need_ucsim "8051 function profiles (record --target ucsim:)"
have_go=0
command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1 && have_go=1

for model in small large; do
	mkdir -p "$model"
	if ! sdcc --debug -mmcs51 "--model-$model" -o "$model/" "$src" >"$model/build.err" 2>&1; then
		notok "$model: sdcc builds the firmware" "$(head -3 "$model/build.err")"
		continue
	fi
	fw="$model/mcs51_fw.ihx"
	main=$(awk '$2 == "_main" { print "0x" $1 }' "$model/mcs51_fw.map" | head -1)
	[ -z "$main" ] && main=0x$(grep -o 'C:[[:space:]]*[0-9A-F]*[[:space:]]*_main\b' "$model/mcs51_fw.map" | awk '{print $2}' | head -1)

	# without sonde: the simulator's ticks to main and from main to the end, the firmware's counts
	ucsim_start "$fw"
	python3 "$CON" "$port" runto "$main" > "$model/ticks" && python3 "$CON" "$port" own "$model/plain.json"
	check "$model: the firmware runs to its end without sonde (to main, then to its end)" test -s "$model/plain.json"
	ucsim_stop

	ucsim_start "$fw"
	"$SONDE" record --target "ucsim:127.0.0.1:$port" --exe "$fw" -o "$model/rec" > "$model/rec.out" 2> "$model/rec.err"
	rc=$?
	check "$model: sonde record exits 0" test $rc = 0
	check "$model: it says how many calls it recorded" grep -q "calls of 4 functions recorded in $model/rec/" "$model/rec.err"
	python3 "$CON" "$port" own "$model/sonde.json"
	check "$model: the firmware's figures are the same as without sonde" cmp -s "$model/plain.json" "$model/sonde.json"
	check "$model: no breakpoint left" test "$(python3 "$CON" "$port" breakpoints)" = 0
	check "$model: code memory equals the .ihx" python3 "$CON" "$port" code "$fw"
	ucsim_stop

	SONDE="$SONDE" PYTHONPATH="$ROOT/tests" python3 - "$model" "$model/rec" "$model/plain.json" "$model/ticks" <<'PY'
import json, sys
from profile_check import say, report, check_invariants, sonde_json, done
model, data, plain, ticks = sys.argv[1:5]
own = json.load(open(plain))
to_main, main_ticks = map(int, open(ticks).read().split())
r = report(data=data)
got = {n: r[n]["calls"] if n in r else None for n in ("main", "work", "tick", "timer0_isr")}
want = {"main": 1, "work": own["work_calls"], "tick": own["tick_calls"], "timer0_isr": own["isr_calls"]}
say(got == want and own["isr_calls"] > 0, f"{model}: calls of main, work, tick, timer0_isr as the firmware counted them ({want})", got)
rep = sonde_json("report", data=data)
# main's time: the simulator's own ticks from main's entry to the firmware's end, at the
# chip's clock (s51's default crystal, 11.0592 MHz; `sonde info` is checked to say the same)
hz = 11059200
want_ns = main_ticks * 1e9 / hz
say(abs(r["main"]["inclusive_ns"] - want_ns) <= 2, f"{model}: main's inclusive time is the simulator's {main_ticks} ticks at {hz} Hz ({want_ns:.0f} ns)",
    r["main"]["inclusive_ns"])
excl = sum(f["exclusive_ns"] for f in rep["functions"])
say(abs(excl - rep["total_ns"]) <= len(rep["functions"]), f"{model}: exclusive times sum to the total", f"{excl} != {rep['total_ns']}")
check_invariants(list(r), data=data, label=f"{model}: ")
tree = sonde_json("tree", data=data)
roots = {t["name"]: sorted(c["name"] for c in t["roots"]) for t in tree["threads"]}
say(roots.get("interrupts") == ["timer0_isr"] and ["main"] in roots.values(),
    f"{model}: two threads: main the root of one, the interrupt handler of 'interrupts'", roots)
cc = sonde_json("callers-callees", "tick", data=data)
say([(c["name"], c["calls"]) for c in cc["callers"]] == [("timer0_isr", own["tick_calls"])],
    f"{model}: tick's caller is the interrupt handler", cc["callers"])
isr_ns = r["timer0_isr"]["inclusive_ns"]
off = r["main"]["inclusive_ns"] - r["main"]["inclusive_cpu_ns"]
say(abs(off - isr_ns) <= 2 + own["isr_calls"], f"{model}: main's off-CPU time is the interrupt handler's time ({isr_ns} ns)", off)
say(r["timer0_isr"]["inclusive_cpu_ns"] == isr_ns and r["work"]["inclusive_cpu_ns"] <= r["work"]["inclusive_ns"],
    f"{model}: the handler ran on the CPU all its time; work waited for it at most its own time", (r["timer0_isr"], r["work"]))
done()
PY
	check "$model: the recording's times and threads are the firmware's" test $? = 0
	for cmd in "flamegraph -o $model/f.svg" "export --format=perfetto -o $model/t.pb" "export --format=chrome -o $model/t.json" \
		"export --format=pprof -o $model/p.pb.gz" "export --format=callgrind -o $model/cg.out"; do
		check "$model: sonde $cmd reads it" "$SONDE" $cmd -i "$model/rec"
	done
	check "$model: callgrind_annotate names work" sh -c "! command -v callgrind_annotate >/dev/null || callgrind_annotate $model/cg.out | grep -q work"
	if [ $have_go = 1 ]; then
		go tool pprof -top -sample_index=calls -nodefraction=0 "$model/p.pb.gz" > "$model/top.txt" 2> "$model/pprof.err"
		wc=$(awk '$NF == "work" { print $1 }' "$model/top.txt")
		check "$model: go tool pprof: work's calls as the firmware counted" test "$wc" = "$(python3 -c "import json; print(json.load(open('$model/plain.json'))['work_calls'])")"
	fi
	check "$model: sonde info names the simulator's clock" sh -c "'$SONDE' info -i $model/rec | grep -q \"simulator's cycle counter at 11059200 Hz\""
done

fw=small/mcs51_fw.ihx
if [ -s "$fw" ]; then
	# -F: only work; the firmware's count
	ucsim_start "$fw"
	"$SONDE" record --target "ucsim:127.0.0.1:$port" --exe "$fw" -F work -o only > only.out 2> only.err
	check "-F work: exits 0" test $? = 0
	check "-F work: one function, its calls the firmware's" env SONDE="$SONDE" PYTHONPATH="$ROOT/tests" python3 -c "
import json, sys
from profile_check import report
r = report(data='only')
sys.exit(0 if list(r) == ['work'] and r['work']['calls'] == json.load(open('small/plain.json'))['work_calls'] else 1)"
	ucsim_stop

	# --duration on firmware that has not stopped: the recording written, the firmware left to run on
	mkdir -p long
	sdcc --debug -mmcs51 -DN_WORK=2000 -o long/ "$src" >long/build.err 2>&1
	if [ -s long/mcs51_fw.ihx ]; then
		ucsim_start long/mcs51_fw.ihx
		"$SONDE" record --target "ucsim:127.0.0.1:$port" --exe long/mcs51_fw.ihx --duration 2 -o dur > dur.out 2> dur.err
		check "--duration: exits 0, says the target was left running" sh -c "grep -q 'the target was left running' dur.err"
		check "--duration: no breakpoint left" test "$(python3 "$CON" "$port" breakpoints)" = 0
		check "--duration: code memory equals the .ihx" python3 "$CON" "$port" code long/mcs51_fw.ihx
		check "--duration: the recording reads, work's calls recorded" env SONDE="$SONDE" PYTHONPATH="$ROOT/tests" python3 -c "
import sys
from profile_check import report
r = report(data='dur')
sys.exit(0 if r.get('work', {}).get('calls', 0) >= 1 else 1)"
		python3 "$CON" "$port" run && python3 "$CON" "$port" own long.json
		check "--duration: the firmware runs on to its end with its own counts" python3 -c "
import json; d = json.load(open('long.json')); raise SystemExit(0 if d['work_calls'] == 2000 and d['done'] == 0x5a5a else 1)"
		ucsim_stop

		# the long firmware's own figures without sonde (to its end)
		ucsim_start long/mcs51_fw.ihx
		python3 "$CON" "$port" run && python3 "$CON" "$port" own long.plain.json
		check "long: the firmware runs to its end without sonde" test -s long.plain.json
		ucsim_stop

		# Ctrl-C (SIGINT) while the firmware runs on: once the firmware's own counter says work
		# ran 3 times under sonde (read by the test's console client, after sonde's first
		# return breakpoint: more than its 4 entry breakpoints), sonde is interrupted
		ucsim_start long/mcs51_fw.ihx
		timeout 180 "$SONDE" record --target "ucsim:127.0.0.1:$port" --exe long/mcs51_fw.ihx -o int > int.out 2> int.err &
		sp=$!
		python3 "$CON" "$port" until 3 int.before.json "$sp" 4 > int.until
		check "Ctrl-C: the firmware counts 3 calls of work under sonde" test $? = 0
		kill -INT "$sp"
		wait "$sp"
		rc=$?
		check "Ctrl-C: exits 0 (within 180 s), says the target was left running" \
			sh -c "[ $rc -eq 0 ] && grep -q 'the target was left running' int.err"
		[ "$rc" -eq 0 ] || sed 's/^/# /' int.err int.until
		check "Ctrl-C: no breakpoint left" test "$(python3 "$CON" "$port" breakpoints)" = 0
		check "Ctrl-C: code memory equals the .ihx" python3 "$CON" "$port" code long/mcs51_fw.ihx
		# the firmware's counters where sonde left it stopped: each recorded count is the
		# firmware's, or one more when it stopped between a function's entry and its count
		python3 "$CON" "$port" own int.stop.json
		SONDE="$SONDE" PYTHONPATH="$ROOT/tests" python3 - <<'PY'
import json
from profile_check import say, report, check_invariants, sonde_json, done
own = json.load(open("int.stop.json"))
r = report(data="int")
got = {n: r[n]["calls"] if n in r else 0 for n in ("main", "work", "tick", "timer0_isr")}
lo = {"main": 1, "work": own["work_calls"], "tick": own["tick_calls"], "timer0_isr": own["isr_calls"]}
say(all(lo[n] <= got[n] <= lo[n] + 1 for n in lo) and got["work"] >= 3,
    f"Ctrl-C: the calls recorded are the firmware's counts where sonde left it ({lo}, each at most one more)", got)
check_invariants(list(r), data="int", label="Ctrl-C: ")
info = sonde_json("info", data="int")
say(info["exit_status"] is None and "target_gone" not in info, "Ctrl-C: sonde info: no exit status, the target not gone", info)
done()
PY
		check "Ctrl-C: the recording reads, its calls the firmware's" test $? = 0
		python3 "$CON" "$port" run && python3 "$CON" "$port" own int.end.json
		check "Ctrl-C: the firmware, run on, ends with its figures without sonde" cmp -s long.plain.json int.end.json
		ucsim_stop

		# the simulator vanishing mid-recording: killed (SIGKILL) once the firmware's own counter
		# says work ran 3 times under sonde; sonde ends by itself (within 180 s), says so, and
		# writes what it recorded: at least what the firmware had counted before the kill, at
		# most the firmware's whole run's counts
		ucsim_start long/mcs51_fw.ihx
		timeout 180 "$SONDE" record --target "ucsim:127.0.0.1:$port" --exe long/mcs51_fw.ihx -o gone > gone.out 2> gone.err &
		sp=$!
		python3 "$CON" "$port" until 3 gone.before.json "$sp" 4 > gone.until
		check "vanish: the firmware counts 3 calls of work under sonde" test $? = 0
		kill -9 "$sim"
		wait "$sim" 2>/dev/null
		wait "$sp"
		rc=$?
		check "vanish: sonde exits 0 (within 180 s), says the simulator went away and what it wrote" sh -c "[ $rc -eq 0 ] &&
			grep -q \"the simulator went away before the program's end (the connection closed): the recording holds the calls up to then\" gone.err &&
			grep -q 'calls of 4 functions recorded in gone/' gone.err"
		[ "$rc" -eq 0 ] || sed 's/^/# /' gone.err gone.until
		check "vanish: sonde report --format=json reads the recording" sh -c "'$SONDE' report -i gone --format=json > gone.report.json"
		SONDE="$SONDE" PYTHONPATH="$ROOT/tests" python3 - <<'PY'
import json
from profile_check import say, report, check_invariants, sonde_json, done
before, whole = json.load(open("gone.before.json")), json.load(open("long.plain.json"))
r = report(data="gone")
got = {n: r[n]["calls"] if n in r else 0 for n in ("main", "work", "tick", "timer0_isr")}
lo = {"main": 1, "work": before["work_calls"], "tick": before["tick_calls"], "timer0_isr": before["isr_calls"]}
hi = {"main": 1, "work": whole["work_calls"], "tick": whole["tick_calls"], "timer0_isr": whole["isr_calls"]}
say(all(lo[n] <= got[n] <= hi[n] for n in lo), f"vanish: calls recorded between the firmware's counts before the kill ({lo}) and its whole run's ({hi})", got)
check_invariants(list(r), data="gone", label="vanish: ")
info = sonde_json("info", data="gone")
say(info["exit_status"] is None and info.get("target_gone") is True, "vanish: sonde info: no exit status, target_gone", info)
done()
PY
		check "vanish: the recording reads, marked as the target gone" test $? = 0
		check "vanish: sonde info says the target went away" sh -c "'$SONDE' info -i gone | grep -q 'exit status:  ? (the target went away before its end'"
	else
		notok "--duration: sdcc builds the long firmware" "$(head -3 long/build.err)"
	fi
fi

# bad input: a target without the .cdb, and options that do not apply
cp small/mcs51_fw.ihx nocdb.ihx 2>/dev/null
ucsim_start small/mcs51_fw.ihx
"$SONDE" record --target "ucsim:127.0.0.1:$port" --exe nocdb.ihx -o bad > bad.out 2> bad.err
check "a firmware without its .cdb: exit 2 with the reason" sh -c "test $? = 2 && grep -q 'no SDCC debug file' bad.err"
"$SONDE" record --target "ucsim:127.0.0.1:$port" --exe small/mcs51_fw.ihx --target-ram 0xe000:0x400 -o bad2 > bad.out 2> bad2.err
check "--target-ram with ucsim: a usage error" test $? = 1
ucsim_stop
timeout 20 "$SONDE" record --target "ucsim:127.0.0.1:1" --exe small/mcs51_fw.ihx -o bad3 >bad3.out 2>bad3.err
rc=$?
check "no simulator on the port: exit 2 with a clear error" sh -c "[ $rc -eq 2 ] && grep -q 'cannot connect' bad3.err"

# longjmp, C++ exceptions and tail calls across several frames, built with
# GCC and with Clang: counts exact, and the callers after the non-local exit
# are right (the stack does not drift).
. "$ROOT/tests/lib.sh"
for cc in gcc clang; do
	case $cc in gcc) cxx=g++ ;; clang) cxx=clang++ ;; esac
	if ! command -v $cc >/dev/null || ! command -v $cxx >/dev/null; then
		skip "$cc" "$cc/$cxx not installed"; continue
	fi
	SONDE_CC=$cc "$SONDE_CC_BIN" -O2 -g -I"$PROGS" "$PROGS/longjmp.c" -o longjmp-$cc &&
	SONDE_CC=$cc "$SONDE_CC_BIN" -O2 -g -I"$PROGS" "$PROGS/tailcall.c" -o tailcall-$cc &&
	SONDE_CXX=$cxx "$SONDE_CXX_BIN" -O2 -g -I"$PROGS" "$PROGS/exceptions.cpp" -o exceptions-$cc ||
		{ notok "build ($cc)" "sonde-cc failed"; continue; }
	"$SONDE" record -o lj-$cc.data -- ./longjmp-$cc >out1.txt 2>rec1.err
	"$SONDE" record -o ex-$cc.data -- ./exceptions-$cc >out2.txt 2>rec2.err
	"$SONDE" record -o tc-$cc.data -- ./tailcall-$cc >out3.txt 2>rec3.err
	check "longjmp output unchanged ($cc)" grep -qx "longjmp done" out1.txt
	check "exceptions output unchanged ($cc)" grep -qx "exceptions done" out2.txt
	check "tailcall output unchanged ($cc)" test "$(cat out3.txt)" = "$(./tailcall-$cc)"
	# The dormant entry sled is one 5-byte nop (GCC's five 1-byte nops are joined by sonde-as).
	check "entry sled of tail() is one 5-byte nop ($cc)" \
		sh -c "objdump -d tailcall-$cc | grep -A1 '<tail>:' | grep -q '0f 1f 44 00 0'"
	# The build must really tail-call, or the tail-call checks test nothing.
	check "tailcall ($cc): tail() ends in a jmp to leaf() in the machine code" \
		sh -c "objdump -d --no-show-raw-insn tailcall-$cc | grep -A12 '<tail>:' | grep -q 'jmp .*<leaf>'"
	CC_NAME=$cc python3 - <<'PY'
import sys, os, re; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
cc = os.environ["CC_NAME"]
lj, ex, tc = f"lj-{cc}.data", f"ex-{cc}.data", f"tc-{cc}.data"
r = report(lj)
for n, c in [("a", 3), ("b", 3), ("c", 3), ("outer", 3), ("after", 4)]:
    say(r.get(n, {}).get("calls") == c, f"longjmp ({cc}): {n} {c} calls", str(r.get(n, {}).get("calls")))
callers = {c["name"]: c["calls"] for c in callers_callees("after", data=lj)["callers"]}
say(callers == {"outer": 3, "main": 1}, f"longjmp ({cc}): after() called from outer x3 and main x1 (not from c)", str(callers))
callees = {c["name"]: c["calls"] for c in callers_callees("outer", data=lj)["callees"]}
say(callees == {"a": 3, "after": 3}, f"longjmp ({cc}): outer's callees are a and after", str(callees))
say(sonde_json("info", data=lj)["lost"] == {}, f"longjmp ({cc}): nothing lost", str(sonde_json("info", data=lj)["lost"]))
check_invariants(["main", "outer", "a", "b", "c", "after"], data=lj, label=f"(longjmp, {cc})")
r = report(ex)
for n, c in [("demo::thrower(int)", 4), ("demo::mid(int)", 4), ("demo::top(int)", 4), ("demo::after()", 4), ("demo::catcher()", 4)]:
    say(n in r and r[n]["calls"] == c, f"exceptions ({cc}): {n} {c} calls", str(r.get(n, {}).get("calls")))
callers = {c["name"]: c["calls"] for c in callers_callees("demo::after", data=ex)["callers"]}
say(callers == {"demo::catcher()": 4}, f"exceptions ({cc}): after() called from catcher()", str(callers))
say(sonde_json("info", data=ex)["lost"] == {}, f"exceptions ({cc}): nothing lost", str(sonde_json("info", data=ex)["lost"]))
# tail calls: the counts the program printed itself
m = re.match(r"leaf (\d+) tail (\d+) chain (\d+)", open("out3.txt").read())
r = report(tc)
for n, c in [("leaf", int(m.group(1))), ("tail", int(m.group(2))), ("chain", int(m.group(3)))]:
    say(r.get(n, {}).get("calls") == c, f"tailcall ({cc}): {n} {c} calls, as the program counted", str(r.get(n, {}).get("calls")))
callers = {c["name"]: c["calls"] for c in callers_callees("tail", data=tc)["callers"]}
say(callers == {"chain": 1000, "main": 500}, f"tailcall ({cc}): tail() nested in chain() x1000 and main x500", str(callers))
check_invariants(["main", "chain", "tail", "leaf"], data=tc, label=f"(tailcall, {cc})")
done()
PY
done

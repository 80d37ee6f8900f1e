# Calls made inside signal handlers (docs/INSTRUMENTATION.md, "Signal
# handlers"): tests/progs/sig_calls.c makes calls from a 20 kHz timer's
# handler, from a handler on an alternate stack, from nested handlers and
# from one that leaves by siglongjmp, while its main loop makes calls as
# fast as it can (signals land inside the hooks).  gcc and clang, sonde-cc
# and plain builds (patched without a rebuild), profile and trace, launched
# and attached (`record -p`, the handlers installed before the attach):
# every count equals the program's own (tests/matrix_check.py), nothing
# lost.  The interrupted call's time includes the handler's: victim(),
# interrupted by a handler that spins, has an inclusive time of at least the
# spin the program measured, and the profile's invariants hold.  --locks:
# the handler's sem_post calls (async-signal-safe) are counted, as are the
# main loop's, which the signals interrupt.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/attach_lib.sh"
jobs=$T/jobs.txt
: >"$jobs"
for cc in gcc clang; do
	command -v $cc >/dev/null || { skip "$cc" "not installed"; continue; }
	SONDE_CC=$cc "$SONDE_CC_BIN" -O2 -g -I"$PROGS" "$PROGS/sig_calls.c" -o sc-$cc 2>build.err ||
		notok "$cc/sonde-cc/build" "$(head -3 build.err)"
	$cc -O2 -g -I"$PROGS" "$PROGS/sig_calls.c" -o plain-$cc 2>build.err || notok "$cc/plain/build" "$(head -3 build.err)"
done

# ran NAME: the program's run ended with status 0 and its last line
ran() { check "$1: the program ran to its end" grep -qx "sig_calls done" "$1.out"; }
queue() { # NAME PROG MODE: for matrix_check
	local plain= trace=
	case $2 in plain-*) plain=plain ;; esac
	[ "$3" = trace ] && trace=trace
	echo "$1 $PWD/$1.data $PWD/$1.out $trace $plain" >>"$jobs"
}

for p in sc-gcc plain-gcc sc-clang plain-clang; do
	[ -x $p ] || continue
	for mode in profile trace; do
		opt=()
		[ $mode = trace ] && opt=(--trace)
		n=$p.$mode
		"$SONDE" record "${opt[@]}" -o $n.data -- ./$p >$n.out 2>$n.err ||
			{ notok "$n: record" "status $?: $(tail -1 $n.err)"; continue; }
		ran $n && queue $n $p $mode
	done
done

# attached: the program installs its handlers, writes its pid and waits on
# its FIFO; sonde attaches; then the run
if [ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" = 0 ]; then
	for p in sc-gcc plain-gcc sc-clang plain-clang; do
		[ -x $p ] || continue
		for mode in profile trace; do
			opt=()
			[ $mode = trace ] && opt=(--trace)
			n=$p.att-$mode
			ATTACH_PROG=./$p start $n
			if ! record_attached $n "${opt[@]}"; then
				notok "$n: attach" "sonde did not start: $(tail -2 $n.err)"
				kill "$pid" 2>/dev/null
				exec 3>&-
				wait "$runner" "$sp"
				continue
			fi
			echo go >&3
			exec 3>&-
			wait "$runner"
			wait "$sp"
			check "$n: sonde ended with status 0" test $? = 0
			check "$n: the program ended with status 0" grep -qx "status 0" $n.out
			ran $n && queue $n $p $mode
		done
	done
else
	skip "attached" "ptrace of a non-child needs root or kernel.yama.ptrace_scope 0"
fi
SONDE="$SONDE" python3 "$ROOT/tests/matrix_check.py" "$jobs"

# the interrupted call's time and the invariants (profiles, launched)
for n in sc-gcc.profile plain-clang.profile; do
	[ -d $n.data ] || continue
	SONDE="$SONDE" python3 - "$n" <<'PY'
import re, sys
sys.path.insert(0, __import__("os").environ["ROOT"] + "/tests")
from profile_check import report, check_invariants, say, done
n = sys.argv[1]
spin = int(next(re.match(r"spin_ns (\d+)", l).group(1) for l in open(n + ".out") if l.startswith("spin_ns")))
r = report(data=n + ".data")
v = r.get("victim", {})
say(spin >= 3000000 and v.get("inclusive_ns", 0) >= spin,
    f"{n}: victim's inclusive time includes the handler's spin",
    f"victim {v.get('inclusive_ns')} ns, spin {spin} ns")
s = r.get("spin_fn", {})
say(s.get("inclusive_ns", 0) >= spin, f"{n}: spin_fn's inclusive time is the spin", f"{s.get('inclusive_ns')} ns, spin {spin}")
check_invariants(["victim", "on_alrm", "spin_fn", "work", "leaf", "tick_fn", "on_prof", "on_usr1", "jumper", "main"],
                 data=n + ".data", label=f"({n})")
done()
PY
done

# --locks, launched (plain gcc) and attached (plain gcc, the handlers
# installed before the attach): the semaphores' posts and waits as the
# program counted them
locks_check() { # NAME
	"$SONDE" locks -i $1.data --format=json >$1.locks.json 2>$1.locks.err ||
		{ notok "$1: sonde locks" "$(cat $1.locks.err)"; return; }
	"$SONDE" info -i $1.data --format=json >$1.info.json 2>/dev/null
	python3 - "$1" <<'PY'
import json, re, sys
n = sys.argv[1]
own = {m.group(1): int(m.group(2)) for m in (re.match(r"lock (\w+) posts (\d+)", l) for l in open(n + ".out")) if m}
d = json.load(open(n + ".locks.json"))
L = {l["name"]: l for l in d["locks"]}
for name in ("sig_sem", "main_sem"):
    got = L.get(name, {}).get("releases")
    print(("ok" if own.get(name) and got == own[name] else "not ok") +
          f" - {n}: {name} posts counted" + ("" if got == own.get(name) else f": sonde {got}, program {own.get(name)}"))
got = L.get("main_sem", {}).get("acquisitions")
print(("ok" if got == own.get("main_sem") else "not ok") + f" - {n}: main_sem waits counted" +
      ("" if got == own.get("main_sem") else f": sonde {got}, program {own.get('main_sem')}"))
info = json.load(open(n + ".info.json"))
lost = info.get("lost", {})
print(("ok" if not lost else "not ok") + f" - {n}: nothing lost" + ("" if not lost else f": {lost}"))
PY
}
if [ -x plain-gcc ]; then
	"$SONDE" record --locks -o plain-gcc.locks.data -- ./plain-gcc locks >plain-gcc.locks.out 2>plain-gcc.locks.err ||
		notok "plain-gcc.locks: record" "$(tail -1 plain-gcc.locks.err)"
	ran plain-gcc.locks && locks_check plain-gcc.locks
fi
if [ -x plain-gcc ] && { [ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" = 0 ]; }; then
	n=plain-gcc.att-locks
	SIG_CALLS_LOCKS=1 ATTACH_PROG=./plain-gcc start $n
	if record_attached $n --locks; then
		echo go >&3
		exec 3>&-
		wait "$runner"
		wait "$sp"
		check "$n: sonde ended with status 0" test $? = 0
		ran $n && locks_check $n
	else
		notok "$n: attach" "sonde did not start: $(tail -2 $n.err)"
		kill "$pid" 2>/dev/null
		exec 3>&-
		wait "$runner" "$sp"
	fi
fi

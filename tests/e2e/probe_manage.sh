#!/usr/bin/env bash
# probe_manage.sh — probe placement refused mid-instruction, the probe manager
# (--interactive add / list / del), the probe library (-e @name, lib add), bad
# specs, and SIGKILL of sonde killing the program it launched (EXITKILL).
source "$ROOT/tests/lib.sh"

gcc -O2 -g -o loop "$PROGS/probe_loop.c" || { notok build "gcc failed"; exit 0; }
gcc -O2 -g -pthread -o thr "$PROGS/probe_threads.c" || { notok build "gcc failed"; exit 0; }

# --- mid-instruction: work's first instruction is longer than one byte
len=$(objdump -d loop | awk '/<work>:/ {f=1; next} f && /^ +[0-9a-f]+:/ {n=0; for (i=2;i<=NF;i++) if ($i ~ /^[0-9a-f][0-9a-f]$/) n++; else break; print n; exit}')
if [ "${len:-0}" -gt 1 ]; then
	"$SONDE" probe -e line:work+1 -- ./loop > mid.out 2> mid.err
	rc=$?
	check "mid-instruction probe refused (exit 2)" test "$rc" -eq 2
	check "mid-instruction message says so" grep -q "not on an instruction boundary" mid.err
	check "mid-instruction: program not run on" test ! -s mid.out
else
	skip "mid-instruction probe refused" "first instruction of work is 1 byte"
fi

# --- usage errors
"$SONDE" probe -e bogus:main -- ./loop > /dev/null 2> bad.err
check "unknown kind is a usage error" test $? -eq 1
check "unknown kind message" grep -q "sonde: error: bad probe 'bogus:main' (unknown probe kind" bad.err
"$SONDE" probe -e func:no_such_function -- ./loop > /dev/null 2> nf.err
check "unknown function is a runtime error" test $? -eq 2
check "unknown function message" grep -q "no function named 'no_such_function'" nf.err

# --- interactive add / list / del, and the library round trip
{
	sleep 0.3
	echo "add func:work"
	sleep 0.4
	echo "add line:probe_threads.c:$(grep -n MARK_WORK "$PROGS/probe_threads.c" | cut -d: -f1)"
	sleep 0.4
	echo "list"
	echo "del 1"
	echo "list"
	echo "lib add worker func:work"
	echo "lib list"
	sleep 0.3
	echo "quit"
} | "$SONDE" probe --interactive --library lib.txt --format=json -o inter.json -- ./thr 1 3000 1000 > inter.out 2> inter.err
rc=$?
check "interactive: exits 0" test "$rc" -eq 0
# The launched program has stdout: sonde's replies go to stderr.
check "interactive: replies on stderr, not in the program's stdout" sh -c '! grep -q "^added" inter.out'
check "interactive: add replies with the id" grep -q "^added 1 func:work" inter.err
check "interactive: second probe gets id 2" grep -q "^added 2 line:" inter.err
check "interactive: list shows active probes" grep -qP "^1\tactive\tfunc:work" inter.err
check "interactive: del" grep -qx "deleted 1" inter.err
check "interactive: list after del" grep -qP "^1\tremoved\tfunc:work" inter.err
check "interactive: probes counted while present" jq_py inter.json \
	"p=d['probes']; assert p[0]['state']=='deleted' and p[0]['calls']>0 and p[1]['state']=='active' and p[1]['hits']>0, p"
check "library: saved" grep -qx "worker = func:work" lib.txt
check "library: lib list" grep -qx "worker = func:work" inter.err
# The detached program goes on and finishes normally.
for _ in $(seq 100); do grep -q '^total' inter.out && break; sleep 0.1; done
check "interactive: program finishes after detach" grep -qx "total $(python3 -c 'print(sum(3*i+1 for i in range(3000)))')" inter.out

# The saved definition used by name in another session.
cat >> lib.txt <<'LIB'
# a comment, and a definition written by hand
rip_line = line:probe_loop.c:32
LIB
"$SONDE" probe --library lib.txt -e @worker -e @rip_line --format=json -o lib.json -- ./loop > /dev/null
check "library: -e @name round trip" jq_py lib.json \
	"p=d['probes']; assert p[0]['spec']=='func:work' and p[0]['calls']==1000 and p[1]['hits']==1000, p"
"$SONDE" probe --library lib.txt -e @nope -- ./loop > /dev/null 2> nope.err
check "library: unknown name refused" grep -q "no probe named 'nope'" nope.err

# --- SIGKILL of the ptrace engine kills the program it launched
# (PTRACE_O_EXITKILL); the agent engine's survives it (probe_agent.sh).
rm -f pid3.txt
"$SONDE" probe --engine=ptrace -e func:work -- ./thr 1 100000 1000 pid3.txt > /dev/null 2>&1 &
sonde_pid=$!
for _ in $(seq 100); do [ -s pid3.txt ] && break; sleep 0.05; done
sleep 0.3
victim=$(cat pid3.txt)
check "sigkill: program running under sonde" kill -0 "$victim"
kill -KILL "$sonde_pid"
wait "$sonde_pid" 2>/dev/null
gone=0
for _ in $(seq 50); do
	if ! kill -0 "$victim" 2>/dev/null || grep -q '^State:.*Z' "/proc/$victim/status" 2>/dev/null; then gone=1; break; fi
	sleep 0.05
done
check "sigkill: launched program killed with sonde" test "$gone" -eq 1
[ "$gone" -eq 1 ] || kill -KILL "$victim" 2>/dev/null

#!/usr/bin/env bash
# probe_attach.sh — sonde probe -p: attach to a running multi-threaded program
# for a fixed time, detach; the program finishes with the right output and
# status; hit counts match the time attached; all threads are probed.
source "$ROOT/tests/lib.sh"

gcc -O2 -g -pthread -o thr "$PROGS/probe_threads.c" || { notok build "gcc failed"; exit 0; }
# total = threads * sum(3i+1 for i < iters)
expect() { python3 -c "print($1 * sum(3*i+1 for i in range($2)))"; }

# Launched, 4 threads, no sleeping: exact counts across threads.
"$SONDE" probe --format=json -o thr.json -e func:work -- ./thr 4 5000 0 > thr.out 2>thr.err
check "launched threads: output right" grep -qx "total $(expect 4 5000)" thr.out
check "launched threads: every call counted" jq_py thr.json \
	"p=d['probes'][0]; assert p['calls']==20000 and p['returns']==20000, p"
check "launched threads: exit status kept" jq_py thr.json "assert d['target']['exit_status']==3"

# Attached: 4 threads x 2000 iterations with 1 ms sleeps (about 2.2 s).
(./thr 4 2000 1000 pid.txt > att.out; echo "status $?" >> att.out) &
runner=$!
for _ in $(seq 50); do [ -s pid.txt ] && break; sleep 0.05; done
sleep 0.3
pid=$(cat pid.txt)
start=$(date +%s.%N)
"$SONDE" probe -p "$pid" --duration 1 --format=json -o att.json -e func:work -e sys:100ms 2>att.err
rc=$?
end=$(date +%s.%N)
check "attach: sonde exits 0" test "$rc" -eq 0
# (the upper bound allows for a loaded machine: tests run two at once)
check "attach: detached after about 1 s" python3 -c "assert 0.9 < $end - $start < 10"
wait "$runner"
check "attach: program output right" grep -qx "total $(expect 4 2000)" att.out
check "attach: program exit status right" grep -qx "status 3" att.out
# 4 threads each call work() about once per ms (sleep + overhead): for 1 s
# attached, at most 4000 calls and, on any machine, well above 100.
check "attach: hits consistent with 1 s attached" jq_py att.json \
	"p=d['probes'][0]; assert 100 <= p['calls'] <= 4000, p['calls']"
check "attach: process left running" jq_py att.json "assert d['target']['state'].startswith('detached')"
check "attach: sys probe sampled all threads" jq_py att.json \
	"p=d['probes'][1]; assert p['samples'] >= 5 and len(p['threads']) >= 5, p"

# Threads created after attaching are probed too.
(./thr 3 300 2000 pid2.txt > late.out; echo "status $?" >> late.out) &
runner=$!
for _ in $(seq 500); do [ -s pid2.txt ] && break; sleep 0.01; done
"$SONDE" probe -p "$(cat pid2.txt)" --format=json -o late.json -e func:work 2>late.err
wait "$runner"
check "attach until exit: output right" grep -qx "total $(expect 3 300)" late.out
check "attach until exit: status right" grep -qx "status 3" late.out
check "attach until exit: threads seen" jq_py late.json "p=d['probes'][0]; assert p['calls'] > 0, p"

# --- attached in the program's first milliseconds: the dynamic loader is
# still looking for the C library (a long LD_LIBRARY_PATH of missing
# directories keeps it at that for ~0.5 s here, and the test checks the maps
# show the loader without libc when sonde starts), so dlopen is not there
# yet: sonde waits for it instead of refusing the process as static
# (tests/progs/phases_ctl.c waits for the test's go files, then calls work()
# 10 + 20 + 30 times).
gcc -O2 -g -I"$PROGS" -pthread -o ph "$PROGS/phases_ctl.c" || { notok "phases_ctl build" "gcc failed"; exit 0; }
dirs=$(python3 -c "print(':'.join('/n%d' % i for i in range(15000)))")  # < 128 KiB: one variable's limit
rm -f go1 go2 go3
LD_LIBRARY_PATH=$dirs ./ph 10 20 30 > early.out &
epid=$!
if grep -q ld-linux "/proc/$epid/maps" 2>/dev/null && ! grep -q "/libc[.-]" "/proc/$epid/maps" 2>/dev/null; then
	"$SONDE" probe -p "$epid" -e func:work --format=json -o early.json 2> early.err &
	esp=$!
	for _ in $(seq 600); do grep -q '^sonde: probes in process' early.err && break; sleep 0.05; done
	touch go1 go2 go3
	wait "$epid"; erc=$?
	wait "$esp"; src=$?
	check "early attach: sonde exits 0 (waited for the C library, not refused as static)" test "$src" -eq 0
	check "early attach: the program's output and status as without sonde" \
		sh -c "[ $erc -eq 0 ] && grep -q '^phase1 10 phase2 20 phase3 30 ' early.out"
	check "early attach: work counted 60 calls" jq_py early.json "p=d['probes'][0]; assert p['calls'] == 60, (p, open('early.err').read())"
else
	kill "$epid" 2>/dev/null; touch go1 go2 go3; wait "$epid" 2>/dev/null
	skip "early attach" "the loader had mapped the C library before the check (a faster machine: more directories needed)"
fi

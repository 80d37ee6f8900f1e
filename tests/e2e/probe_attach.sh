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
check "attach: detached after about 1 s" python3 -c "assert 0.9 < $end - $start < 3"
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
for _ in $(seq 50); do [ -s pid2.txt ] && break; sleep 0.01; done
"$SONDE" probe -p "$(cat pid2.txt)" --format=json -o late.json -e func:work 2>late.err
wait "$runner"
check "attach until exit: output right" grep -qx "total $(expect 3 300)" late.out
check "attach until exit: status right" grep -qx "status 3" late.out
check "attach until exit: threads seen" jq_py late.json "p=d['probes'][0]; assert p['calls'] > 0, p"

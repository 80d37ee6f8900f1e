#!/usr/bin/env bash
# probe_pending.sh — pending probes (--pending, issue 12 "probes follow the
# program"): a func and a line location in a library that the program loads
# with dlopen only later are placed when it loads, before its constructor
# runs (as gdb's pending breakpoints), on a launched and on an attached
# program.  Expected counts are the program's own (tests/progs/pend_main.c
# prints how many times pend_work ran, its library's constructor included).
# test-timeout: 300
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"

gcc -O2 -g -fPIC -shared -o libpend.so "$PROGS/pend_lib.c" || { notok build "gcc failed (library)"; exit 0; }
gcc -O2 -g -o pend_main "$PROGS/pend_main.c" -ldl || { notok build "gcc failed (program)"; exit 0; }
L=$(grep -n MARK_PEND_LINE "$PROGS/pend_lib.c" | cut -d: -f1)
touch go.plain
./pend_main ./libpend.so 5000 go.plain > plain.out
plain_rc=$?
calls=$(awk '$1 == "calls" {print $3}' plain.out)
check "plain run: 5100 calls (100 from the library's constructor), status 0" test "$calls" = 5100 -a "$plain_rc" -eq 0
sed 1d plain.out > plain.rest

# --- without --pending: a function in no loaded object is an error, before the program runs
touch go.np
"$SONDE" probe -e func:pend_work -- ./pend_main ./libpend.so 10 go.np > np.out 2> np.err
rc=$?
check "no --pending: exit 2" test "$rc" -eq 2
check "no --pending: says no such function" grep -q "no function named 'pend_work'" np.err
check "no --pending: the program did not run" test ! -s np.out

# --- launched: the probes wait for the library
touch go.l
"$SONDE" probe --pending --format=json -o l.json -e func:pend_work -e "line:pend_lib.c:$L" \
	-e func:never_there -- ./pend_main ./libpend.so 5000 go.l > l.out 2> l.err
rc=$?
check "launch: sonde exits 0" test "$rc" -eq 0
check "launch: program output unchanged" cmp -s plain.out l.out
check "launch: said when each was placed" test "$(grep -c 'placed at pend_work.*a library that has it was loaded' l.err)" -eq 2
check "launch: func probe counts every call, the constructor's included" jq_py l.json \
	"p=d['probes'][0]; assert p['state'] == 'active' and p['calls'] == p['returns'] == $calls, p"
check "launch: callers are main and the constructor" jq_py l.json \
	"c={x['name']: x['calls'] for x in d['probes'][0]['callers']}; assert c == {'main': $calls - 100, 'pend_init': 100}, c"
check "launch: line probe in the library counts every pass" jq_py l.json \
	"p=d['probes'][1]; assert p['state'] == 'active' and p['hits'] == $calls, p"
check "launch: a location no library has stays pending, no hits" jq_py l.json \
	"p=d['probes'][2]; assert p['state'] == 'pending' and p['hits'] == 0 and p['where'].startswith('pending: '), p"

# --- the library unloaded (dlclose) and loaded again: the first probe ends
# with what it counted ("unloaded"), the same spec waits again and counts
# the second load's calls
touch go.r
./pend_main ./libpend.so 5000 go.r reload > plain_r.out
again=$(awk '$1 == "calls" && $2 == "again" {print $3}' plain_r.out)
"$SONDE" probe --pending --format=json -o r.json -e func:pend_work -- ./pend_main ./libpend.so 5000 go.r reload > r.out 2> r.err
rc=$?
check "reload: sonde exits 0, output unchanged" sh -c "[ $rc -eq 0 ] && cmp -s plain_r.out r.out"
check "reload: $calls calls until the dlclose, then $again after the new load" jq_py r.json \
	"p=d['probes']; assert [(q['id'], q['state'], q['calls'], q['returns']) for q in p] == [(1, 'unloaded', $calls, $calls), (2, 'active', ${again:-0}, ${again:-0})], p"

# --- attached before the program loads the library
rm -f go.a
./pend_main ./libpend.so 5000 go.a > a.out &
runner=$!
for _ in $(seq 500); do grep -q '^ready' a.out 2>/dev/null && break; sleep 0.02; done
probe_attached "$runner" a.err --pending --format=json -o a.json -e func:pend_work
touch go.a
wait "$runner"
prc=$?
wait "$sonde_pid"
rc=$?
check "attach: sonde exits 0, the program 0" test "$rc" -eq 0 -a "$prc" -eq 0
check "attach: program output unchanged" cmp -s plain.out a.out
check "attach: func probe counts every call, the constructor's included" jq_py a.json \
	"p=d['probes'][0]; assert p['state'] == 'active' and p['calls'] == $calls, p"

# --- the ptrace engine does not follow libraries: said
"$SONDE" probe --pending --engine=ptrace -e func:pend_work -- ./pend_main ./libpend.so 10 go.np > pt.out 2> pt.err
rc=$?
check "--pending --engine=ptrace: usage error" test "$rc" -eq 1
check "--pending --engine=ptrace: says why" grep -q -- "--pending follows libraries on the agent engine only" pt.err

# --- sonde SIGKILLed while the probes wait: the agent takes its site at the
# dynamic linker out too; the program loads its library and ends normally
rm -f go.k
./pend_main ./libpend.so 5000 go.k > k.out &
runner=$!
for _ in $(seq 500); do grep -q '^ready' k.out 2>/dev/null && break; sleep 0.02; done
probe_attached "$runner" k.err --pending -e func:pend_work
kill -9 "$sonde_pid"
wait "$sonde_pid" 2>/dev/null
sleep 0.2
touch go.k
wait "$runner"
prc=$?
check "sigkill: the program loads its library and finishes normally" test "$prc" -eq 0
check "sigkill: program output unchanged" cmp -s plain.out k.out

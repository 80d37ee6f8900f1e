#!/usr/bin/env bash
# probe_agent_time.sh — time and assert probes on the agent engine (issue
# 12): the hits timed and the assertions evaluated inside the program.
# Expected values are the program's own (tests/progs/probe_agent_time.c
# prints its calls and its failures on stdout, and the bounds of the
# intervals it measures with its own clock on stderr); --engine=ptrace on
# the same small run gives the same counts and fields (and the same JSON
# for assertions but the thread ids); SIGKILL of sonde with time and assert
# probes in leaves the program's output and status.
# test-timeout: 600
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"

src="$PROGS/probe_agent_time.c"
CHK=$(grep -n 'MARK_CHECK' "$src" | cut -d: -f1)
# val NAME FILE: the number after NAME on the program's stdout, or its stderr line
val() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' "$2"; }

for cc in gcc clang; do
	if ! command -v $cc >/dev/null; then
		skip "$cc: agent time probes" "$cc not installed"
		continue
	fi
	$cc -O2 -g -pthread -I"$PROGS" -o pt.$cc "$src" || { notok "$cc build" "$cc failed"; continue; }
	./pt.$cc 8 20000 > plain.$cc.out 2> /dev/null
	plain_rc=$?
	calls=$(val mark_a plain.$cc.out)
	check "$cc: plain run: 8 x 20000 calls, status 3" test "$calls" = 160000 -a "$plain_rc" -eq 3

	# --- launched, 8 threads: three time probes (mark_b's shares its site
	# with a func probe placed first, check's with a func probe placed after)
	"$SONDE" probe --format=json -o l.$cc.json -e func:mark_b -e time:mark_a -e time:mark_b -e time:check \
		-e func:check -- ./pt.$cc 8 20000 > l.$cc.out 2> l.$cc.err
	rc=$?
	check "$cc: launch: sonde exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { cat l.$cc.err; continue; }
	check "$cc: launch: program output unchanged" cmp -s plain.$cc.out l.$cc.out
	check "$cc: launch: exit status kept, engine agent" jq_py l.$cc.json \
		"t=d['target']; assert t['exit_status'] == 3 and t['engine'] == 'agent', t"
	check "$cc: time probes count every hit, mark_b's and check's intervals in every thread" jq_py l.$cc.json \
		"a,b,c=[p for p in d['probes'] if p['kind'] == 'time']; assert a['hits'] == b['hits'] == c['hits'] == $calls, d; assert 'interval_from' not in a and b['interval_from'] == a['id'] and c['interval_from'] == b['id'], d; assert b['intervals'] == c['intervals'] == $calls, d; assert sum(h['count'] for h in b['histogram']) == $calls, b"
	check "$cc: func probes sharing the time sites count every call" jq_py l.$cc.json \
		"f=[p for p in d['probes'] if p['kind'] == 'func']; assert all(p['calls'] == p['returns'] == $calls for p in f), f"
	# The interval from mark_a's entry to mark_b's lies between what the
	# program measured inside it and around it (1% for the clock's conversion).
	read -r imin isum omax osum <<<"$(awk '{print $2, $4, $6, $8}' l.$cc.err | tail -1)"
	check "$cc: intervals within the program's own bounds (min >= $imin, max <= $omax, total in [$isum, $osum])" jq_py l.$cc.json \
		"b=[p for p in d['probes'] if p['kind'] == 'time'][1]; assert b['min_ns'] >= $imin * 0.99 and b['max_ns'] <= $omax * 1.01 and $isum * 0.99 <= b['total_ns'] <= $osum * 1.01 and b['min_ns'] <= b['avg_ns'] <= b['max_ns'], b"
	check "$cc: first and last hits inside the session" jq_py l.$cc.json \
		"a,b=[p for p in d['probes'] if p['kind'] == 'time'][:2]; assert 0 < a['first_ns'] <= b['first_ns'] <= b['last_ns'] <= d['target']['probed_ns'] and a['last_ns'] <= b['last_ns'], (a, b)"

	# --- assertions, 8 threads: failures exactly as the program counts them
	f7=$(val fail7 plain.$cc.out)
	f5=$(val fail5 plain.$cc.out)
	"$SONDE" probe --format=json -o as.$cc.json -e 'assert:check:i % 7 != 3' -e "assert:probe_agent_time.c:$CHK:i % 5 != 0 || k == 2" \
		-e 'assert:check:i / (k - 1) >= 0' -e 'time:check' -- ./pt.$cc 8 20000 > as.$cc.out 2> as.$cc.err
	rc=$?
	check "$cc: assert: sonde exits 0, output unchanged, engine agent" test "$rc" -eq 0 -a "$(jq_py as.$cc.json "print(d['target']['engine'])")" = agent
	check "$cc: assert: program output unchanged" cmp -s plain.$cc.out as.$cc.out
	check "$cc: assert i % 7 != 3: $f7 failures of $calls, as the program counts" jq_py as.$cc.json \
		"p=d['probes'][0]; assert (p['evaluated'], p['failures'], p['passes'], p['unavailable']) == ($calls, $f7, $calls - $f7, 0), p; assert len(p['first_failures']) == 5 and all(int(f.split('i=')[1]) % 7 == 3 for f in p['first_failures']), p"
	check "$cc: assert with || at a line: $f5 failures, the values of both variables (k only when read)" jq_py as.$cc.json \
		"p=d['probes'][1]; assert (p['evaluated'], p['failures']) == ($calls, $f5), p; import re; fs=[re.fullmatch(r'tid [0-9]+: i=(-?[0-9]+) k=(-?[0-9]+)', f) for f in p['first_failures']]; assert len(fs) == 5 and all(m and int(m[1]) % 5 == 0 and int(m[2]) != 2 for m in fs), p"
	# k == 1 divides by zero (unavailable, as on ptrace); k == 0 fails for i >= 1
	check "$cc: assert with a division: by zero unavailable and said, the rest exact" jq_py as.$cc.json \
		"p=d['probes'][2]; assert (p['evaluated'], p['failures'], p['unavailable']) == ($calls - 20000, 19999, 20000) and p['unavailable_why'] == 'division by zero', p"
	check "$cc: assert: a time probe sharing the site counts every hit" jq_py as.$cc.json \
		"p=d['probes'][3]; assert p['hits'] == $calls, p"

	# --- a floating-point constant runs on the agent (tests/e2e/probe_float.sh); % of a
	# floating value does not: every probe goes to ptrace, said
	"$SONDE" probe --format=json -o fl.$cc.json -e 'assert:check:i * 1.5 >= 0' -e time:mark_a -- ./pt.$cc 1 100 > /dev/null 2> fl.$cc.err
	check "$cc: float constant in an assert: on the agent" jq_py fl.$cc.json \
		"assert d['target']['engine'] == 'agent' and d['probes'][0]['evaluated'] == 100 and d['probes'][1]['hits'] == 100, d"
	"$SONDE" probe --format=json -o fm.$cc.json -e 'assert:check:i % 1.5 >= 0' -e time:mark_a -- ./pt.$cc 1 100 > /dev/null 2> fm.$cc.err
	check "$cc: % of a float: falls back to ptrace" jq_py fm.$cc.json \
		"assert d['target']['engine'] == 'ptrace' and d['probes'][0]['unavailable'] == 100 and d['probes'][1]['hits'] == 100, d"
	check "$cc: % of a float: the reason said on stderr" grep -q 'cannot run on the agent (% of floating-point values)' fm.$cc.err
	"$SONDE" probe --engine=agent -e 'assert:check:i % 1.5 >= 0' -- ./pt.$cc 1 100 > /dev/null 2> fa.$cc.err
	check "$cc: % of a float with --engine=agent: usage error (1), said" test $? -eq 1 -a -n "$(grep 'floating-point' fa.$cc.err)"

	# --- --engine=ptrace on the same small run: the same counts and fields
	"$SONDE" probe --format=json -o aa.$cc.json -e 'assert:check:i % 7 != 3' -e "assert:probe_agent_time.c:$CHK:i % 5 != 0 || k == 2" \
		-e 'assert:check:i / (k - 1) >= 0' -- ./pt.$cc 1 300 > /dev/null 2>&1
	"$SONDE" probe --engine=ptrace --format=json -o pa.$cc.json -e 'assert:check:i % 7 != 3' -e "assert:probe_agent_time.c:$CHK:i % 5 != 0 || k == 2" \
		-e 'assert:check:i / (k - 1) >= 0' -- ./pt.$cc 1 300 > /dev/null 2>&1
	check "$cc: assert: agent and ptrace engines give the same JSON (but the thread ids)" python3 - aa.$cc.json pa.$cc.json <<'PY'
import json, re, sys
a, p = (json.load(open(f)) for f in sys.argv[1:3])
assert a['target']['engine'] == 'agent' and p['target']['engine'] == 'ptrace', (a['target'], p['target'])
for x, y in zip(a['probes'], p['probes']):
    for k in ('sites', 'int3_sites', 'int3_reason'):
        x.pop(k, None)
    for z in (x, y):
        z['first_failures'] = [re.sub(r'^tid [0-9]+', 'tid T', f) for f in z['first_failures']]
    assert x == y, (x, y)
PY
	# The table says the same.
	"$SONDE" probe -o at.$cc.txt -e 'assert:check:i % 7 != 3' -- ./pt.$cc 1 300 > /dev/null 2>&1
	"$SONDE" probe --engine=ptrace -o pt.$cc.txt -e 'assert:check:i % 7 != 3' -- ./pt.$cc 1 300 > /dev/null 2>&1
	small7=$(./pt.$cc 1 300 2> /dev/null | awk '$1 == "fail7" {print $2}')
	check "$cc: assert: the table says 'failures $small7 of 300' as the ptrace engine does" \
		test "$(grep -o "failures $small7 of 300.*" at.$cc.txt | sed 's/tid [0-9]*/tid T/')" = "$(grep -o 'failures .*' pt.$cc.txt | sed 's/tid [0-9]*/tid T/')"

	# --- --engine=ptrace on the same small run: the same counts and fields
	specs=(-e time:mark_a -e time:mark_b -e time:check)
	"$SONDE" probe --format=json -o a.$cc.json "${specs[@]}" -- ./pt.$cc 2 300 > /dev/null 2>&1
	"$SONDE" probe --engine=ptrace --format=json -o p.$cc.json "${specs[@]}" -- ./pt.$cc 2 300 > /dev/null 2>&1
	check "$cc: agent and ptrace engines: same hits, intervals and fields" python3 - a.$cc.json p.$cc.json <<'PY'
import json, sys
a, p = (json.load(open(f)) for f in sys.argv[1:3])
assert a['target']['engine'] == 'agent' and p['target']['engine'] != 'agent', (a['target'], p['target'])
for x, y in zip(a['probes'], p['probes']):
    assert x['spec'] == y['spec'] and x['hits'] == y['hits'] == 600, (x, y)
    assert x.get('intervals') == y.get('intervals') and x.get('interval_from') == y.get('interval_from'), (x, y)
    assert set(x) - {'sites', 'int3_sites', 'int3_reason'} == set(y), (sorted(x), sorted(y))
    assert x['where'] == y['where'], (x['where'], y['where'])
PY
done

# --- interactive: time and assert probes added while the program runs; the
# first time probe deleted: the second stops measuring from it (as on ptrace)
pt=./pt.gcc
[ -x "$pt" ] || pt=./pt.clang
(sleep 0.3; echo 'add time:mark_b'; echo 'add assert:check:i % 7 != 3'; sleep 0.5; echo list; sleep 0.3
 echo 'del 1'; sleep 1; echo list; echo quit) |
	"$SONDE" probe --interactive --format=json -o int.json -e time:mark_a -- $pt 2 1500000 > int.out 2> int.err
check "interactive: engine agent, each interval from a distinct hit of the deleted probe, none after it went" jq_py int.json \
	"a,b,c=d['probes']; assert d['target']['engine'] == 'agent' and a['state'] == 'deleted' and b['interval_from'] == 1, d; assert 0 < b['intervals'] <= a['hits'] and b['intervals'] < b['hits'], (a, b)"
check "interactive: the assertion added later fails on 1 i in 7 (i counts up from 0 in each thread)" jq_py int.json \
	"c=d['probes'][2]; assert c['evaluated'] > 7000 and abs(c['failures'] - c['evaluated'] / 7) <= 2 * 2, c"
# (the program runs on at quit: a probe's evaluations are read before its hits)
check "interactive: list's counts are not added twice" jq_py int.json \
	"a,b,c=d['probes']; assert c['evaluated'] <= c['hits'] <= c['evaluated'] * 1.01 + 10 and a['hits'] <= 2 * 1500000, d"

# --- probes sharing one site (time and assert records chained to the func
# probe's site): deleting the func probe (the site's first) or a record in
# the middle of the chain loses none of the others' hits; the program ends
# by itself, so the counts are exact
calls_s=$($pt 2 600000 2> /dev/null | awk '$1 == "mark_b" {print $2}')
for del in 1 3; do
	# stdin stays open until the program has ended (sonde ends with it); a
	# pipeline would wait for the writer's whole 60 s
	exec {feed}< <(sleep 0.3; echo "del $del"; exec sleep 60)
	feeder=$!
	timeout 120 "$SONDE" probe --interactive --format=json -o sh$del.json \
		-e func:mark_b -e time:mark_a -e time:mark_b -e 'assert:mark_b:i >= 0' -- $pt 2 600000 > sh$del.out 2> sh$del.err <&$feed
	exec {feed}<&-
	kill "$feeder" 2>/dev/null
	check "shared site, del $del: every other probe counts all $calls_s calls" jq_py sh$del.json \
		"ps=d['probes']; gone=ps[$del - 1]; rest=[p for p in ps if p is not gone]; assert gone['state'] == 'deleted' and gone['hits'] < $calls_s, gone; assert all(p['hits'] == $calls_s for p in rest), rest; assert ps[3]['evaluated'] == ps[3]['passes'] == $calls_s, ps[3]"
done

# --- SIGKILL of sonde with time and assert probes in: the program finishes with its
# normal output and status, 5 rounds attached, 5 launched
$pt 4 200000 > plain_k.out 2> /dev/null
kspecs=(-e time:mark_a -e time:mark_b -e func:check -e time:check -e 'assert:check:i % 7 != 3' -e "assert:probe_agent_time.c:$CHK:i / (k - 1) >= 0")
for r in 1 2 3 4 5; do
	rm -f "go.k$r"
	($pt 4 200000 "go.k$r" > "k$r.out" 2> /dev/null; echo "status $?" >> "k$r.out") &
	runner=$!
	for _ in $(seq 200); do grep -q '^ready' "k$r.out" 2>/dev/null && break; sleep 0.02; done
	pid=$(awk '$1 == "ready" {print $2}' "k$r.out")
	"$SONDE" probe -p "$pid" -o /dev/null "${kspecs[@]}" 2> "k$r.err" &
	sonde_pid=$!
	for _ in $(seq 500); do grep -q '^sonde: probes in process' "k$r.err" && break; sleep 0.02; done
	sigkill_attached "$r" "k$r" 0.$((r * 2)) plain_k.out
	sigkill_launched "sigkill $r (launched): program finished with its normal output" "kl$r.out" 0.$((r * 2 + 1)) fail5 \
		plain_k.out -- -o /dev/null "${kspecs[@]}" -- $pt 4 200000
done

#!/usr/bin/env bash
# probe_stack_sqlite.sh — stack probes on the agent on a real program:
# SQLite's speedtest1 (gcc -O2, no frame pointers; cached in
# SONDE_TEST_CACHE as probe_agent_realprogs.sh builds it), stack:sqlite3VdbeExec.
# Each stack is walked inside the program with sonde's unwind table; none
# lost; the hits are gdb's count of the same run, and gdb's stack at a
# sample of the hits (tests/tools/gdb_stacks.py: a breakpoint at the
# function's first instruction, the physical frames of hits 1, 2, 50, ...)
# is one of sonde's stacks, frame for frame.  Both run with the address
# space not randomized (setarch -R); the program's own frames are compared
# by address, the C library's by their offset in the page (sonde's agent,
# loaded in the program, moves the libraries' base).  Output unchanged.
# test-timeout: 900
source "$ROOT/tests/lib.sh"
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}

if ! command -v gdb >/dev/null; then
	skip "sqlite stacks" "gdb not installed (it gives the expected stacks)"
elif ! command -v setarch >/dev/null; then
	skip "sqlite stacks" "setarch not installed"
elif ! sh "$ROOT/tools/fetch-src.sh" sqlite3 "$cache/src" > fetch.log 2>&1; then
	skip "sqlite stacks" "could not fetch sqlite3 ($(tail -1 fetch.log))"
else
	dir=$cache/sqlite-plain
	if real_build sqlite-plain sqlite cc; then
		st="$dir/speedtest1 --size 2 --testset main"
		fn=sqlite3VdbeExec
		setarch "$(uname -m)" -R $st > sq.plain 2>&1; prc=$?
		GS_FUNC=$fn GS_SAMPLES=1,2,50,300,1000,2500,5000,7500,10000,12500,15000,17500,20000 GS_OUT=sq.gdb \
			gdb -q -batch -x "$ROOT/tests/tools/gdb_stacks.py" --args $st > sq.gdb.log 2>&1
		setarch "$(uname -m)" -R "$SONDE" probe --format=json -o sq.json -e "stack:$fn" -- $st > sq.out 2> sq.err
		rc=$?
		check "sqlite: sonde exits 0, the program as without it" test "$rc" -eq 0 -a "$prc" -eq 0
		sed -E -n 's/^ *([0-9]+ - .*[^.])\.*  *[0-9.]+s$/\1/p' sq.plain > sq.plain.tests
		sed -E -n 's/^ *([0-9]+ - .*[^.])\.*  *[0-9.]+s$/\1/p' sq.out > sq.tests
		check "sqlite: the same $(wc -l < sq.plain.tests) tests ran" \
			sh -c "[ $(wc -l < sq.plain.tests) -gt 10 ] && cmp -s sq.plain.tests sq.tests"
		check "sqlite: gdb stopped at 13 sampled hits" test "$(grep -c '^stack ' sq.gdb)" -eq 13
		check "sqlite: stack:$fn, gdb's hit count, every stack walked in the program, none lost" jq_py sq.json \
			"p = d['probes'][0]; want = int(open('sq.gdb').read().split('hits ')[1])
assert d['target']['engine'] == 'agent' and p['hits'] == want > 10000 and p['walked'] == want and p['copied'] == 0 and p['lost'] == 0 and sum(s['count'] for s in p['stacks']) + p['other'] == want, (want, {k: v for k, v in p.items() if k != 'stacks'})"
		check "sqlite: gdb's stack at each sampled hit is one of sonde's, frame for frame" python3 - sq.gdb sq.json <<'PY'
import json, sys
def key(a):
    a = int(a, 16)
    return ('lib', a & 0xfff) if a >= 0x7f0000000000 else ('exe', a)
mine = {tuple(key(f['addr']) for f in s['frames']) for s in json.load(open(sys.argv[2]))['probes'][0]['stacks']}
n = 0
for l in open(sys.argv[1]):
    w = l.split()
    if w[0] != 'stack':
        continue
    g = tuple(key(x.split(':')[0]) for x in w[2:])
    assert len(g) >= 5 and g in mine, ('hit', w[1], w[2:], sorted(mine)[:3])
    n += 1
assert n == 13, n
PY
	else
		notok "sqlite builds with gcc" "$(tail -3 build-sqlite-plain.log)"
	fi
fi

#!/usr/bin/env bash
# probe_float.sh — floating-point var probes on the agent engine (the
# default): a double and a float in xmm registers (scale's arguments at its
# entry), through a jump site and through an int3 site (the SIGTRAP
# handler reads them from the signal frame), a double in memory (a global);
# the numbers the program prints of its own values, and the same JSON as
# --engine=ptrace; 8 threads exact; --record writes the values; the
# program's own floating-point results unchanged (the agent saves the x87 /
# SSE state around its float code); assertions with floating point, the same
# as ptrace; % of a double stays on ptrace.
source "$ROOT/tests/lib.sh"

src="$PROGS/probe_float.c"
gcc -O2 -g -o pf "$src" -lpthread || { notok build "gcc failed"; exit 0; }
L_MEM=$(grep -n '/\* MARK_MEM' "$src" | head -1 | cut -d: -f1)

# The program's own numbers: "d count N min 0 max M sum S" (and f).
prog_is() { # JSON SPEC-SUFFIX NAME PROGRAM-OUTPUT
	python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = [x for x in d["probes"] if x["spec"].endswith(sys.argv[2])][0]
w = [l.split() for l in open(sys.argv[4]) if l.startswith(sys.argv[3] + " ")][0]
want = {"count": int(w[2]), "min": float(w[4]), "max": float(w[6]), "sum": float(w[8])}
got = {k: p[k] for k in want}
assert p["type"] == "float" and got == want and p["unavailable"] == 0, (got, want, p)
PY
}

./pf 1 1000 > plain.out
"$SONDE" probe --format=json -o a.json -e var:scale:d -e var:scale:f -e "var:probe_float.c:$L_MEM:g_last" \
	-- ./pf 1 1000 > a.out 2> a.err
check "agent: exits 0" test $? -eq 0
check "agent: ran on the agent" jq_py a.json "assert d['target']['engine'] == 'agent', d['target']"
check "agent: program output unchanged (its floating-point results too)" cmp -s plain.out a.out
check "agent: double in xmm0: the program's count/min/max/sum" prog_is a.json ':d' d plain.out
check "agent: float in xmm1: the program's count/min/max/sum" prog_is a.json ':f' f plain.out
"$SONDE" probe --engine=ptrace --format=json -o p.json -e var:scale:d -e var:scale:f \
	-e "var:probe_float.c:$L_MEM:g_last" -- ./pf 1 1000 > /dev/null 2>&1
check "agent and ptrace: the same numbers (registers and memory)" python3 - a.json p.json <<'PY'
import json, sys
a, p = (json.load(open(f)) for f in sys.argv[1:3])
assert p['target']['engine'] != 'agent'
keys = ('type', 'count', 'min', 'max', 'sum', 'mean', 'last', 'unavailable', 'histogram')
assert len(a['probes']) == len(p['probes']) == 3
for x, y in zip(a['probes'], p['probes']):
    assert x['spec'] == y['spec'] and x['count'] == 1000, x
    assert all(x.get(k) == y.get(k) for k in keys), (x['spec'], {k: (x.get(k), y.get(k)) for k in keys if x.get(k) != y.get(k)})
PY

# int3: a probe inside the entry's jump makes the entry site an int3
"$SONDE" probe --format=json -o i.json -e var:scale:d -e var:scale:f -e func:scale+4 -- ./pf 1 1000 > i.out 2>&1
if jq_py i.json "assert d['probes'][0]['int3_sites'] == 1" 2>/dev/null; then
	check "int3: double from the signal frame: the program's numbers" prog_is i.json ':d' d plain.out
	check "int3: float from the signal frame: the program's numbers" prog_is i.json ':f' f plain.out
else
	skip "int3: floats from the signal frame" "scale+4 is not inside the entry's jump with this compiler"
fi

# 8 threads x 100000 calls: every value counted exactly
./pf 8 100000 > plain8.out
"$SONDE" probe --format=json -o t.json -e var:scale:d -e var:scale:f -- ./pf 8 100000 > t.out 2> t.err
check "8 threads: program output and status unchanged" cmp -s plain8.out t.out
check "8 threads: double: the program's count/min/max/sum" prog_is t.json ':d' d plain8.out
check "8 threads: float: the program's count/min/max/sum" prog_is t.json ':f' f plain8.out

# --record: the values on the timeline, as doubles
"$SONDE" probe -o rec --record -e var:scale:f -- ./pf 1 300 > /dev/null 2> rec.err
check "record: exits 0" test $? -eq 0
"$SONDE" export -i rec --format=chrome -o rec.json
check "record: one instant per call with the float's value, in order" jq_py rec.json \
	"v=[e['args']['value'] for e in d['traceEvents'] if e.get('cat')=='probe']; assert v == [i * 0.25 for i in range(300)], v[:5]"

# assertions with floating point (long double constants, float and double
# variables, expr.c's promotions): d = i/2, f = i/4 for i = 0..999
aspecs=(-e 'assert:scale:d < 200.25' -e 'assert:scale:d - f < 100' -e 'assert:scale:d / f > 1.5' -e 'assert:scale:-f <= 0 && d * 2 == f * 4')
"$SONDE" probe --format=json -o as.json "${aspecs[@]}" -- ./pf 1 1000 > /dev/null 2> as.err
check "asserts with floats: on the agent" jq_py as.json "assert d['target']['engine'] == 'agent', d['target']"
check "asserts with floats: the program's counts" jq_py as.json "
p = d['probes']
assert (p[0]['evaluated'], p[0]['failures']) == (1000, 599), p[0]   # i > 400
assert (p[1]['evaluated'], p[1]['failures']) == (1000, 600), p[1]   # i >= 400
assert p[1]['first_failures'][0].endswith('d=200 f=100'), p[1]
assert (p[2]['evaluated'], p[2]['failures'], p[2]['unavailable'], p[2]['unavailable_why']) == (999, 0, 1, 'division by zero'), p[2]  # i = 0: 0 / 0
assert (p[3]['evaluated'], p[3]['failures']) == (1000, 0), p[3]"
"$SONDE" probe --engine=ptrace --format=json -o asp.json "${aspecs[@]}" -- ./pf 1 1000 > /dev/null 2>&1
check "asserts with floats: the same JSON as --engine=ptrace (but the thread ids)" python3 - as.json asp.json <<'PY'
import json, re, sys
a, p = (json.load(open(f)) for f in sys.argv[1:3])
keys = ('spec', 'hits', 'evaluated', 'failures', 'passes', 'unavailable', 'unavailable_why', 'first_failures')
tid = lambda v: [re.sub(r'^tid \d+', 'tid', s) for s in v] if isinstance(v, list) else v
for x, y in zip(a['probes'], p['probes']):
    assert all(tid(x.get(k)) == tid(y.get(k)) for k in keys), (x['spec'], {k: (x.get(k), y.get(k)) for k in keys if tid(x.get(k)) != tid(y.get(k))})
PY
"$SONDE" probe -o arec --record -e 'assert:scale:d - f < 100' -- ./pf 1 1000 > /dev/null 2>&1
"$SONDE" probe --engine=ptrace -o prec --record -e 'assert:scale:d - f < 100' -- ./pf 1 1000 > /dev/null 2>&1
"$SONDE" export -i arec --format=chrome -o arec.json
"$SONDE" export -i prec --format=chrome -o prec.json
check "asserts with floats: --record: pass / fail with the values, the same on both engines" python3 - arec.json prec.json <<'PY'
import json, sys
a, p = ([e['args']['value'] for e in json.load(open(f))['traceEvents'] if e.get('cat') == 'probe'] for f in sys.argv[1:3])
assert a == p and len(a) == 1000 and a[399] == 'pass' and a[400] == 'fail: d=200 f=100', (a[398:402], len(a), len(p))
PY
"$SONDE" probe --engine=agent -e 'assert:scale:d % 2 == 0' -- ./pf 1 100 > /dev/null 2> as2.err
check "assert with % of a double, --engine=agent: usage error, says why" test $? -eq 1 -a -n "$(grep 'floating-point' as2.err)"

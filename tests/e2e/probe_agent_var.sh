#!/usr/bin/env bash
# probe_agent_var.sh — var probes on the agent engine (issue 12): the
# variable's DWARF location compiled by sonde into the agent's bytecode and
# evaluated inside the program at each hit.  Expected values are the
# program's own (it computes the same count/min/max/sum of what each probe
# sees, tests/progs/probe_agent_var.c); --engine=ptrace reads the same run
# side by side; SIGKILL of sonde leaves the program's output and status.
# test-timeout: 600
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"

src="$PROGS/probe_agent_var.c"
MEM=$(grep -n 'MARK_MEM' "$src" | cut -d: -f1)

# stats NAME FILE: "count min max sum" of the program's own line for NAME
stats() { awk -v v="$1" '$1 == v && $2 == "count" {print $3, $5, $7, $9}' "$2"; }
# same_stats TAG JSON SPEC_SUFFIX NAME PLAINFILE [UNAVAILABLE]
same_stats() {
	local n mn mx sm
	read -r n mn mx sm <<<"$(stats "$4" "$5")"
	check "$1: var $3 count/min/max/sum equal the program's ($n $mn $mx $sm)" jq_py "$2" \
		"p=[p for p in d['probes'] if p['spec'].endswith('$3')][0]; assert (p['count'],p['min'],p['max'],p['sum'],p['unavailable'])==($n,$mn,$mx,$sm,${6:-0}), p"
}

for cc in gcc clang; do
	if ! command -v $cc >/dev/null; then
		skip "$cc: agent var probes" "$cc not installed"
		continue
	fi
	$cc -O2 -g -pthread -I"$PROGS" -o pv.$cc "$src" || { notok "$cc build" "$cc failed"; continue; }
	./pv.$cc 8 250000 > plain.$cc.out
	plain_rc=$?
	calls=$(stats x plain.$cc.out | cut -d' ' -f1)
	nulls=$(awk '$1 == "nulls" {print $2}' plain.$cc.out)
	check "$cc: plain run: 8 x 250000 calls, status 3" test "$calls" = 2000000 -a "$plain_rc" -eq 3

	# --- launched, 8 threads: func, line and var probes on the agent
	"$SONDE" probe --format=json -o l.$cc.json -e func:step -e var:step:x \
		-e "var:probe_agent_var.c:$MEM:mem" -e "var:probe_agent_var.c:$MEM:scale" \
		-e "var:probe_agent_var.c:$MEM:gone" -e "line:probe_agent_var.c:$MEM" -e 'var:peek:*p' \
		-- ./pv.$cc 8 250000 > l.$cc.out 2> l.$cc.err
	rc=$?
	check "$cc: launch: sonde exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { cat l.$cc.err; continue; }
	check "$cc: launch: program output unchanged" cmp -s plain.$cc.out l.$cc.out
	check "$cc: launch: exit status kept, engine agent" jq_py l.$cc.json \
		"t=d['target']; assert t['exit_status'] == 3 and t['engine'] == 'agent', t"
	check "$cc: func counts every call" jq_py l.$cc.json \
		"p=d['probes'][0]; assert p['calls'] == p['returns'] == $calls, p"
	same_stats "$cc" l.$cc.json ':x' x plain.$cc.out
	same_stats "$cc" l.$cc.json ':mem' mem plain.$cc.out
	same_stats "$cc" l.$cc.json ':scale' scale plain.$cc.out
	same_stats "$cc" l.$cc.json ':*p' deref plain.$cc.out "$nulls"
	check "$cc: *p through NULL: a counted read error, said" jq_py l.$cc.json \
		"p=[p for p in d['probes'] if p['spec'].endswith('*p')][0]; assert 'cannot read memory' in p['unavailable_why'], p"
	check "$cc: line probe sharing the var sites counts every pass" jq_py l.$cc.json \
		"p=[p for p in d['probes'] if p['kind'] == 'line'][0]; assert p['hits'] == $calls, p"
	if jq_py l.$cc.json "p=[p for p in d['probes'] if p['spec'].endswith(':gone')][0]; assert 'optimized out' in p['where'], p" 2>/dev/null; then
		check "$cc: an optimized-out variable: every hit unavailable, said" jq_py l.$cc.json \
			"p=[p for p in d['probes'] if p['spec'].endswith(':gone')][0]; assert p['count'] == 0 and p['unavailable'] == $calls and 'optimized out' in p['unavailable_why'], p"
	else
		skip "$cc: an optimized-out variable" "$cc kept a location for 'gone'"
	fi
	# The register and frame-base paths: what the compiler chose, said.
	jq_py l.$cc.json "p=[p for p in d['probes'] if p['spec'].endswith(':x')][0]; assert 'register' in p['where'], p" 2>/dev/null &&
		ok "$cc: x is read from a register" || skip "$cc: x is read from a register" "$cc put it elsewhere"

	# --- int3 sites: twice() is lea (4 bytes) + ret; a probe at the ret lies
	# inside the entry's jump, which becomes an int3: the SIGTRAP handler's
	# registers (from the ucontext) give the same values
	first=$(objdump -d --no-show-raw-insn pv.$cc | awk '/<twice>:/ {f=1; next} f {print $2; exit}')
	if [ "$first" = lea ] && objdump -d pv.$cc | awk '/<twice>:/ {f=1; next} f {print; exit}' | grep -q '^ *[0-9a-f]*:\s\([0-9a-f][0-9a-f] \)\{4\}\s'; then
		"$SONDE" probe --format=json -o i.$cc.json -e var:twice:v -e func:twice+4 -- ./pv.$cc 8 250000 > i.$cc.out 2>&1
		same_stats "$cc: int3" i.$cc.json ':v' x plain.$cc.out
		check "$cc: int3: the var site is an int3, said" jq_py i.$cc.json \
			"p=d['probes'][0]; assert p['int3_sites'] == 1 and 'inside its jump' in p['int3_reason'], p"
	else
		skip "$cc: var probe on an int3 site" "twice() does not start with a 4-byte lea here"
	fi

	# --- attached before the threads start: exact
	rm -f go.a.$cc
	(./pv.$cc 4 100000 go.a.$cc > a.$cc.out; echo "status $?" >> a.$cc.out) &
	runner=$!
	for _ in $(seq 200); do grep -q '^ready' a.$cc.out 2>/dev/null && break; sleep 0.02; done
	pid=$(awk '$1 == "ready" {print $2}' a.$cc.out)
	probe_attached "$pid" att.$cc.err --format=json -o att.$cc.json -e var:step:x -e "var:probe_agent_var.c:$MEM:mem"
	touch go.a.$cc
	wait "$sonde_pid"
	wait "$runner"
	check "$cc: attach: program status kept" grep -qx "status 3" a.$cc.out
	same_stats "$cc: attach" att.$cc.json ':x' x a.$cc.out
	same_stats "$cc: attach" att.$cc.json ':mem' mem a.$cc.out

	# --- --engine=ptrace on the same run gives the same numbers (smaller: ptrace stops per hit)
	./pv.$cc 2 3000 > small.$cc.out
	specs=(-e var:step:x -e "var:probe_agent_var.c:$MEM:mem" -e "var:probe_agent_var.c:$MEM:scale" -e 'var:peek:*p')
	"$SONDE" probe --format=json -o a.$cc.json "${specs[@]}" -- ./pv.$cc 2 3000 > /dev/null 2>&1
	"$SONDE" probe --engine=ptrace --format=json -o p.$cc.json "${specs[@]}" -- ./pv.$cc 2 3000 > /dev/null 2>&1
	check "$cc: agent and ptrace engines: same count/min/max/sum/histogram/unavailable" python3 - a.$cc.json p.$cc.json <<'PY'
import json, sys
a, p = (json.load(open(f)) for f in sys.argv[1:3])
assert a['target']['engine'] == 'agent' and p['target']['engine'] != 'agent', (a['target'], p['target'])
keys = ('count', 'min', 'max', 'sum', 'unavailable', 'histogram')
for x, y in zip(a['probes'], p['probes']):
    assert x['spec'] == y['spec'] and x['count'] > 0
    assert all(x[k] == y[k] for k in keys), (x['spec'], {k: (x[k], y[k]) for k in keys if x[k] != y[k]})
PY
done

# --- SIGKILL of sonde with func, line and var probes in: the program
# finishes with its normal output and status, 5 rounds attached, 5 launched
pv=./pv.gcc
[ -x "$pv" ] || pv=./pv.clang
$pv 4 3000000 > plain_k.out
kspecs=(-e func:step -e var:step:x -e "var:probe_agent_var.c:$MEM:mem" -e "line:probe_agent_var.c:$MEM" -e 'var:peek:*p')
for r in 1 2 3 4 5; do
	rm -f "go.k$r"
	($pv 4 3000000 "go.k$r" > "k$r.out"; echo "status $?" >> "k$r.out") &
	runner=$!
	for _ in $(seq 200); do grep -q '^ready' "k$r.out" 2>/dev/null && break; sleep 0.02; done
	pid=$(awk '$1 == "ready" {print $2}' "k$r.out")
	probe_attached "$pid" "k$r.err" -o /dev/null "${kspecs[@]}"
	sigkill_attached "$r" "k$r" 0.$((r * 2)) plain_k.out
	# launched: the program is sonde's child; its status goes through a shell around it
	sigkill_launched "sigkill $r (launched): program finished with its normal output" "kl$r.out" 0.$((r * 2 + 1)) total \
		plain_k.out -- -o /dev/null "${kspecs[@]}" -- $pv 4 3000000
done

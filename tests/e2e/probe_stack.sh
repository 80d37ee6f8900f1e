#!/usr/bin/env bash
# probe_stack.sh — stack:LOCATION: the call stacks of a function called from
# three call paths (tests/progs/stack_paths.c prints how many times each
# ran), unwound at each hit and counted per distinct stack, built with gcc
# -O0 and -O2 and clang -O2; the caller chains and their call lines come from
# the program's source, one stack is compared with gdb's bt.  Program output
# unchanged; bounds (frames cut at 32); threads, launched and attached; bad
# input and remote targets are clear errors.  Every check runs on both
# engines with the same expected values: the agent (the default: the program
# walks its stack at each hit with sonde's unwind table, every stack here;
# and with --stack-unwind=copy ("copy" below) it copies its stack at each
# hit and sonde unwinds the copies; none lost here) and --engine=ptrace (the
# stopped thread unwound); SIGKILL of sonde with a stack probe in on the
# agent leaves the program's output and status as they were.  Builds with and
# without frame pointers.  tests/progs/stack_walk.c: a caller whose frame
# rule the walk does not follow (a DWARF expression) has its stacks copied
# and unwound by sonde, counted as copied, the same as gdb's bt; a damaged
# frame (its CFA rule wrong) is refused by the walk, copied, the program
# unharmed.
source "$ROOT/tests/lib.sh"

src="$PROGS/stack_paths.c"
line_of() { grep -n -F "$1" "$src" | head -1 | cut -d: -f1; }
# The source line of each call: where a caller's frame must point.
L_A=$(line_of "return leaf(x) + 1;"); L_MID=$(line_of "return leaf(x) + 2;")
L_B=$(line_of "return middle(x) + 3;"); L_DEEP=$(line_of "return leaf(x) + 4;")
L_M2=$(line_of "return deeper(x) + 5;"); L_C=$(line_of "return middle2(x) + 6;")
L_MA=$(line_of "sum += path_a(i);"); L_MB=$(line_of "sum += path_b(i);"); L_MC=$(line_of "sum += path_c(i);")

builds=("gcc -O0" "gcc -O2" "gcc -O2 -fno-omit-frame-pointer")
if command -v clang > /dev/null; then builds+=("clang -O0" "clang -O2"); else skip "clang builds" "clang not installed"; fi
for b in "${builds[@]}"; do
	tag=${b// /}
	$b -g -I"$PROGS" -o "sp$tag" "$src" || { notok "$b: build" "compiler failed"; continue; }
done
gcc -O2 -g -I"$PROGS" -o sp "$src"
gcc -O2 -g -pthread -o thr "$PROGS/probe_threads.c"
command -v gdb > /dev/null || skip "same stack as gdb's bt" "gdb not installed"

for E in agent copy ptrace; do
EF=()
ENG=$E
[ "$E" = ptrace ] && EF=(--engine=ptrace)
[ "$E" = copy ] && EF=(--stack-unwind=copy) && ENG=agent
# The engine that ran (the JSON's), and none of the agent's stacks lost: on
# the agent each one walked in the program (copy: each one copied).
engine_ok="t = d['target']; assert t['engine'] == '$ENG', t"
lost0="p = d['probes'][0]; assert p['lost'] == 0 and ('$E' == 'ptrace' or p['copy_bytes'] == 8192 and ('$E' == 'copy' and p['copied'] == p['hits'] and p['walked'] == 0 or '$E' == 'agent' and p['walked'] == p['hits'] and p['copied'] == 0)), p"

for b in "${builds[@]}"; do
	tag=${b// /}
	[ -x "sp$tag" ] || continue
	"./sp$tag" 4 6 9 > "plain$tag.out"; plain_rc=$?
	"$SONDE" probe "${EF[@]}" --format=json -o "$E$tag.json" -e stack:leaf -- "./sp$tag" 4 6 9 > "$E.probed$tag.out" 2> "$E$tag.err"
	rc=$?
	check "$E $b: probe exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || cat "$E$tag.err"
	check "$E $b: program output unchanged" cmp -s "plain$tag.out" "$E.probed$tag.out"
	check "$E $b: exit status kept" jq_py "$E$tag.json" "assert d['target']['exit_status'] == $plain_rc"
	check "$E $b: ran on the $ENG engine, no stack lost" jq_py "$E$tag.json" "$engine_ok
$lost0"
	# The counts the program printed, each on the chain its source calls leaf through.
	na=$(awk '$1=="path_a"{print $2}' "plain$tag.out"); nb=$(awk '$1=="path_b"{print $2}' "plain$tag.out")
	nc=$(awk '$1=="path_c"{print $2}' "plain$tag.out")
	want="{('leaf','path_a','main'): ($na, [$L_A, $L_MA]), ('leaf','middle','path_b','main'): ($nb, [$L_MID, $L_B, $L_MB]),
	       ('leaf','deeper','middle2','path_c','main'): ($nc, [$L_DEEP, $L_M2, $L_C, $L_MC])}"
	chains="
p = d['probes'][0]; want = $want
got = {}
for s in p['stacks']:
    names = [f['name'] for f in s['frames']]
    got[tuple(names[:names.index('main') + 1])] = s
"
	check "$E $b: exactly three distinct stacks, hits $((na + nb + nc))" jq_py "$E$tag.json" \
		"p = d['probes'][0]; assert p['distinct'] == 3 and len(p['stacks']) == 3 and p['hits'] == $na + $nb + $nc and p['other'] == 0 and p['truncated'] == 0, p"
	check "$E $b: each caller chain with the program's count" jq_py "$E$tag.json" \
		"$chains
assert set(got) == set(want), sorted(got)
for k, (n, lines) in want.items(): assert got[k]['count'] == n, (k, got[k]['count'], n)"
	check "$E $b: most frequent first" jq_py "$E$tag.json" \
		"c = [s['count'] for s in d['probes'][0]['stacks']]; assert c == sorted(c, reverse=True), c"
	check "$E $b: callers' frames at their call lines" jq_py "$E$tag.json" \
		"$chains
for k, (n, lines) in want.items():
    fr = got[k]['frames'][1:len(k)]
    assert [(f['file'], f['line']) for f in fr] == [('stack_paths.c', l) for l in lines], (k, fr, lines)"
	check "$E $b: frame 0 is leaf at the probed address" jq_py "$E$tag.json" \
		"s = d['probes'][0]['stacks']; assert len({x['frames'][0]['addr'] for x in s}) == 1 and s[0]['frames'][0]['name'] == 'leaf', s"
done

# Human table: the summary, each count then its frames one a line.
./sp 2 3 5 > plain.out
"$SONDE" probe "${EF[@]}" -e stack:leaf -- ./sp 2 3 5 > "$E.table.out" 2> "$E.table.err"
check "$E table: program output unchanged" cmp -s plain.out "$E.table.out"
check "$E table: 3 distinct stacks on the probe's row" grep -q "stack:leaf .* 3 distinct stacks" "$E.table.err"
check "$E table: the count 5 then leaf, deeper, middle2, path_c" python3 - "$E.table.err" "$L_DEEP" "$L_M2" "$L_C" <<'PY'
import sys
lines = open(sys.argv[1]).read().split('\n')
i = [k for k, l in enumerate(lines) if l.split()[:2] == ['5', 'leaf']][0]
want = ['deeper (stack_paths.c:%s)' % sys.argv[2], 'middle2 (stack_paths.c:%s)' % sys.argv[3],
        'path_c (stack_paths.c:%s)' % sys.argv[4]]
assert [l.strip() for l in lines[i + 1:i + 4]] == want, lines[i:i + 4]
PY

# Func probes on leaf and on callers (the agent replaces their return
# addresses: the copies get the real ones back): the same three stacks.
"$SONDE" probe "${EF[@]}" --format=json -o "$E.fn.json" -e func:path_a -e func:middle -e func:leaf -e stack:leaf \
	-- ./sp 2 3 5 > "$E.fn.out" 2> "$E.fn.err"
check "$E func probes on the callers: the same stacks" jq_py "$E.fn.json" \
	"p = [q for q in d['probes'] if q['kind'] == 'stack'][0]
got = sorted((s['count'], [f['name'] for f in s['frames']][:5]) for s in p['stacks'])
assert got == [(2, ['leaf', 'path_a', 'main'] + got[0][1][3:5]), (3, ['leaf', 'middle', 'path_b', 'main', got[1][1][4]]),
               (5, ['leaf', 'deeper', 'middle2', 'path_c', 'main'])] and p['hits'] == 10, (got, p)"
check "$E func probes on the callers: program output unchanged" cmp -s plain.out "$E.fn.out"

# gdb's bt at a breakpoint on leaf, its first hit (main -> path_a -> leaf):
# the same functions and lines as sonde's stack of that path, up to main.
if command -v gdb > /dev/null; then
	[ -s gdb.out ] || gdb -q -batch -ex 'break leaf' -ex 'run' -ex 'bt' --args ./sp 2 3 5 > gdb.out 2>&1
	"$SONDE" probe "${EF[@]}" --format=json -o "$E.t.json" -e stack:leaf -- ./sp 2 3 5 > /dev/null 2>&1
	check "$E: same stack as gdb's bt (path_a)" python3 - gdb.out "$E.t.json" <<'PY'
import json, re, sys
bt = []
for l in open(sys.argv[1]):
    m = re.match(r'#\d+\s+(?:0x[0-9a-f]+ in )?(\w+) \(.*\) at (\S+):(\d+)', l)
    if m:
        bt.append((m.group(1), m.group(2).split('/')[-1], int(m.group(3))))
assert [b[0] for b in bt[:3]] == ['leaf', 'path_a', 'main'], bt
d = json.load(open(sys.argv[2]))
for s in d['probes'][0]['stacks']:
    if s['frames'][1]['name'] == 'path_a':
        mine = [(f['name'], f['file'], f['line']) for f in s['frames'][:3]]
assert mine[1:] == bt[1:3] and mine[0][0] == 'leaf', (mine, bt)
PY
fi

# Bounds: leaf under 40 recursive calls is cut at 32 frames, counted truncated.
"$SONDE" probe "${EF[@]}" --format=json -o "$E.deep.json" -e stack:leaf -- ./sp 0 0 0 40 > "$E.deep.out" 2> "$E.deep.err"
check "$E deep stack: cut at 32 frames, counted truncated" jq_py "$E.deep.json" \
	"p = d['probes'][0]; s = p['stacks'][0]; assert p['hits'] == 1 and p['truncated'] == 1 and len(s['frames']) == 32 and [f['name'] for f in s['frames'][1:]] == ['recurse'] * 31, p"
check "$E deep stack: program output unchanged" grep -qx "recurse 40" "$E.deep.out"

# Threads (tests/progs/probe_threads.c: NTHREADS threads call work ITERS times
# each, from run, sleeping 100 us between calls): every hit counted, on the
# one stack work <- run.  On the agent 400 stacks of a thread fit in its ring
# (4 MiB, 8 KiB and a header each) even if sonde read none before the end.
./thr 8 400 100 > thr.plain; thr_rc=$?
"$SONDE" probe "${EF[@]}" --format=json -o "$E.thr.json" -e stack:work -- ./thr 8 400 100 > "$E.thr.out" 2> "$E.thr.err"
check "$E threads: output unchanged" cmp -s thr.plain "$E.thr.out"
check "$E threads: exit status kept" jq_py "$E.thr.json" "assert d['target']['exit_status'] == $thr_rc"
check "$E threads: 8 x 400 hits, one stack work <- run, none lost" jq_py "$E.thr.json" \
	"p = d['probes'][0]; s = p['stacks']; assert p['hits'] == 3200 and p['distinct'] == 1 and s[0]['count'] == 3200 and [f['name'] for f in s[0]['frames'][:2]] == ['work', 'run'], p
$engine_ok
$lost0"
# Attached (-p) for a second, the threads running.
rm -f thr.pid
./thr 4 20000 100 "$PWD/thr.pid" > "$E.thr_p.out" &
tpid=$!
for _ in $(seq 100); do [ -s thr.pid ] && break; sleep 0.05; done
"$SONDE" probe "${EF[@]}" --format=json -o "$E.thr_p.json" -p "$(cat thr.pid)" --duration 1 -e stack:work > /dev/null 2> "$E.thr_p.err"
wait "$tpid"; tp_rc=$?
check "$E attached: the program's exit status kept" test "$tp_rc" -eq "$thr_rc"
[ -s thr_p.plain ] || ./thr 4 20000 0 > thr_p.plain
check "$E attached: program output as unprobed" cmp -s thr_p.plain "$E.thr_p.out"
check "$E attached: hits counted on the stack work <- run" jq_py "$E.thr_p.json" \
	"p = d['probes'][0]; s = p['stacks']; assert p['hits'] > 0 and sum(x['count'] for x in s) + p['lost'] == p['hits'] and all([f['name'] for f in x['frames'][:2]] == ['work', 'run'] for x in s), p
$engine_ok"
done

# --- A caller whose frame rule the walk does not follow (stack_walk.c's
# via_expr, its CFA a DWARF expression), and a damaged frame (via_bad): the
# agent copies those stacks and sonde unwinds them (copied), the others are
# walked; each chain with the program's count, the program unharmed, and
# the copied via_expr one the same as gdb's bt.
for b in "gcc -O2" "gcc -O0"; do
	tag=${b// /}
	$b -g -o "sw$tag" "$PROGS/stack_walk.c" || { notok "$b: build stack_walk" "compiler failed"; continue; }
	"./sw$tag" 7 5 3 > "sw$tag.plain"; sw_rc=$?
	"$SONDE" probe --format=json -o "sw$tag.json" -e stack:leaf -- "./sw$tag" 7 5 3 > "sw$tag.out" 2> "sw$tag.err"
	rc=$?
	check "stack_walk $b: output and status unchanged" sh -c "[ $rc -eq 0 ] && [ $sw_rc -eq 0 ] && cmp -s sw$tag.plain sw$tag.out"
	# via_bad's damaged frame (CFA = rbp + 16, rbp 16): the walk refuses it, the copy unwinds to it
	check "stack_walk $b: 7 stacks walked (plain), 5 + 3 copied (via_expr, via_bad), per stack" jq_py "sw$tag.json" \
		"p = d['probes'][0]; got = sorted((s['count'], s['copied'], [f['name'] for f in s['frames']][:3]) for s in p['stacks'])
assert p['hits'] == 15 and p['walked'] == 7 and p['copied'] == 8 and p['lost'] == 0 and got == [(3, 3, ['leaf', 'via_bad']), (5, 5, ['leaf', 'via_expr', 'main']), (7, 0, ['leaf', 'plain', 'main'])], (got, p)"
done
if command -v gdb > /dev/null; then
	gdb -q -batch -ex 'break via_expr' -ex 'run' -ex 'break leaf' -ex 'continue' -ex 'bt' --args ./swgcc-O2 7 5 > sw_gdb.out 2>&1
	check "stack_walk: the copied stack the same as gdb's bt" python3 - sw_gdb.out swgcc-O2.json <<'PY'
import json, re, sys
bt = []
for l in open(sys.argv[1]):
    m = re.match(r'#\d+\s+(?:(0x[0-9a-f]+) in )?(\w+) \(', l)
    if m:
        bt.append(m.group(2))
d = json.load(open(sys.argv[2]))
s = [s for s in d['probes'][0]['stacks'] if s['copied']][0]
mine = [f['name'] for f in s['frames']]
assert bt[:3] == ['leaf', 'via_expr', 'main'] and mine[:len(bt)] == bt, (mine, bt)
PY
fi

# --- SIGKILL of sonde with a stack probe in (the agent): the program goes on
# with its own output and status (its sites removed by the agent), attached
# and launched, 3 rounds each.
./thr 4 4000 100 > plain_k.out; k_rc=$?
for r in 1 2 3; do
	rm -f k.pid
	./thr 4 4000 100 "$PWD/k.pid" > "k$r.out" &
	tpid=$!
	for _ in $(seq 100); do [ -s k.pid ] && break; sleep 0.05; done
	"$SONDE" probe -p "$(cat k.pid)" -e stack:work > /dev/null 2>&1 &
	sonde_pid=$!
	sleep 0.$((r * 2))
	kill -KILL "$sonde_pid"
	wait "$sonde_pid" 2>/dev/null
	wait "$tpid"; rc=$?
	check "sigkill $r (attached): exit status kept" test "$rc" -eq "$k_rc"
	check "sigkill $r (attached): program output unchanged" cmp -s plain_k.out "k$r.out"
	sigkill_launched "sigkill $r (launched): program finished normally" "kl$r.out" 0.$((r * 2)) total plain_k.out -- \
		-e stack:work -- ./thr 4 4000 100
done

# Bad input: a clear error and the exit status of its class.
"$SONDE" probe -e stack:no_such_function -- ./sp > bad.out 2> bad.err; rc=$?
check "unknown function: exit 2" test "$rc" -eq 2
check "unknown function: says so" grep -q "no_such_function" bad.err
"$SONDE" probe --engine=ptrace -e stack:no_such_function -- ./sp > bad.out 2> bad.err; rc=$?
check "ptrace: unknown function: exit 2" test "$rc" -eq 2
"$SONDE" probe -e stack: -- ./sp > bad2.out 2> bad2.err; rc=$?
check "missing location: usage error" test "$rc" -eq 1
check "missing location: says so" grep -q "missing location after 'stack:'" bad2.err
"$SONDE" probe --engine=agent --format=json -o eng.json -e stack:leaf -- ./sp 1 1 1 > /dev/null 2> bad3.err; rc=$?
check "--engine=agent: accepted" test "$rc" -eq 0
# --stack-copy: the bytes the agent copies at each hit (said in the JSON);
# 512 still hold the three chains up to main; out of range is a usage error.
"$SONDE" probe --stack-unwind=copy --stack-copy 512 --format=json -o copy.json -e stack:leaf -- ./sp 4 6 9 > copy.out 2> copy.err
check "--stack-copy 512: copies of 512 bytes, the three chains" jq_py copy.json \
	"p = d['probes'][0]; got = sorted([f['name'] for f in s['frames']][:[f['name'] for f in s['frames']].index('main') + 1] for s in p['stacks'])
assert p['copy_bytes'] == 512 and p['copied'] == 19 and p['lost'] == 0 and got == [['leaf', 'deeper', 'middle2', 'path_c', 'main'], ['leaf', 'middle', 'path_b', 'main'], ['leaf', 'path_a', 'main']], (got, p)"
for v in 63 65537 1M abc; do
	"$SONDE" probe --stack-copy "$v" -e stack:leaf -- ./sp > "copybad$v.out" 2> "copybad$v.err"; rc=$?
	check "--stack-copy $v: usage error" test "$rc" -eq 1
done
check "--stack-copy 65537: says the range" grep -q "for --stack-copy (64 to 64K bytes)" copybad65537.err
"$SONDE" probe --stack-unwind=dwarf -e stack:leaf -- ./sp > unwbad.out 2> unwbad.err; rc=$?
check "--stack-unwind=dwarf: usage error, says the choices" sh -c "[ $rc -eq 1 ] && grep -q 'program or copy' unwbad.err"

# Interactive (the agent): a stack probe added while two threads run, then
# deleted: the hits in between (at most the program's 2 x 12000 calls) each
# with the stack work <- run, the program's output unchanged.
# (about 2 s of work; quit leaves it running to its end)
./thr 2 12000 100 > thr_i.plain
(sleep 0.3; echo "add stack:work"; sleep 0.6; echo "del 1"; sleep 0.2; echo quit) |
	"$SONDE" probe --interactive --format=json -o inter.json -- ./thr 2 12000 100 > thr_i.out 2> inter.err
for _ in $(seq 500); do grep -q '^total' thr_i.out && break; sleep 0.02; done
check "interactive: stack probe added and deleted" grep -q "^deleted 1" inter.err
check "interactive: program output unchanged" cmp -s thr_i.plain thr_i.out
check "interactive: each hit's stack counted (work <- run)" jq_py inter.json \
	"p = d['probes'][0]; s = p['stacks']; assert d['target']['engine'] == 'agent' and 0 < p['hits'] <= 24000 and sum(x['count'] for x in s) == p['copied'] + p['walked'] > 0 and all([f['name'] for f in x['frames'][:2]] == ['work', 'run'] for x in s), p"

# --record with a stack probe (the agent): each hit an instant in the recording.
"$SONDE" probe -o rec.d --record -e stack:leaf -- ./sp 4 6 9 > rec.out 2> rec.err
"$SONDE" info -i rec.d --format=json > rec_info.json 2> rec_info.err
check "--record: the 19 hits recorded (4 + 6 + 9, the program's counts)" jq_py rec_info.json \
	"assert d['probe_records'] == 19 and not d['lost'], d"

# Through exec (the agent): the first image's stacks (tests/progs/exec_self.c
# prints each image's calls) named in that image, the new image's placed again.
gcc -O2 -g -o exec_self "$PROGS/exec_self.c"
./exec_self 100 300 > ex.plain; ex_rc=$?
"$SONDE" probe --format=json -o ex.json -e stack:work -- ./exec_self 100 300 execv > ex.out 2> ex.err
check "exec: output and status unchanged" sh -c "cmp -s ex.plain ex.out && [ $ex_rc -eq 4 ]"
n1=$(awk '$1=="first"{print $3}' ex.plain); n2=$(awk '$1=="second"{print $3}' ex.plain)
check "exec: $n1 stacks work <- main in the first image, $n2 in the second" jq_py ex.json \
	"p = d['probes']; got = [(q['state'], q['hits'], [(s['count'], [f['name'] for f in s['frames']][:2]) for s in q['stacks']]) for q in p]
assert got == [('exec', $n1, [($n1, ['work', 'main'])]), ('active', $n2, [($n2, ['work', 'main'])])], got"

# A stack probe from the library (-e @NAME) on the agent: the session has its rings.
printf 'st = stack:leaf\n' > lib.txt
"$SONDE" probe --library lib.txt -e @st --format=json -o lib.json -- ./sp 1 2 3 > /dev/null 2> lib.err
check "library spec @st: three stacks on the agent" jq_py lib.json \
	"p = d['probes'][0]; assert d['target']['engine'] == 'agent' and p['distinct'] == 3 and p['hits'] == 6 and p['lost'] == 0, p"

# A remote target refuses it (gdbserver as the stub, when installed).
if command -v gdbserver > /dev/null; then
	source "$ROOT/tests/remote_lib.sh"
	port=$(free_port)
	gdbserver --once "127.0.0.1:$port" ./sp > stub.out 2>&1 &
	gpid=$!; stubs+=("$gpid")
	if wait_listen "$port"; then
		timeout 60 "$SONDE" probe --target "tcp:127.0.0.1:$port" --exe ./sp -e stack:leaf > /dev/null 2> remote.err
		rc=$?
		check "--target: refused, exit 2" test "$rc" -eq 2
		check "--target: says why" grep -q "^sonde: error: .*stack probes are not available on remote targets" remote.err
	else
		notok "--target: refused" "gdbserver did not listen on $port"
	fi
else
	skip "--target: refused" "gdbserver not installed"
fi

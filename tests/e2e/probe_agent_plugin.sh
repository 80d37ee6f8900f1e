#!/usr/bin/env bash
# probe_agent_plugin.sh — plugins of SONDE_PROBE_ABI2 (include/sonde/probe.h)
# on the agent engine: pre and post handlers run inside the program, in the
# thread that hit the probe, with their state in the probe's result area;
# sonde's report shows what they computed.  The same plugin on
# --engine=ptrace gives the same numbers (in sonde); an ABI-1 plugin stays on
# ptrace.  Expected values come from the programs' own output and objdump.
# test-timeout: 900
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"

gcc -O2 -g -o loop "$PROGS/probe_loop.c" || { notok build "gcc failed"; exit 0; }
gcc -O2 -g -pthread -o pa "$PROGS/probe_agent.c" || { notok build "gcc failed"; exit 0; }
cc -shared -fPIC -Wall -Wextra -Werror -I"$ROOT/include" -o plug2.so "$PROGS/probe_plugin2.c" \
	|| { notok "ABI-2 plugin builds with cc -shared -fPIC -Iinclude" "cc failed"; exit 0; }
ok "ABI-2 plugin builds with cc -shared -fPIC -Iinclude"
cc -shared -fPIC -I"$ROOT/include" -o plug1.so "$PROGS/probe_plugin.c" || { notok build "cc failed"; exit 0; }

delta=$(nm loop | python3 -c "import sys; s={f[2]: int(f[0], 16) for f in (l.split() for l in sys.stdin) if len(f) == 3}; print(s['g_count'] - s['work'])")
[ -n "$delta" ] || { notok "symbols" "work / g_count not found by nm"; exit 0; }
./loop > plain.out
count=$(awk '$1 == "count" {print $2}' plain.out)
sum=$((count * (count - 1) / 2)) # work(i), i = 0 .. count-1; g_count == i at the call
# length of work's first instruction (the post handler's rip - addr)
insn_len() { objdump -d "$1" | awk -v f="<$2>:" '$2 == f {g=1; next} g && /^ +[0-9a-f]+:/ {n=0; for (i=2;i<=NF;i++) if ($i ~ /^[0-9a-f][0-9a-f]$/) n++; else break; print n; exit}'; }
len=$(insn_len loop work)
field() { echo "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1==k {print $2}'; }
report() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['probes'][int(sys.argv[2])].get('report',''))" "$1" "${2:-0}"; }

# --- launched, on the agent (the default) and on ptrace: the same numbers
for eng in agent ptrace; do
	opt=; [ $eng = ptrace ] && opt=--engine=ptrace
	"$SONDE" probe $opt --plugin ./plug2.so --format=json -o $eng.json -e "plugin:work:$delta" \
		-- ./loop > $eng.out 2> $eng.err
	rc=$?
	check "$eng: sonde exits 0" test "$rc" -eq 0
	check "$eng: program output unchanged" cmp -s plain.out $eng.out
	check "$eng: target.engine is $eng, $count hits" jq_py $eng.json \
		"p=d['probes'][0]; assert d['target']['engine']=='$eng' and p['kind']=='plugin' and p['state']=='active' and p['hits']==$count, (d['target'], p)"
	rep=$(report $eng.json)
	echo "$eng report: $rep"
	inside=$count; [ $eng = ptrace ] && inside=0
	check "$eng: pre ran $count times ($inside in the program)" \
		test "$(field "$rep" pre)" = "$count" -a "$(field "$rep" in_target)" = "$inside"
	check "$eng: ctx hits numbers the hits 1..$count" test "$(field "$rep" hits_max)" = "$count"
	check "$eng: rip in pre is the probed address" test "$(field "$rep" pc_ok)" = "$count"
	check "$eng: first argument (rdi) summed: $sum" test "$(field "$rep" sum_arg)" = "$sum"
	check "$eng: global read through c->read (ARG from init, in sonde): $sum" \
		test "$(field "$rep" sum_global)" = "$sum" -a "$(field "$rep" read_fail)" = 0
	check "$eng: c->read of address 0 fails" test "$(field "$rep" null_unreadable)" = "$count"
	check "$eng: post ran $count times, rip = address + $len" \
		test "$(field "$rep" post)" = "$count" -a "$(field "$rep" post_len)" = "$len" -a "$(field "$rep" post_len_varies)" = 0
	check "$eng: post sees the instruction's effect (eax = 3*edi+1)" test "$(field "$rep" post_rax_ok)" = "$count"
	check "$eng: no error handler call" test "$(field "$rep" errors)" = 0
	check "$eng: fini in sonde prints the report" grep -q "probe 1: plugin2-report pre=$count " $eng.err
done
"$SONDE" probe --plugin ./plug2.so -e "plugin:work:$delta" -- ./loop 10 > table.out 2> table.err
check "table shows the report (agent)" grep -q "plugin2-report pre=10 post=10 .*in_target=10 sum_arg=45 sum_global=45" table.err

# --- an ABI-1 plugin runs on ptrace, as before
"$SONDE" probe --plugin ./plug1.so --format=json -o p1.json -e "plugin:work:$delta" -- ./loop > p1.out 2> p1.err
check "ABI-1 plugin: on ptrace, handlers in sonde" jq_py p1.json \
	"p=d['probes'][0]; assert d['target']['engine']=='ptrace' and ' pre=$count ' in p['report']+' ', (d['target'], p)"
"$SONDE" probe --engine=agent --plugin ./plug1.so -e "plugin:work" -- ./loop > /dev/null 2> p1a.err
check "ABI-1 plugin with --engine=agent: usage error" test $? -eq 1

# --- 8 threads: every hit handled exactly, jump site (work) and int3 site (spin)
./pa 8 100000 > plain_t.out
calls=$(awk '$1 == "calls" {print $3}' plain_t.out)
per=$((calls / 8))
"$SONDE" probe --plugin ./plug2.so --format=json -o t.json -e plugin:work -e plugin:spin -- ./pa 8 100000 > t.out 2> t.err
check "threads: output unchanged" cmp -s plain_t.out t.out
check "threads: exit status kept, engine agent" jq_py t.json \
	"t=d['target']; assert t['exit_status'] == 3 and t['engine'] == 'agent', t"
rep=$(report t.json 0)
check "threads: work: pre and post for every one of the $calls calls, in the program" \
	test "$(field "$rep" pre)" = "$calls" -a "$(field "$rep" post)" = "$calls" -a "$(field "$rep" in_target)" = "$calls" \
	-a "$(field "$rep" hits_max)" = "$calls" -a "$(field "$rep" post_rax_ok)" = "$calls"
check "threads: work: arguments summed: 8 x sum(0..$((per - 1)))" test "$(field "$rep" sum_arg)" = $((8 * per * (per - 1) / 2))
rep=$(report t.json 1)
slen=$(insn_len pa spin)
check "threads: spin (int3 site): pre and post for every call, rip = address + $slen" \
	test "$(field "$rep" pre)" = "$calls" -a "$(field "$rep" post)" = "$calls" -a "$(field "$rep" post_len)" = "$slen"
check "threads: spin is an int3 site" jq_py t.json "p=d['probes'][1]; assert p['int3_sites'] == 1 and p['hits'] == $calls, p"

# --- a post handler where the instruction does not go on (ret): refused, clearly
"$SONDE" probe --plugin ./plug2.so -e "plugin:addr:work+$(insn_len pa work)" -- ./pa 1 10 > /dev/null 2> ret.err
check "post at a ret refused on the agent (exit 2)" test $? -eq 2
check "post at a ret: message names --engine=ptrace" grep -q "post handler.*--engine=ptrace" ret.err
"$SONDE" probe --plugin ./plug2.so -e "plugin:work:notanumber" -- ./loop > /dev/null 2> refuse.err
check "init refusing the probe is an error (exit 2)" test $? -eq 2

# --- exec: the new image's agent loads the plugin again
"$SONDE" probe --pending --plugin ./plug2.so --format=json -o ex.json -e "plugin:work:$delta" \
	-- sh -c 'exec ./loop' > ex.out 2> ex.err
check "exec: output unchanged" cmp -s plain.out ex.out
check "exec: the program's image handled every call, in the program" jq_py ex.json \
	"p=[q for q in d['probes'] if q['state']=='active'][0]; assert p['hits']==$count and ' in_target=$count ' in p['report'] and ' sum_global=$sum ' in p['report'], p"

# --- interactive: add, del, add while 2 threads run; each probe's pre count is its hits
rm -f go.i stop.i
touch go.i
mkfifo cmds.i
"$SONDE" probe --interactive --plugin ./plug2.so --format=json -o i.json -- ./pa 2 0 go.i stop.i < cmds.i > i.out 2> i.err &
sonde_pid=$!
exec 3> cmds.i
echo "add plugin:work" >&3
for _ in $(seq 500); do grep -q '^added 1' i.err && break; sleep 0.02; done
sleep 0.3
echo "del 1" >&3
for _ in $(seq 500); do grep -q '^deleted 1' i.err && break; sleep 0.02; done
echo "add plugin:spin" >&3
for _ in $(seq 500); do grep -q '^added 2' i.err && break; sleep 0.02; done
sleep 0.3
echo "disable 2" >&3
for _ in $(seq 500); do grep -q '^disabled 2' i.err && break; sleep 0.02; done
sleep 0.2
echo "enable 2" >&3
for _ in $(seq 500); do grep -q '^enabled 2' i.err && break; sleep 0.02; done
sleep 0.3
touch stop.i
for _ in $(seq 1000); do grep -q '^expect' i.out && break; sleep 0.02; done
exec 3>&-
wait "$sonde_pid"
check "interactive: the program's results right" \
	test "$(awk '$1 == "total" {print $2}' i.out)" = "$(awk '$1 == "expect" {print $2}' i.out)"
# (a thread inside the hit when a probe is deleted, disabled or enabled may
# still reach its handler: at most one per thread more than the probe's hits
# at each: probe 2 was disabled and enabled again)
check "interactive: pre counted every hit of each probe, across a disable" jq_py i.json \
	"import re; p=d['probes']; pre=[int(re.search(r' pre=(\\d+) ', q['report']).group(1)) for q in p]; assert len(p)==2 and p[0]['state']=='deleted' and p[0]['hits']>0 and 0 <= pre[0]-p[0]['hits'] <= 2 and 0 <= pre[1]-p[1]['hits'] <= 4 and p[1]['hits'] > 0, p"

# --- attached: the agent loads the plugin into the running process
attach_run() { # tag specs...
	local tag=$1; shift
	rm -f "go.$tag"
	(./pa 4 50000 "go.$tag" > "$tag.out"; echo "status $?" >> "$tag.out") &
	runner=$!
	for _ in $(seq 200); do grep -q '^ready' "$tag.out" 2>/dev/null && break; sleep 0.02; done
	pid=$(awk '$1 == "ready" {print $2}' "$tag.out")
	probe_attached "$pid" "$tag.err" --plugin ./plug2.so --format=json -o "$tag.json" "$@"
}
attach_run att -e plugin:work -e plugin:spin
touch go.att
wait "$sonde_pid"
rc=$?
wait "$runner"
acalls=$(awk '$1 == "calls" {print $3}' att.out)
check "attach: sonde exits 0, program status 3" test "$rc" -eq 0 -a "$(tail -1 att.out)" = "status 3"
check "attach: every call handled in the program" jq_py att.json \
	"p=d['probes']; assert d['target']['engine']=='agent' and all(' pre=$acalls ' in q['report'] and ' post=$acalls ' in q['report'] and ' in_target=$acalls ' in q['report'] for q in p), p"

# --- SIGKILL of sonde: the program finishes with its own output and status
./pa 4 50000 > plain_k.out
for r in 1 2 3; do
	attach_run "k$r" -e plugin:work -e plugin:spin
	sigkill_attached "$r" "k$r" 0.$((r * 3)) plain_k.out
done
for r in 1 2 3; do
	sigkill_launched "sigkill $r (launched): program finished normally" "kl$r.out" 0.$((r * 2)) total plain_k.out -- \
		--plugin ./plug2.so -e plugin:work -e plugin:spin -- ./pa 4 50000
done
exit 0

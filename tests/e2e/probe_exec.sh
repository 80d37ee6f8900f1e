#!/usr/bin/env bash
# probe_exec.sh — the agent engine follows its program through exec (issue
# 12 "after exec the specs are resolved again in the new image"): the probes
# of the first image keep their counts (state "exec"), the same specs are
# placed again in the new image before it runs (new ids), whichever exec
# function the program uses; through a shell's `exec` with --pending; an
# exec of a static program is left alone (its environment and descriptors as
# without sonde).  Expected counts are the program's own
# (tests/progs/exec_self.c prints how many times each image called work).
# test-timeout: 300
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"

gcc -O2 -g -o exec_self "$PROGS/exec_self.c" || { notok build "gcc failed"; exit 0; }
./exec_self 1000 3000 > plain.out
plain_rc=$?
check "plain run: 1000 then 3000 calls, status 4" \
	sh -c "grep -q '^first work 1000 ' plain.out && grep -q '^second work 3000 ' plain.out && [ $plain_rc -eq 4 ]"

for how in execv execvp execl execle; do
	"$SONDE" probe --format=json -o $how.json -e func:work -- ./exec_self 1000 3000 $how > $how.out 2> $how.err
	rc=$?
	check "$how: sonde exits 0, output unchanged" sh -c "[ $rc -eq 0 ] && cmp -s plain.out $how.out"
	check "$how: the program's exit status (4) after its exec" jq_py $how.json \
		"assert d['target']['exit_status'] == 4, d['target']"
	check "$how: the first image's 1000 calls, then the new image's 3000" jq_py $how.json \
		"p=d['probes']; assert [(q['id'], q['state'], q['calls'], q['returns']) for q in p] == [(1, 'exec', 1000, 1000), (2, 'active', 3000, 3000)], p"
	check "$how: the new image's callers named in it" jq_py $how.json \
		"p=d['probes']; assert p[0]['callers'] == [{'name': 'main', 'calls': 1000}] and p[1]['callers'] == [{'name': 'main', 'calls': 3000}], p"
	check "$how: said" grep -q "probe 2 (func:work) placed at work .*: the program exec'd" $how.err
done

# --- --record through the exec: both images' calls in one recording, each
# call a slice of the timeline (1000 + 3000), nothing lost
"$SONDE" probe --record -o rec.data -e func:work -- ./exec_self 1000 3000 > rec.out 2> rec.err
rc=$?
check "--record: sonde exits 0, output unchanged" sh -c "[ $rc -eq 0 ] && cmp -s plain.out rec.out"
"$SONDE" info -i rec.data --format=json > rec.info.json 2> rec.info.err
check "--record: the recording has both images' 4000 calls (entry and exit: 8000 records), status 4, nothing lost" \
	jq_py rec.info.json "assert (d['probe_records'], d['exit_status'], [p['hits'] for p in d['probes']]) == (8000, 4, [1000, 3000]) and not any(d['lost'].values()), d"
"$SONDE" export -i rec.data --format=chrome -o rec.trace.json 2> rec.export.err
check "--record: the exported timeline has 4000 work slices" jq_py rec.trace.json \
	"ev=d['traceEvents'] if isinstance(d, dict) else d; assert sum(1 for e in ev if e.get('ph') == 'X' and e.get('name') == 'func:work') == 4000"

# --- through a shell: `sh -c 'exec PROGRAM'`, the probe pending in the shell
"$SONDE" probe --pending --format=json -o sh.json -e func:work -- sh -c 'exec ./exec_self 1000 3000' > sh.out 2> sh.err
rc=$?
check "sh -c exec: sonde exits 0, output unchanged" sh -c "[ $rc -eq 0 ] && cmp -s plain.out sh.out"
check "sh -c exec: pending in the shell, then 1000 and 3000 calls" jq_py sh.json \
	"p=d['probes']; assert [(q['state'], q.get('calls')) for q in p] == [('exec', None), ('exec', 1000), ('active', 3000)] and p[0]['where'].startswith('pending: '), p"

# --- attached to a shell that then execs the program: followed the same
# way; the exit status, though the process is not sonde's child, is what the
# program's exit() said (4)
sh -c 'while [ ! -e go.att ]; do sleep 0.01; done; exec ./exec_self 1000 3000' > att.out &
runner=$!
# the background job is this shell's fork until it has exec'd sh: attached
# before that, the exec into sh would be one more image than the test counts
shexe=$(readlink -f "$(command -v sh)")
for _ in $(seq 1000); do [ "$(readlink /proc/$runner/exe 2>/dev/null)" = "$shexe" ] && break; sleep 0.01; done
probe_attached "$runner" att.err --pending --format=json -o att.json -e func:work
touch go.att
wait "$runner"
prc=$?
wait "$sonde_pid"
rc=$?
check "attach, sh then exec: sonde exits 0, the program 4, output unchanged" \
	sh -c "[ $rc -eq 0 ] && [ $prc -eq 4 ] && cmp -s plain.out att.out"
check "attach, sh then exec: pending in the shell, then 1000 and 3000 calls" jq_py att.json \
	"p=d['probes']; assert [(q['state'], q.get('calls')) for q in p] == [('exec', None), ('exec', 1000), ('active', 3000)], p"
check "attach: the exit status the program's exit() gave (4)" jq_py att.json \
	"t=d['target']; assert t['launched'] is False and t['exit_status'] == 4 and t['state'] == 'exited with status 4', t"

# --- attached while the program execs itself over and over: the attach
# meets an exec at any step (the maps read, the thread stopped, dlopen, the
# agent's start, the first placement, the detach at --duration); the
# program runs to its end with its own output and status every time, and
# sonde attaches or says why (an error, never a crash or a hang)
gcc -O2 -g -o exec_storm "$PROGS/exec_storm.c" || { notok build "gcc exec_storm failed"; exit 0; }
storm_ok=0 storm_err=0 storm_bad=""
for i in 1 2 3 4 5 6; do
	./exec_storm 1500 > storm.out 2>&1 &
	sp=$!
	sleep "0.0$((i * 13 % 9 + 1))"
	timeout 60 "$SONDE" probe -p "$sp" --pending --duration 0.2 --format=json -o storm.json -e func:work \
		> storm.sout 2> storm.err
	src=$?
	for _ in $(seq 600); do # until it ends (a zombie, ours to wait for)
		case $(awk '{print $3}' "/proc/$sp/stat" 2> /dev/null) in Z | "") break ;; esac
		sleep 0.1
	done
	kill -9 "$sp" 2> /dev/null # a program left waiting after 60 s: status 137
	wait "$sp"
	prc=$?
	[ "$prc" -eq 3 ] && grep -qx 'calls 300200' storm.out || storm_bad="$storm_bad [$i: status $prc, $(head -c 80 storm.out)]"
	case $src in
	0) storm_ok=$((storm_ok + 1)) ;;
	2) grep -q '^sonde: error: ' storm.err && storm_err=$((storm_err + 1)) ||
		storm_bad="$storm_bad [$i: sonde 2 without an error line]" ;;
	*) storm_bad="$storm_bad [$i: sonde exited $src: $(tail -c 160 storm.err)]" ;;
	esac
done
check "exec storm: 6 attaches, the program's output (1501 images' 300200 calls) and status (3) every time, sonde 0 or a clean error ($storm_ok attached, $storm_err refused)" \
	test -z "$storm_bad"
[ -z "$storm_bad" ] || echo "# $storm_bad"

# --- an exec of a static program: not followed, left as without sonde
if gcc -O2 -static -o print_env "$PROGS/print_env.c" 2>/dev/null; then
	env -i PATH=/usr/bin:/bin A=1 sh -c './exec_self 10 20 > /dev/null; exec ./print_env' > env.plain
	env -i PATH=/usr/bin:/bin A=1 "$SONDE" probe --pending --format=json -o st.json -e func:work -- \
		sh -c './exec_self 10 20 > /dev/null; exec ./print_env' > env.out 2> env.err
	rc=$?
	check "static exec: sonde exits 0" test "$rc" -eq 0
	# exec_self runs in a child of the shell (another process: not probed);
	# the shell's own exec is of a static program: the probe stays pending
	check "static exec: not followed, the probe still pending" jq_py st.json \
		"p=d['probes']; assert [(q['state'], q['hits']) for q in p] == [('pending', 0)], p"
	check "static exec: the program's environment and descriptors as without sonde" cmp -s env.plain env.out
else
	skip "static exec: left alone" "no static libc (gcc -static failed)"
fi

#!/usr/bin/env bash
# attach_races.sh — the attach and probe races of issue 37, on plain gcc
# builds (never rebuilt for sonde):
# - exec: 100 attaches (50 `sonde record -p`, 50 `sonde probe -p`, both on the
#   injection path) against a program that execs itself continuously
#   (tests/progs/exec_loop.c, ten runs of it);
# - start-up: 100 attaches right after a program's fork and exec, while the
#   dynamic loader maps its 24 libraries and runs their constructors
#   (tests/progs/start_slow.c, start_lib.c), at a spread of delays;
#   each attach records (sonde exits 0 and its recording or JSON reads back)
#   or refuses (a non-zero exit and exactly one line "sonde: error: ...");
#   the program always ends with the output and status of a run without
#   sonde (its own counts);
# - heap: 20 attaches (10 `record -p`, 10 `probe -p`) to a single-threaded
#   program inside malloc's brk calls nearly all the time
#   (tests/progs/heap_churn.c): its output and status every time, and
#   recordings, not only refusals (before the fix: 14 of 15 crashed);
# - 1,000 deletions of a plugin probe (tests/progs/probe_plugin2.c counts its
#   own pre-handler calls) while 8 threads hit it (plugin_threads.c), in 16
#   sessions of `sonde probe -p --interactive`: for every deleted probe the
#   plugin's pre calls are never fewer than sonde's hits.
# Needs ptrace of a non-child: root, or kernel.yama.ptrace_scope 0.
# test-timeout: 400
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
need_ptrace "attach races"
t0=$(date +%s.%N)
lap() { local t; t=$(date +%s.%N); echo "# $1: $(awk -v a="$t" -v b="$t0" "BEGIN {printf \"%.1f\", a - b}") s"; t0=$t; }

# outcome NAME RC: "rec" when sonde exited 0, "ref" when it refused cleanly
# (non-zero, one line on stderr, "sonde: error: ..."), else "bad".
outcome() {
	local err=$1.err rc=$2
	if [ "$rc" -eq 0 ]; then
		echo rec
	elif [ "$rc" -ne 124 ] && [ "$(grep -c . "$err")" -eq 1 ] && grep -q '^sonde: error: ' "$err"; then
		echo ref
	else
		echo bad
	fi
}

# attach_round NAME PID I FUNC STATUS PLAIN [READBACK CALLS]: `record -p`
# (odd I) or `probe -p` (even I) of PID, then its end; the outcome counted
# in nrec / nref, anything else (sonde's, or the program's status or output
# not STATUS and PLAIN's) added to bad; a recording that recorded is listed
# in READBACK (readback below) with the CALLS of FUNC it must hold.
attach_round() {
	local n=$1 p=$2 i=$3 fn=$4 want=$5 plain=$6 rb=${7:-} calls=${8:-} rc o prc
	if [ $((i % 2)) -eq 1 ]; then
		timeout 60 "$SONDE" record -p "$p" -o $n.data > /dev/null 2> $n.err
		rc=$?
		o=$(outcome $n $rc)
		[ -n "$rb" ] && [ "$o" = rec ] && { "$SONDE" report -i $n.data --format=json > $n.json 2>> $n.err || o=bad; }
		[ -n "$rb" ] && [ "$o" = rec ] && echo "$n report $calls" >> "$rb"
	else
		timeout 60 "$SONDE" probe -p "$p" --format=json -o $n.json -e func:$fn > /dev/null 2> $n.err
		rc=$?
		o=$(outcome $n $rc)
		[ -n "$rb" ] && [ "$o" = rec ] && echo "$n probe $calls" >> "$rb"
	fi
	wait "$p"
	prc=$?
	case $o in
	rec) nrec=$((nrec + 1)) ;;
	ref) nref=$((nref + 1)) ;;
	*) bad="$bad [$n: sonde $rc: $(tail -c 200 $n.err)]" ;;
	esac
	{ [ "$prc" -eq "$want" ] && cmp -s "$plain" $n.out; } || bad="$bad [$n: status $prc, $(tail -c 100 $n.out)]"
}

# long_window NAME PATTERN CMD...: CMD run once without sonde (plain.NAME),
# then again with `record -p --duration 0.3` attached (once its output has
# PATTERN; "" at once): sonde's exit in lrc, the program's in prc.
long_window() {
	local n=$1 pat=$2 p; shift 2
	"$@" > plain.$n
	"$@" > $n.out &
	p=$!
	[ -z "$pat" ] || wait_for $n.out "$pat"
	timeout 120 "$SONDE" record -p "$p" --duration 0.3 -o $n.data > /dev/null 2> $n.err
	lrc=$?
	wait "$p"
	prc=$?
}

# readback LIST: the recordings and JSON of the attaches that recorded (LIST:
# "NAME report|probe CALLS" lines, one python for all) read back: a report
# with at most CALLS calls of work (the program's own count), and all of them
# when main began after the attach (main's 1 call); a probe document with
# the func:work probe and at most CALLS calls (CALLS 0: not checked).  Those
# that do not are added to $bad and taken from $nrec.
readback() {
	[ -s "$1" ] || return 0
	local r
	r=$(python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    name, kind, calls = line.split()
    calls = int(calls)
    try:
        d = json.load(open(name + '.json'))
        if kind == 'report':
            c = {f['name']: f['calls'] for f in d['functions']}
            w = c.get('work', 0)
            assert not calls or (w <= calls and (c.get('main') != 1 or w == calls)), c
        else:
            p = d['probes'][0]
            assert p['spec'] == 'func:work' and (not calls or p.get('calls', 0) <= calls), p
    except Exception as e:
        print('[%s: %s]' % (name, str(e)[:160]), end=' ')
PY
)
	bad="$bad$r"
	[ -z "$r" ] || nrec=$((nrec - $(echo "$r" | grep -o '\[' | wc -l)))
}

# --- exec: ten runs of a program that execs itself until told to stop; five
# record -p and five probe -p attaches each, one after another
gcc -O2 -g -o exec_loop "$PROGS/exec_loop.c" || { notok build "gcc exec_loop failed"; exit 0; }
rm -f stop.x
touch stop.x
./exec_loop stop.x > plain.x
check "exec: a run without sonde: 1 image, 200 calls, status 3" \
	sh -c "[ $? -eq 3 ] && grep -qx 'images 1 calls 200' plain.x"
rm -f readback.x
nrec=0 nref=0 bad=""
for run in $(seq 10); do
	rm -f stop.x
	./exec_loop stop.x > x$run.out 2>&1 &
	xp=$!
	for i in $(seq 10); do
		n=x$run.$i
		if [ $((i % 2)) -eq 1 ]; then
			timeout 60 "$SONDE" record -p "$xp" --duration 0.02 -o $n.data > /dev/null 2> $n.err
			rc=$?
			o=$(outcome $n $rc)
			[ "$o" = rec ] && { "$SONDE" report -i $n.data --format=json > $n.json 2>> $n.err || o=bad; }
			[ "$o" = rec ] && echo "$n report 0" >> readback.x
		else
			timeout 60 "$SONDE" probe -p "$xp" --pending --duration 0.02 --format=json -o $n.json \
				-e func:work > /dev/null 2> $n.err
			rc=$?
			o=$(outcome $n $rc)
			[ "$o" = rec ] && echo "$n probe 0" >> readback.x
		fi
		case $o in
		rec) nrec=$((nrec + 1)) ;;
		ref) nref=$((nref + 1)) ;;
		*) bad="$bad [$n: sonde $rc: $(tail -c 200 $n.err)]" ;;
		esac
	done
	touch stop.x
	wait "$xp"
	xrc=$?
	# its own counts: every image made its 200 calls and passed them on
	awk -v rc=$xrc '$1 == "images" && $4 == 200 * $2 && rc == 3 {ok = 1} END {exit !ok}' x$run.out ||
		bad="$bad [run $run: status $xrc, $(head -c 100 x$run.out)]"
done
readback readback.x
check "exec: 100 attaches ($nrec recorded, $nref refused with one error line), the program's counts and status (3) every time" \
	test -z "$bad"
[ -z "$bad" ] || echo "# $bad"
check "exec: attaches recorded, not only refused" test "$nrec" -gt 0
lap "exec"

# --- start-up: 24 libraries with constructors, attached right after the
# fork and exec, at delays from 0 to 9 ms
for k in $(seq 0 23); do
	gcc -O2 -fPIC -shared -DN=$k -o libst$k.so "$PROGS/start_lib.c" || { notok build "gcc start_lib"; exit 0; }
done
{
	for k in $(seq 0 23); do echo "long lib_fn$k(void);"; done
	echo "long start_libs(void) { return 0"
	for k in $(seq 0 23); do echo " + lib_fn$k()"; done
	echo "; }"
} > start_all.c
gcc -O2 -g -o start_slow "$PROGS/start_slow.c" start_all.c -L. $(for k in $(seq 0 23); do echo -lst$k; done) \
	-Wl,-rpath,"$PWD" || { notok build "gcc start_slow failed"; exit 0; }
./start_slow 200000 > plain.s
check "start-up: a run without sonde: status 7" test $? -eq 7
rm -f readback.s
nrec=0 nref=0 bad=""
for i in $(seq 100); do
	n=s$i
	./start_slow 200000 > $n.out &
	sp=$!
	[ $((i % 10)) -gt 0 ] && sleep "0.00$((i % 10))"
	attach_round $n "$sp" $i work 7 plain.s readback.s 200000
done
readback readback.s
check "start-up: 100 attaches ($nrec recorded, $nref refused with one error line), the program's output and status (7) every time" \
	test -z "$bad"
[ -z "$bad" ] || echo "# $bad"
# That an attach at start-up can record, not only be refused: the loop's
# programs may all end before a slow sonde (sanitizers, a loaded machine)
# gets there, so one more run lives long enough (its loop ~0.5 s plain),
# attached at once for a 0.3 s window.
long_window long '' ./start_slow 300000000
check "start-up: an attach at start-up records (here $nrec of the loop's did; one more, attached at once: exit $lrc)" \
	bash -c "[ $lrc -eq 0 ] && [ $prc -eq 7 ] && cmp -s plain.long long.out && \"$SONDE\" report -i long.data --format=json > long.json"
lap "start-up"

# --- heap: a stop inside malloc's system calls is not a safe one (an
# injected dlopen's malloc would run inside the interrupted one)
gcc -O2 -g -o heap_churn "$PROGS/heap_churn.c" || { notok build "gcc heap_churn failed"; exit 0; }
./heap_churn 2000 > plain.h
nrec=0 nref=0 bad=""
for i in $(seq 20); do
	n=h$i
	./heap_churn 2000 > $n.out &
	hp=$!
	wait_for $n.out '^started' || { bad="$bad [$n: did not start]"; wait $hp; continue; }
	attach_round $n "$hp" $i get 0 plain.h
done
check "heap: 20 attaches inside malloc's brk calls ($nrec recorded, $nref refused with one error line), the program's output and status (0) every time" \
	test -z "$bad"
[ -z "$bad" ] || echo "# $bad"
# one more that lives long enough for a slow sonde (sanitizers, load) to
# get there: a 0.3 s window
long_window hl '^started' ./heap_churn 12000
check "heap: an attach inside malloc's brk calls records (here $nrec of the loop's did; one more, a 0.3 s window: exit $lrc, program $prc)" \
	bash -c "[ $lrc -eq 0 ] && [ $prc -eq 0 ] && cmp -s plain.hl hl.out && \"$SONDE\" report -i hl.data --format=json > hl.json"
lap "heap"

# --- 1,000 deletions of a plugin probe while 8 threads hit it
cc -shared -fPIC -I"$ROOT/include" -o plug2.so "$PROGS/probe_plugin2.c" || { notok build "cc plugin failed"; exit 0; }
gcc -O2 -g -pthread -o plugin_threads "$PROGS/plugin_threads.c" || { notok build "gcc plugin_threads"; exit 0; }
rm -f stop.p
./plugin_threads 8 stop.p > p.out &
pp=$!
wait_for p.out '^ready' || { notok "plugin deletions" "the program did not start"; exit 0; }
# One session: 62 times "add plugin:work", wait for sonde's "added N", "del
# N", wait for "deleted N" (at most 64 plugin probes in a session).
cat > dels.py <<'EOF'
import subprocess, sys
sonde, pid, cycles, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
p = subprocess.Popen([sonde, 'probe', '-p', pid, '--interactive', '--plugin', './plug2.so', '--format=json',
                      '-o', out], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(out + '.err', 'w'),
                     text=True, bufsize=1)
def until(prefix):
    for line in p.stdout:
        if line.startswith(prefix):
            return line
    sys.exit('sonde ended before "%s": status %d' % (prefix, p.wait()))
for i in range(cycles):
    p.stdin.write('add plugin:work\n')
    p.stdin.flush()
    n = int(until('added ').split()[1])
    p.stdin.write('del %d\n' % n)
    p.stdin.flush()
    until('deleted %d' % n)
p.stdin.close()
p.stdout.read()
sys.exit(p.wait())
EOF
sess_bad=""
for s in $(seq 16); do
	cyc=62
	[ "$s" -gt 8 ] && cyc=63 # 8 x 62 + 8 x 63 = 1000
	timeout 120 python3 dels.py "$SONDE" "$pp" $cyc d$s.json || sess_bad="$sess_bad [session $s: $(tail -c 200 d$s.json.err)]"
done
touch stop.p
wait "$pp"
prc=$?
check "plugin deletions: 16 sessions of add and del ran" test -z "$sess_bad"
[ -z "$sess_bad" ] || echo "# $sess_bad"
check "plugin deletions: the program's results and status (3) unchanged" \
	sh -c "[ $prc -eq 3 ] && awk '\$1 == \"calls\" && \$4 == \$6 {ok = 1} END {exit !ok}' p.out"
python3 - d*.json > dels.sum <<'EOF'
import json, re, sys
n = behind = hit = 0
worst = []
for f in sys.argv[1:]:
    d = json.load(open(f))
    for q in d['probes']:
        pre = int(re.search(r' pre=(\d+) ', q['report']).group(1))
        n += 1
        hit += q['hits'] > 0
        if q['state'] != 'deleted' or pre < q['hits']:
            behind += 1
            worst.append((f, q['id'], q['state'], pre, q['hits']))
print(n, behind, hit, worst[:5])
EOF
read -r ndel nbehind nhit worst < dels.sum
check "plugin deletions: $ndel probes deleted ($nhit of them hit), pre-handler calls never fewer than hits" \
	test "$ndel" -eq 1000 -a "$nbehind" -eq 0
[ "$nbehind" = 0 ] || echo "# $worst"
lap "plugin deletions"

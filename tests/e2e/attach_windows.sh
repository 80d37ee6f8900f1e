#!/usr/bin/env bash
# attach_windows.sh — `sonde record -p PID --duration S --every T --count N
# --format=pprof`: N windows, each an attach of its own, each into
# DIR/START (its UTC start time) and DIR/START.pb.gz.  The program
# (tests/progs/attach_again.c, a plain gcc build: patched without a rebuild
# at each window) makes one round of work in each window (a few ms in a
# window of 1.5 s), sent once sonde says the window records; checked done
# before sonde says the window is written.  Checks: N recordings named by
# their start times, in order; each holds the calls of its own round, as the
# program counted it (report JSON), nothing of an earlier window, and its
# pprof file says the same to `go tool pprof -top -sample_index=calls`;
# sonde ends by itself with status 0; the
# program's output and status equal a run without sonde.  Then Ctrl-C in
# the middle of a series: the window under way is written, the series
# ends.  Then the usage errors.  Needs ptrace of a non-child.
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
need_ptrace "attach windows"
ATTACH_PROG=./aa
gcc -O2 -g -pthread -I"$PROGS" -o aa "$PROGS/attach_again.c" || { notok build "gcc"; exit 0; }
export GOFLAGS=-mod=mod GOCACHE="$T/gocache" HOME="${HOME:-$T}"
have_go=0
command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1 && have_go=1

rounds_done() { # K: the program printed its K-th round
	for _ in $(seq 1000); do [ "$(grep -c '^round' "$run.out")" -ge "$1" ] && return 0; sleep 0.02; done
	return 1
}
windows_started() { # K: sonde said its K-th window records
	for _ in $(seq 1000); do [ "$(grep -c "^sonde: recording process $pid" win.err)" -ge "$1" ] && return 0; sleep 0.02; done
	return 1
}

N=3
start ref
for _ in $(seq $N); do echo go >&3; done
finish

run=run
start run
"$SONDE" record -p "$pid" --duration 1.5 --every 2 --count $N --format=pprof -o win 2> win.err &
sp=$!
k=0
for w in $(seq $N); do
	windows_started $w || notok "window $w" "sonde did not say it records: $(tail -2 win.err)"
	k=$((k + 1)); echo go >&3; rounds_done $k || notok "round $k" "not printed"
	grep -q "^sonde: window $w:" win.err && notok "window $w" "it ended before its round did (a loaded machine: 1.5 s for a few ms)"
done
wait $sp
check "--every: sonde ends by itself after $N windows with status 0" test $? -eq 0
finish
check "--every: the program's output and exit status equal the unattached run's" cmp -s ref.out run.out
ls -d win/*Z > dirs.txt 2>/dev/null
check "--every: $N recordings, named by their start times (YYYYmmddTHHMMSS.mmmZ), in order" \
	bash -c "[ \$(wc -l < dirs.txt) = $N ] && grep -Eqx 'win/[0-9]{8}T[0-9]{6}\.[0-9]{3}Z' dirs.txt && sort -c dirs.txt"
w=0
while read -r d; do
	w=$((w + 1))
	own=$(grep '^round' run.out | sed -n "${w}p")
	"$SONDE" report -i "$d" --format=json > "r$w.json" 2>&1
	check "window $w: its calls are its own round's ($own), nothing of an earlier window" jq_py "r$w.json" \
		"import re; want={m.group(1): int(m.group(2)) for m in re.finditer(r'(\w+) (\d+)', '''$own'''.split(':',1)[1])}; want.pop('hot_lock'); f={x['name']: x['calls'] for x in d['functions']}; got={n: f.get(n, 0) for n in want}; assert got == want and d['lost_events'] == 0, (got, want)"
	check "window $w: its pprof file is gzip" gzip -t "$d.pb.gz"
	if [ $have_go = 1 ]; then
		go tool pprof -top -sample_index=calls -nodefraction=0 "$d.pb.gz" > "top$w.txt" 2> pprof.err
		n=$(echo "$own" | sed -E 's/.* leaf ([0-9]+) .*/\1/')
		check "window $w: go tool pprof says leaf made $n calls" \
			bash -c "awk '\$NF == \"leaf\" {print \$1}' top$w.txt | grep -qx $n"
	fi
done < dirs.txt
[ $have_go = 1 ] || skip "pprof -top" "go tool pprof not installed (golang-go)"

# ---- Ctrl-C in the middle of a series ----
run=int
start int
"$SONDE" record -p "$pid" --duration 60 --every 60 -o wint 2> wint.err &
sp=$!
for _ in $(seq 1000); do grep -q "^sonde: recording process $pid" wint.err && break; sleep 0.02; done
echo go >&3; rounds_done 1 || notok "round 1" "not printed"
kill -INT $sp
wait $sp
check "Ctrl-C: sonde ends with status 0" test $? -eq 0
check "Ctrl-C: the window under way is written" grep -q "^sonde: window 1: wint/" wint.err
check "Ctrl-C: no second window" bash -c "[ \$(ls -d wint/*Z | wc -l) = 1 ]"
check "Ctrl-C: the agent has ended" agent_ended "$pid"
finish
check "Ctrl-C: output and status unchanged" bash -c "head -1 ref.out | cmp -s - <(head -1 int.out) && tail -1 int.out | grep -qx 'status 3'"

# ---- usage errors ----
"$SONDE" record -p 1 --every 2 -o x 2> e1.err; rc=$?
check "--every without --duration: exit 1, says so" bash -c "[ $rc = 1 ] && grep -q -- '--every needs --duration' e1.err"
"$SONDE" record -p 1 --every 1 --duration 2 -o x 2> e2.err; rc=$?
check "--duration longer than --every: exit 1" bash -c "[ $rc = 1 ] && grep -q 'longer than --every' e2.err"
"$SONDE" record --every 1 --duration 1 -o x -- true 2> e3.err; rc=$?
check "--every without -p: exit 1" bash -c "[ $rc = 1 ] && grep -q 'go with -p PID' e3.err"
"$SONDE" record -p 1 --every 2 --duration 1 --format=chrome -o x 2> e4.err; rc=$?
check "--every --format=chrome: exit 1" bash -c "[ $rc = 1 ] && grep -q 'not .chrome.' e4.err"

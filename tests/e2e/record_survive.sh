# sonde record killed with SIGKILL while the program runs (issue 15, "When
# sonde dies, the program does not"): the program (two threads, a mutex) ends
# as without sonde, with no hang on a full ring, and the next reader recovers
# the recording from the session file the program went on writing into (on
# tmpfs, /dev/shm/sonde-session-UID-RANDOM, named by DIR/session.ref): exact
# call counts in profile and --locks=events mode, the events drained before
# the kill in trace mode, marked incomplete.  Expected counts are the ones the
# program prints itself.  Also: the orphan sweep, the memfd fallback, refused
# links and damaged sessions.
. "$ROOT/tests/lib.sh"
if [ ! -d /dev/shm ] || [ "$(stat -f -c %T /dev/shm)" != tmpfs ] ||
	[ "$(( $(stat -f -c '%a * %S' /dev/shm) >> 30 ))" -lt 1 ]; then
	skip "record_survive" "/dev/shm is not a tmpfs with 1 GiB free here (sonde then uses a memfd)"; exit 0
fi
unset SONDE_SESSION_DIR
"$SONDE_CC_BIN" -O2 -pthread -I"$PROGS" "$PROGS/survive.c" -o survive || { notok build "sonde-cc failed"; exit 1; }
BEFORE=600000 # outer() calls per thread before the kill: 2.8M calls in all, more than a trace ring holds
touch plain.go
./survive plain.pid plain.go $BEFORE >plain.out 2>&1
plain_rc=$?
[ $plain_rc = 7 ] || notok "the program alone" "exit $plain_rc"
want() { awk -v k="$1" '$0 ~ "^"k" " { print $NF }' plain.out; }
sessfile() { head -1 "$1/session.ref" 2>/dev/null; }

# killed.py ARGS...: run `sonde record ARGS` as a subreaper (so the program,
# orphaned by the kill, is reparented to us and its exit status seen); kill
# sonde with SIGKILL once the program wrote ./ready; with HOLD=1 leave the
# program waiting (./go not created), else let it run on and print its exit
# status (or "hang" after 60 s).
cat >killed.py <<'PY'
import ctypes, os, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
for f in ("ready", "go"):
    if os.path.exists(f): os.unlink(f)
t0 = time.monotonic_ns()
p = subprocess.Popen(sys.argv[1:], stdout=open("out.txt", "w"), stderr=open("rec.err", "w"))
for i in range(1200):
    if os.path.exists("ready") and os.path.getsize("ready") > 0: break
    time.sleep(0.05)
else:
    p.kill(); print("noready"); sys.exit(0)
time.sleep(0.3)  # the recorder drains what the program wrote so far
p.kill(); p.wait()
pid = int(open("ready").read())
open("pid", "w").write("%d\n" % pid)
if os.environ.get("HOLD") == "1":
    print("held"); sys.exit(0)
open("go", "w").close()
for i in range(1200):
    r, st = os.waitpid(pid, os.WNOHANG)
    if r == pid:
        open("span_ns", "w").write("%d\n" % (time.monotonic_ns() - t0))
        print(os.waitstatus_to_exitcode(st)); sys.exit(0)
    time.sleep(0.05)
os.kill(pid, 9); print("hang")
PY

# report.json's calls of NAME
calls() { jq_py report.json "print({x['name']: x['calls'] for x in d['functions']}.get('$1', 0))"; }

for mode in "" "--trace" "--locks=events"; do
	name="record ${mode:-(profile)} killed"
	rm -rf k
	st=$(python3 killed.py "$SONDE" record $mode -o k -- ./survive "$PWD/ready" "$PWD/go" $BEFORE)
	if [ "$st" = noready ] || [ "$st" = hang ]; then notok "$name: the program ends" "$st"; continue; fi
	check "$name: the program ends with its own exit status (7), no hang" test "$st" = 7
	check "$name: its output is what it prints without sonde" cmp -s out.txt plain.out
	sf=$(sessfile k)
	case "$sf" in /dev/shm/sonde-session-$(id -u)-*) ok "$name: session.ref names a session file in /dev/shm" ;;
	*) notok "$name: session.ref names a session file in /dev/shm" "'$sf'" ;; esac
	check "$name: the session file is left for the next reader, private (0600)" \
		test -f "$sf" -a ! -e k/profile.sonde -a "$(stat -c %a "$sf" 2>/dev/null)" = 600
	"$SONDE" report --format=json -i k >report.json 2>report.err
	rc=$?
	if [ $rc = 0 ] && grep -q "^sonde: warning: k: its recorder (sonde, pid [0-9]*) was killed; recovered" report.err; then
		ok "$name: report recovers the recording, with a warning (exit 0)"
	else
		notok "$name: report recovers the recording" "exit $rc: $(head -c 300 report.err)"; continue
	fi
	check "$name: the session file and session.ref are gone once recovered" \
		test ! -e "$sf" -a ! -e k/session.ref -a -f k/profile.sonde
	ls k | grep -q '\.tmp$' && notok "$name: no temporary file left" "$(ls k)" || ok "$name: no temporary file left"
	if [ "$mode" != --trace ]; then
		for f in outer inner_a inner_b; do
			got=$(calls $f)
			check "$name: $f: $(want $f) calls, as the program counted (got $got)" test "$got" = "$(want $f)"
		done
	else
		for f in outer inner_a inner_b; do
			got=$(calls $f)
			check "$name: $f: at least the $(want "before $f") calls made before the kill, at most $(want $f) (got $got)" \
				test "$got" -ge "$(want "before $f")" -a "$got" -le "$(want $f)"
		done
		"$SONDE" replay --format=json -i k >replay.json 2>replay.err
		check "$name: replay reads the recovered events (exit 0)" test $? = 0
		"$SONDE" export --format=chrome -i k -o k.json 2>export.err
		check "$name: export reads the recovered events (exit 0)" test $? = 0 -a -s k.json
	fi
	if [ "$mode" = --locks=events ]; then
		"$SONDE" locks --format=json -i k >locks.json 2>locks.err
		got=$(jq_py locks.json "print(sum(l['acquisitions'] for l in d['locks'] if l['name'] == 'mu'))" 2>/dev/null)
		check "$name: locks: mu acquired $(want lock) times, as the program counted (got $got)" test "$got" = "$(want lock)"
	fi
	"$SONDE" info --format=json -i k >info.json 2>info.err
	check "$name: info reads it without recovering again (no warning)" test $? = 0 -a ! -s info.err
	check "$name: info says it is incomplete (recorder killed) and the exit status unknown" jq_py info.json \
		"sys.exit(not (d['incomplete']['why'] == 'recorder killed' and d['exit_status'] is None))"
	span=$(cat span_ns)
	check "$name: its duration ends with the program, not with the later recovery (at most the $span ns from record's start to the program's end)" \
		jq_py info.json "sys.exit(not 0 < d['duration_ns'] <= $span)"
	if [ "$mode" = --trace ]; then
		check "$name: info counts the events dropped after the ring filled" jq_py info.json \
			"sys.exit(not d['lost'].get('ring_events_dropped', 0) > 0)"
		"$SONDE" info -i k >info.txt 2>&1
		check "$name: info's text says what is missing" grep -q "^incomplete: .*recorder killed.*events the recorder drained but had not written are missing" info.txt
	fi
done

# A normal end leaves no session file.
touch go
"$SONDE" record -o n -- ./survive "$PWD/r2" "$PWD/plain.go" 10 >/dev/null 2>rec.err &
sp=$!
for i in $(seq 1 600); do [ -s n/session.ref ] && break; sleep 0.05; done
sf=$(sessfile n)
wait $sp
check "a normal end of record leaves no session file ($sf) and no session.ref" test -n "$sf" -a -f n/profile.sonde -a ! -e n/session.ref -a ! -e "$sf"
"$SONDE" record --trace -o n -- ./survive "$PWD/r2" "$PWD/plain.go" 10 >/dev/null 2>&1
check "a normal end of record --trace leaves no session.ref" test -f n/events.sonde -a ! -e n/session.ref

# With no tmpfs (SONDE_SESSION_DIR=memfd, or a directory that cannot hold it): a memfd as before.
SONDE_SESSION_DIR=memfd "$SONDE" record -o m -- ./survive "$PWD/r2" "$PWD/plain.go" 10 >m.out 2>m.err
check "SONDE_SESSION_DIR=memfd: recorded (exit 7), no session.ref" test $? = 7 -a -f m/profile.sonde -a ! -e m/session.ref
SONDE_SESSION_DIR=$PWD/no/such/dir "$SONDE" record -o m -- ./survive "$PWD/r2" "$PWD/plain.go" 10 >m.out 2>m.err
check "a session directory that cannot hold the file: recorded on a memfd (exit 7)" test $? = 7 -a -f m/profile.sonde

# From here on the sessions are in a directory of this test's own (tmpfs,
# under /dev/shm): the checks below move session.ref away and damage session
# files, and another test's sonde sweeping /dev/shm meanwhile (make check
# runs two at once) would remove a session whose directory names it no more
# (CI's sanitizer pass: "its session ... is gone").
SD=$(mktemp -d /dev/shm/sonde-survive.XXXXXX) || { notok "a session directory of its own" "mktemp"; exit 0; }
trap 'drop_sessions; rm -rf "$SD"' EXIT
export SONDE_SESSION_DIR=$SD

# expect_refused NAME PATTERN: report exits 2 with PATTERN on stderr.
expect_refused() {
	timeout 60 "$SONDE" report --format=json -i k >/dev/null 2>err.txt
	local rc=$?
	if [ $rc = 2 ] && grep -q "^sonde: error: .*$2" err.txt; then ok "$1 (exit 2)"; else
		notok "$1" "exit $rc: $(head -c 300 err.txt)"; fi
}
# held: a killed recording whose program still waits for ./go
held() { rm -rf k; HOLD=1 python3 killed.py "$SONDE" record -o k -- ./survive "$PWD/ready" "$PWD/go" 0 >/dev/null; }
release() { touch go; local p; p=$(cat pid); for i in $(seq 1 600); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done; }

held
sf=$(sessfile k)
expect_refused "a recording whose program still runs is refused" "the program (pid $(cat pid)) still runs"
check "... and left as it was" test -f "$sf" -a -f k/session.ref -a ! -e k/profile.sonde
release
"$SONDE" report --format=json -i k >/dev/null 2>err.txt
check "... and recovered once the program has ended" test $? = 0 -a -f k/profile.sonde -a ! -e "$sf"

rm -rf k go ready
"$SONDE" record -o k -- ./survive "$PWD/ready" "$PWD/go" 0 >/dev/null 2>&1 &
sp=$!
for i in $(seq 1 600); do [ -s ready ] && break; sleep 0.05; done
expect_refused "a recording still being made is refused" "k is being recorded (sonde record, pid $sp, still runs)"
touch go
wait $sp

# The orphan sweep: a killed recording whose directory is removed.
held
sf=$(sessfile k)
rm -rf k
"$SONDE" record -o n -- ./survive "$PWD/r2" "$PWD/plain.go" 10 >/dev/null 2>&1
check "sweep: the orphan of a removed recording is kept while its program runs" test -f "$sf"
release
"$SONDE" record -o n -- ./survive "$PWD/r2" "$PWD/plain.go" 10 >/dev/null 2>&1
check "sweep: ... and removed by the next record once its program has ended" test ! -e "$sf"
held; release
sf=$(sessfile k)
"$SONDE" record -o n -- ./survive "$PWD/r2" "$PWD/plain.go" 10 >/dev/null 2>&1
check "sweep: a killed recording still to be recovered keeps its session" test -f "$sf" -a -f k/session.ref
"$SONDE" record -o k -- ./survive "$PWD/r2" "$PWD/plain.go" 10 >/dev/null 2>&1
check "recording again into its directory removes the old session" test ! -e "$sf" -a -f k/profile.sonde -a ! -e k/session.ref

for damage in truncated "bad magic" scribbled gone; do
	held; release
	sf=$(sessfile k)
	case "$damage" in
	truncated) truncate -s 100000 "$sf"; pat="damaged session" ;;
	"bad magic") printf 'NOTSONDE' | dd of="$sf" conv=notrunc 2>/dev/null; pat="damaged session (bad magic)" ;;
	scribbled) head -c 20000 /dev/urandom | dd of="$sf" bs=1 seek=64 conv=notrunc 2>/dev/null ;;
	gone) rm -f "$sf"; pat="its session $sf is gone" ;;
	esac
	if [ "$damage" = scribbled ]; then
		timeout 60 "$SONDE" report --format=json -i k >/dev/null 2>err.txt
		rc=$?
		check "a session scribbled over (20000 random bytes in its header): no crash, no hang (exit $rc)" \
			test $rc = 0 -o $rc = 2
	else
		expect_refused "a $damage session file is an error" "$pat"
	fi
	rm -f "$sf"
done

held; release
sf=$(sessfile k)
mv "$sf" elsewhere.shm
ln -s "$PWD/elsewhere.shm" "$sf"
expect_refused "a session file that is a symbolic link is refused" "symbolic link: refused"
rm -f "$sf"
mv elsewhere.shm "$sf"
mv k/session.ref ref.txt
ln -s "$PWD/ref.txt" k/session.ref
expect_refused "a session.ref that is a symbolic link is refused" "session.ref: refused (a symbolic link)"
rm k/session.ref
echo /etc/passwd >k/session.ref
chmod 600 k/session.ref
expect_refused "a session.ref naming something else than a session file is refused" "session.ref: refused (it does not name"
mv ref.txt k/session.ref
chmod 644 "$sf"
expect_refused "a session file others can read is refused" "not a private file of this user"
chmod 600 "$sf"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	# root gives its session file to the user of a program it attaches to
	# (attach/fd_share.c): root recovers its own from any owner; another
	# user's sonde still refuses a file not its own (session.c)
	chown nobody "$sf"
	timeout 60 "$SONDE" report --format=json -i k >/dev/null 2>err.txt
	rc=$?
	check "a session file of root's given to another user (an attach to that user's program) is recovered by root (exit $rc)" \
		bash -c "[ $rc = 0 ] && grep -q 'recovered the recording' err.txt"
else
	skip "a session file of root's given to another user is recovered by root" "needs root and a user nobody"
fi
rm -f "$sf"
# A session of another sonde version (its header's version changed: this
# sonde cannot read where its recorder and directory are): kept while a
# process maps it or while it changed within the hour, then removed.
held
sf=$(sessfile k)
python3 -c 'import struct, sys
f = open(sys.argv[1], "r+b"); f.seek(8); v = struct.unpack("<I", f.read(4))[0]; f.seek(8); f.write(struct.pack("<I", v + 1000))' "$sf"
touch -d '2 hours ago' "$sf"
rm -rf k
"$SONDE" record -o n -- ./survive "$PWD/r2" "$PWD/plain.go" 10 >/dev/null 2>&1
check "sweep: a session of another version is kept while its program maps it" test -f "$sf"
release
touch "$sf"
"$SONDE" record -o n -- ./survive "$PWD/r2" "$PWD/plain.go" 10 >/dev/null 2>&1
check "sweep: ... kept while it changed within the hour" test -f "$sf"
touch -d '2 hours ago' "$sf"
"$SONDE" record -o n -- ./survive "$PWD/r2" "$PWD/plain.go" 10 >/dev/null 2>&1
check "sweep: ... and removed once nothing maps it and it has not changed for an hour" test ! -e "$sf"
rm -f "$sf"
# The sweep in a directory where a link is planted under a session name: never followed, never removed through.
ln -s /etc/passwd "$SD/sonde-session-$(id -u)-00000000deadbeef"
"$SONDE" record -o n -- ./survive "$PWD/r2" "$PWD/plain.go" 10 >/dev/null 2>&1
check "sweep: a planted link under a session name is neither followed nor its target touched" \
	test -L "$SD/sonde-session-$(id -u)-00000000deadbeef" -a -s /etc/passwd
rm -f "$SD/sonde-session-$(id -u)-00000000deadbeef"

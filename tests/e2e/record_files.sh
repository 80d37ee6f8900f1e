# The files a recording is made of (issue 15, "Files and permissions"): created
# fresh and private, never through a link planted in the directory, and only
# in a directory that belongs to the user and that others cannot write into.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O1 -g "$PROGS/trace_filter.c" -o prog || { notok build "sonde-cc failed"; exit 1; }
perm() { stat -c %a "$1"; }

"$SONDE" record --trace -o rec -- ./prog >/dev/null 2>&1 || notok "record" "failed"
check "a new recording directory is private (0700)" test "$(perm rec)" = 700
for f in profile.sonde events.sonde domain.txt; do
	check "$f is private (0600)" test "$(perm rec/$f)" = 600
done

# Links planted in the recording directory (as another user could in /tmp):
# writing the recording again must replace them, never write through them.
echo "precious" >victim
chmod 644 victim
for f in profile.sonde events.sonde; do
	rm -f rec/$f
	ln -s "$PWD/victim" rec/$f
done
"$SONDE" record --trace -o rec -- ./prog >/dev/null 2>err.txt || notok "record over planted links" "$(head -c 300 err.txt)"
check "the file a planted link named is untouched" test "$(cat victim)" = precious
check "profile.sonde is a file of its own again" test -f rec/profile.sonde -a ! -L rec/profile.sonde
check "events.sonde is a file of its own again" test -f rec/events.sonde -a ! -L rec/events.sonde
if "$SONDE" report -i rec --format=json >/dev/null 2>err.txt; then ok "the recording reads"; else notok "the recording reads" "$(head -c 300 err.txt)"; fi

# domain.txt: written fresh, and --domain auto never reads it through a link.
rm -f rec/domain.txt
ln -s "$PWD/victim" rec/domain.txt
"$SONDE" record --trace --domain auto -o rec -- ./prog >/dev/null 2>err.txt
rc=$?
if [ $rc -eq 1 ] && grep -q "^sonde: error: .*domain.txt is a symbolic link" err.txt; then
	ok "--domain auto refuses a domain.txt that is a link (exit 1)"
else
	notok "--domain auto refuses a domain.txt that is a link" "exit $rc: $(head -c 300 err.txt)"
fi
"$SONDE" record --trace -o rec -- ./prog >/dev/null 2>&1
check "the victim is untouched after --trace rewrote domain.txt" test "$(cat victim)" = precious
check "domain.txt is a file of its own again" test -f rec/domain.txt -a ! -L rec/domain.txt

# A killed recorder's temporary files do not make the directory foreign.
touch rec/profile.sonde.99999.tmp rec/events.sonde.99999.tmp
"$SONDE" record -o rec -- ./prog >/dev/null 2>err.txt
check "a killed recorder's temporary files are cleaned up" test ! -e rec/profile.sonde.99999.tmp -a ! -e rec/events.sonde.99999.tmp

# Directories others can write into, or that belong to someone else.
mkdir open.data && chmod 777 open.data
"$SONDE" record -o open.data -- ./prog >/dev/null 2>err.txt
rc=$?
if [ $rc -eq 1 ] && grep -q "^sonde: error: open.data is writable by other users" err.txt; then
	ok "a world-writable directory is refused (exit 1)"
else
	notok "a world-writable directory is refused" "exit $rc: $(head -c 300 err.txt)"
fi
check "nothing was written into it" test -z "$(ls -A open.data)"
mkdir sticky.data && chmod 1777 sticky.data
check "a world-writable directory with the sticky bit is accepted" "$SONDE" record -o sticky.data -- ./prog
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	mkdir other.data && chown nobody other.data && chmod 755 other.data
	"$SONDE" record -o other.data -- ./prog >/dev/null 2>err.txt
	rc=$?
	if [ $rc -eq 1 ] && grep -q "^sonde: error: other.data belongs to another user" err.txt; then
		ok "a directory of another user is refused (exit 1)"
	else
		notok "a directory of another user is refused" "exit $rc: $(head -c 300 err.txt)"
	fi
else
	skip "a directory of another user is refused" "needs root and a user 'nobody'"
fi

# -o into a directory that does not exist: sonde does not create parents (a
# typo is reported, not built); the message names the missing directory, exit
# 2, and nothing is created.  Same for record, export, flamegraph and probe.
missing_dir() {
	local name=$1 want=$2; shift 2
	"$@" >out.txt 2>err.txt
	local rc=$?
	if [ $rc -eq 2 ] && grep -q "^sonde: error: cannot \(create\|write\) .*(directory $want does not exist)" err.txt; then
		ok "$name: missing directory named (exit 2)"
	else
		notok "$name: missing directory named" "exit $rc: $(head -c 300 err.txt)"
	fi
	check "$name: nothing created" test ! -e nodir
}
missing_dir "record -o nodir/sub/rec" nodir/sub "$SONDE" record -o nodir/sub/rec -- ./prog
missing_dir "export -o nodir/x.folded" nodir "$SONDE" export -i rec --format=folded -o nodir/x.folded
missing_dir "flamegraph -o nodir/f.svg" nodir "$SONDE" flamegraph -i rec -o nodir/f.svg
missing_dir "probe -o nodir/p.json" nodir "$SONDE" probe -o nodir/p.json -e func:main -- ./prog
check "probe -o into a missing directory: the program was not run" test ! -s out.txt

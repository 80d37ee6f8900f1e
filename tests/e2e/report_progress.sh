# The progress line of the commands that read a timeline (src/cli/progress.c):
# on stderr only, never in the output; off when stderr is not a terminal;
# SONDE_PROGRESS=1 shows it at once; SONDE_PROGRESS=0 hides it.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O2 -g -I"$PROGS" "$PROGS/trace_threads.c" -o prog || { notok build "sonde-cc failed"; exit 1; }
"$SONDE" record --trace -o t.data -- ./prog >/dev/null 2>&1 || { notok "record --trace" "failed"; exit 0; }
for c in "export --format=chrome -o OUT" "export --format=perfetto -o OUT" "replay --format=json" "report --format=json"; do
	name=${c%% -o*}
	SONDE_PROGRESS=1 $SONDE ${c//OUT/with.out} -i t.data >with.stdout 2>with.err; rc1=$?
	$SONDE ${c//OUT/plain.out} -i t.data >plain.stdout 2>plain.err; rc2=$?
	SONDE_PROGRESS=0 $SONDE ${c//OUT/off.out} -i t.data >off.stdout 2>off.err; rc3=$?
	[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ] || { notok "$name: runs" "exit $rc1 $rc2 $rc3: $(cat with.err plain.err)"; continue; }
	grep -q "sonde: reading t.data: .*%" with.err && ok "$name: SONDE_PROGRESS=1 draws the line on stderr" ||
		notok "$name: SONDE_PROGRESS=1 draws the line on stderr" "$(head -c 200 with.err)"
	if [ -e with.out ]; then cmp -s with.out plain.out; else cmp -s with.stdout plain.stdout; fi &&
		ok "$name: the output is the same with and without it" || notok "$name: the output is the same with and without it" "differs"
	[ ! -s plain.err ] && [ ! -s off.err ] && ok "$name: nothing on stderr when it is not a terminal, or with SONDE_PROGRESS=0" ||
		notok "$name: nothing on stderr when it is not a terminal, or with SONDE_PROGRESS=0" "$(head -c 200 plain.err off.err)"
	rm -f with.out plain.out off.out
done
# stderr a terminal (script(1) gives the command a pty): a read shorter than a
# second draws nothing
if command -v script >/dev/null; then
	script -qec "$SONDE export -i t.data --format=chrome -o tty.out" /dev/null >tty.log 2>&1
	[ -s tty.out ] && ! grep -q "sonde: reading" tty.log && ok "terminal: a read shorter than a second draws no line" ||
		notok "terminal: a read shorter than a second draws no line" "$(head -c 200 tty.log)"
else
	skip "terminal: a read shorter than a second draws no line" "no script(1) (bsdutils)"
fi

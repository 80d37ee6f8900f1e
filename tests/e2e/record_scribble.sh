# The collector never trusts the session memory (docs/ARCHITECTURE.md, "The
# session memory and what each side trusts"): a program that writes random bytes over its own session
# memory, 40 seeds in profile and in trace mode.  `sonde record` and every
# reader end with status 0 or 2 (never a signal, never a hang), and what the
# recorder could not use is reported, not silently turned into numbers.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O2 -g -I"$PROGS" -I"$ROOT/src" "$PROGS/scribble.c" -o scribble || { notok build "sonde-cc failed"; exit 1; }
bad=""
runs=0 reported=0
for mode in profile trace; do
	flag=; [ $mode = trace ] && flag=--trace
	for seed in $(seq 1 40); do
		d=$mode-$seed.data
		# What the program wrote may hang the program itself (its runtime reads
		# the same memory; seeds 23 and 27 spin): after 5 s it is killed (a
		# seed that does not hang ends in 0.2 s), and sonde must then finish.
		"$SONDE" record $flag -o $d -- ./scribble $seed >out.txt 2>rec.err &
		sp=$!
		for _ in $(seq 50); do kill -0 $sp 2>/dev/null || break; sleep 0.1; done
		kill -0 $sp 2>/dev/null && pkill -KILL -f "^./scribble $seed\$"
		for _ in $(seq 100); do kill -0 $sp 2>/dev/null || break; sleep 0.1; done
		kill -0 $sp 2>/dev/null && { kill -KILL $sp; wait $sp; bad="$bad record:$mode:$seed:hang"; continue; }
		wait $sp
		rc=$?
		runs=$((runs + 1))
		# The program's own death (what it wrote may kill it, even in its exit
		# path) is passed through as its status, after sonde's closing line;
		# a failure without that line is sonde's.
		if [ $rc = 124 ] || grep -q "AddressSanitizer\|runtime error" rec.err ||
			{ [ $rc != 0 ] && ! grep -q "^sonde: recorded " rec.err; }; then
			bad="$bad record:$mode:$seed:rc=$rc"; continue
		fi
		grep -q "wrote over sonde's session memory" rec.err && reported=$((reported + 1))
		# a loss count is bounded by the time that went by: this program runs
		# under 10 s, and no TSC ticks 10^10 times a second
		lost=$(sed -n 's/.*(\([0-9]*\) events lost.*/\1/p' rec.err)
		[ -n "$lost" ] && [ ${#lost} -gt 11 ] && { bad="$bad record:$mode:$seed:lost=$lost"; continue; }
		[ -d $d ] || { bad="$bad record:$mode:$seed:no-recording"; continue; }
		for cmd in "info" "report" "tree" "callers-callees mid" "export --format=chrome -o /dev/null" \
			"export --format=callgrind -o /dev/null" "replay"; do
			timeout 20 "$SONDE" $cmd -i $d --format=json >/dev/null 2>read.err
			rc=$?
			case $cmd in export*|replay) timeout 20 "$SONDE" $cmd -i $d >/dev/null 2>read.err; rc=$? ;; esac
			# callers-callees of a function the damage removed: a usage error (1), said as such
			[ $rc = 1 ] && grep -q "^sonde: error: no function" read.err && rc=0
			if [ $rc != 0 ] && [ $rc != 2 ] || grep -q "AddressSanitizer\|runtime error" read.err; then
				bad="$bad $cmd:$mode:$seed:rc=$rc"
			elif [ $rc = 2 ] && ! grep -q "^sonde: error: " read.err; then
				bad="$bad $cmd:$mode:$seed:silent-2"
			fi
		done
	done
done
# Most seeds hit values the collector reads (the thread header, the node pool,
# the module table): the damage must be seen and said, not turned into numbers.
check "damage reported by the recorder in most runs ($reported of $runs)" test $reported -ge $((runs / 2))
if [ -z "$bad" ]; then ok "$runs damaged sessions: recorder and readers end with 0 or 2, never a signal or a hang"
else notok "damaged sessions: recorder and readers end with 0 or 2" "$(echo $bad | cut -c1-800)"; fi

# sonde record killed with SIGKILL while the program runs (issue 15, "When
# sonde dies, the program does not"): the program must not notice.  A --trace
# program whose ring fills after the kill used to sleep forever in the
# runtime's full-ring wait; now the writer sees the recorder gone, drops its
# events (counted) and runs to its end.
. "$ROOT/tests/lib.sh"
# survive.c: 2 threads x 4000000 calls of outer() after the kill (some 19M
# calls in all, 90 MB of trace: many times the ring), none before.
"$SONDE_CC_BIN" -O2 -pthread -I"$PROGS" "$PROGS/survive.c" -o survive || { notok build "sonde-cc failed"; exit 1; }
./survive plain.pid plain.go 0 4000000 >plain.out 2>&1 &
pp=$!
touch plain.go
wait $pp
for mode in "--trace" "--locks=events --trace" ""; do
	name="record ${mode:-(profile)}"
	rm -f ready go out.txt
	"$SONDE" record $mode -o k -- ./survive "$PWD/ready" "$PWD/go" 0 4000000 >out.txt 2>rec.err &
	sp=$!
	for i in $(seq 1 200); do [ -s ready ] && break; sleep 0.05; done
	if [ ! -s ready ]; then notok "$name: program started" "no ready file"; kill -9 $sp; continue; fi
	pid=$(cat ready)
	kill -9 $sp
	wait $sp 2>/dev/null
	touch go
	for i in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	if kill -0 "$pid" 2>/dev/null; then
		notok "$name: the program ends after sonde was killed" "still running after 30 s (pid $pid: $(cat /proc/$pid/wchan 2>/dev/null))"
		kill -9 "$pid"
		continue
	fi
	ok "$name: the program ends after sonde was killed"
	check "$name: its output is what it prints without sonde" cmp -s out.txt plain.out
done

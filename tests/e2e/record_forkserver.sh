# A forking server (issue 40): tests/progs/fork_server.c forks a backend
# per connection; each backend prints its own count of requests served.
# Launched under `sonde record` (plain cc build patched without a rebuild,
# and a sonde-cc build) with 10 connections of 100, 200, ... 1000 requests:
# output and status unchanged; `report --processes` has 11 sections (the
# parent and the 10 backends); `report --pid PID` of each backend holds its
# requests alone (handle_request and parse_request calls equal the count
# the backend printed; no other backend's).  And one backend attached alone
# (`record -p`, the server not recorded) for 300 requests: the same counts
# as the launched recording's backend that served 300.
# Needs ptrace of a non-child for the attach: root, or ptrace_scope 0.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/attach_lib.sh"
cat > client.py <<'PY'
# client.py SOCKET N [GO]: N connections at once, the i-th sending 100 * i
# requests; with GO (N = 1: 300 requests), "connected" and then nothing
# until the file GO exists
import os, socket, sys, threading, time
path, n = sys.argv[1], int(sys.argv[2])
go = sys.argv[3] if len(sys.argv) > 3 else None
for _ in range(6000):
    if os.path.exists(path): break
    time.sleep(0.01)
def one(k):
    s = socket.socket(socket.AF_UNIX); s.connect(path)
    f = s.makefile("rw")
    if go:
        print("connected", flush=True)
        while not os.path.exists(go): time.sleep(0.01)
    for j in range(k):
        f.write("req q%d\n" % j); f.flush(); f.readline()
    s.shutdown(socket.SHUT_WR); f.read(); s.close()
ks = [300] if go else [100 * i for i in range(1, n + 1)]
ts = [threading.Thread(target=one, args=(k,)) for k in ks]
[t.start() for t in ts]; [t.join() for t in ts]
PY
${CC:-cc} -O2 -g -o fsrv "$PROGS/fork_server.c" || { notok build "cc fork_server"; exit 0; }
"$SONDE_CC_BIN" -O2 -g -o fsrv_s "$PROGS/fork_server.c" || { notok build "sonde-cc fork_server"; exit 0; }

# counts.py REPORT.json: "handle_request parse_request" calls (a clone's
# suffix, .constprop.0, is the same function)
cat > counts.py <<'PY'
import json, sys
c = {"handle_request": 0, "parse_request": 0}
for f in json.load(open(sys.argv[1]))["functions"]:
    b = f["name"].split(".")[0]
    if b in c: c[b] += f["calls"]
print(c["handle_request"], c["parse_request"])
PY
for b in fsrv fsrv_s; do
	rm -f sock.$b
	"$SONDE" record -o $b.data -- ./$b sock.$b 10 > $b.out 2> $b.err &
	sp=$!
	python3 client.py sock.$b 10
	wait $sp
	check "$b: the server and sonde exit 0, every backend served" \
		bash -c "[ $? = 0 ] && grep -qx 'parent done 10' $b.out && [ \$(grep -c '^served ' $b.out) = 10 ]"
	"$SONDE" report -i $b.data --processes --format=json > $b.procs.json 2> $b.rerr ||
		{ notok "$b: report --processes" "$(head -2 $b.rerr)"; continue; }
	check "$b: report --processes: 11 sections (the parent and 10 backends)" \
		jq_py $b.procs.json 'sys.exit(0 if len(d["processes"]) == 11 else 1)'
	bad=
	while read -r _ pid count; do
		"$SONDE" report -i $b.data --pid "$pid" --format=json > $b.$pid.json 2>> $b.rerr || { bad="$bad [$pid: report]"; continue; }
		got=$(python3 counts.py $b.$pid.json)
		[ "$got" = "$count $count" ] || bad="$bad [$pid: $got, served $count]"
		[ "$count" = 300 ] && cp $b.$pid.json $b.300.json
	done < <(grep '^served ' $b.out)
	check "$b: report --pid of each backend: handle_request and parse_request calls equal what it served" test -z "$bad"
	[ -z "$bad" ] || echo "# $bad"
done

# one backend attached alone
need_ptrace "a backend attached alone"
rm -f sock.a go
./fsrv sock.a 1 > a.out &
srv=$!
python3 client.py sock.a 1 go > a.client &
cl=$!
wait_for a.client '^connected'
be=
for _ in $(seq 500); do be=$(pgrep -P $srv | head -1); [ -n "$be" ] && break; sleep 0.02; done
[ -n "$be" ] || notok "attached: the backend started" "no child of $srv"
"$SONDE" record -p "$be" -o a.data 2> a.err &
sp=$!
wait_for a.err "recording process $be"
touch go
wait $cl
wait $srv; rc=$?
wait $sp; src=$?
check "attached: the server exits 0 and sonde ends with the backend (0)" \
	bash -c "[ $rc = 0 ] && [ $src = 0 ] && grep -qx 'served $be 300' a.out"
"$SONDE" report -i a.data --format=json > a.json 2> a.rerr || notok "attached: report" "$(head -2 a.rerr)"
got=$(python3 counts.py a.json)
check "attached: the backend's calls equal what it served (300) and the launched recording's backend of 300 ($got)" \
	bash -c "[ '$got' = '300 300' ] && [ \"\$(python3 counts.py fsrv.300.json)\" = '$got' ]"

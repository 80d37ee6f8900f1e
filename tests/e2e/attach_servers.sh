#!/usr/bin/env bash
# attach_servers.sh — issue 37's servers: two real servers from Debian
# packages, plain stripped builds never rebuilt (their functions are patched
# from the dynamic symbol table at each attach), under their own load
# generators, 20 attach cycles each in a row mixing `sonde record -p`,
# `record --trace -p`, `record --locks -p` and `sonde probe -p`, five of them
# ended by SIGKILL of sonde while the load runs.
# - PostgreSQL 15 (a process per connection): initdb -A trust into the
#   scratch directory, its unix socket there, run as nobody (it refuses
#   root; sonde runs as root in the odd cycles, as `sudo sonde` would, and as
#   nobody in the even ones). pgbench, one client, runs `UPDATE counter SET n = n + 1`
#   for the whole test; the cycles attach to its backend. Each window is cut
#   with pgbench stopped (SIGSTOP) and the backend idle in its wait for the
#   client, so the table's counter read from another connection is the
#   server's own count of the window's statements: pg_parse_query's calls
#   (once per simple-protocol query) must equal it.
# - Redis 7 (threaded: its bio threads), on a unix socket, no persistence.
#   Each window runs `redis-benchmark -t incr -n 1500`; the server's own
#   total_commands_processed (INFO) gives the window's commands:
#   processCommand's calls must equal them. The killed cycles run the
#   benchmark in the background and kill sonde in its middle; at the end the
#   INCRed key holds every request the benchmarks made.
# After the cycles: the server still answers, its resident memory (without
# PostgreSQL's own shared memory, which a backend touches as it goes) within
# 1 MiB of what it was after the first cycle, and it exits normally (status
# 0) when told to. Run time ~60-90 s idle.
# Needs ptrace of a non-child: root, or kernel.yama.ptrace_scope 0.
# test-timeout: 900
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
need_ptrace "attach to servers"

PGBIN=/usr/lib/postgresql/15/bin
# the PostgreSQL side runs as nobody when the test is root (postgres refuses root)
asuser=()
if [ "$(id -u)" = 0 ]; then
	asuser=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
	chown nobody:nogroup "$T"
fi

# the cycles: MODE KILL (1: SIGKILL of sonde while the load runs)
cycles=(
	"profile 0" "trace 0" "locks 0" "probe 0" "profile 1"
	"trace 0" "locks 0" "probe 0" "trace 1" "profile 0"
	"locks 1" "probe 0" "profile 0" "trace 0" "probe 1"
	"locks 0" "profile 1" "trace 0" "locks 0" "profile 0"
)

# poll_until SECONDS COMMAND...: 0 once COMMAND succeeds, 1 after SECONDS
poll_until() {
	local n=$(( $1 * 50 )); shift
	for _ in $(seq "$n"); do "$@" && return 0; sleep 0.02; done
	return 1
}
# attach_sonde NAME MODE PID FUNC: sonde attached in the background (as
# $runas), its own pid in sp; 0 once it says it records (probes are in)
attach_sonde() {
	local name=$1 mode=$2 p=$3 fn=$4 opts=()
	case $mode in
	trace) opts=(--trace) ;;
	locks) opts=(--locks) ;;
	esac
	if [ "$mode" = probe ]; then
		"${runas[@]}" "$SONDE" probe -p "$p" -e "func:$fn" --format=json -o "$name.json" 2> "$name.err" &
		sp=$!
		wait_for "$name.err" '^sonde: probes in process'
	else
		"${runas[@]}" "$SONDE" record "${opts[@]}" -p "$p" -o "$name.data" 2> "$name.err" &
		sp=$!
		wait_for "$name.err" "recording process $p"
	fi
}
# calls_of NAME MODE FUNC: FUNC's calls in cycle NAME's recording (or probe hits)
calls_of() {
	if [ "$2" = probe ]; then
		jq_py "$1.json" "print(d['probes'][0]['calls'])"
	else
		"$SONDE" report -i "$1.data" --format=json > "$1.rep" 2> "$1.rerr" &&
			jq_py "$1.rep" "f={x['name']: x['calls'] for x in d['functions']}; assert d['lost_events'] == 0, d['lost_events']; print(f.get('$3', 0))"
	fi
}
# cpu_split_of LABEL NAME FUNC: issue 38 on a real server, from cycle
# NAME's report: the time split was measured; the function today's report
# puts first (most exclusive wall time: the server waiting for its client)
# spent it mostly off the CPU (over half); FUNC (the work of a request:
# parsing a query, running a command) mostly on it (over half). That work
# never blocks, but a loaded machine preempts it: one preemption inside it
# is a slice of another task, as long as all of FUNC's calls in a window;
# and the wait's own CPU part (the system call, the wake-up) grows with the
# load (CI: 78% off the CPU, where an idle machine gives over 90%).
# The server's threads run at a real-time priority (realtime) when the test
# may set it, so only their own waits are off the CPU.
cpu_split_of() {
	python3 - "$1" "$2.rep" "$3" <<'PY'
import json, sys
label, path, fn = sys.argv[1:4]
d = json.load(open(path))
ok = lambda c, n, why="": print(("ok - " if c else "not ok - ") + n + ("" if c else ": " + why))
ok(d.get("cpu_split") == "measured", f"{label}: the CPU split was measured", str(d.get("cpu_split")))
fs = [f for f in d["functions"] if f.get("exclusive_cpu_ns") is not None]
if not fs:
    sys.exit(0)
top = max(fs, key=lambda f: f["exclusive_ns"])
off = 1 - top["exclusive_cpu_ns"] / top["exclusive_ns"] if top["exclusive_ns"] else 0
ok(off > 0.5, f"{label}: the first function by exclusive time ({top['name']}) waited: {100 * off:.0f}% of it off the CPU",
   str(top))
w = next((f for f in fs if f["name"] == fn), None)
cpu = w["inclusive_cpu_ns"] / w["inclusive_ns"] if w and w["inclusive_ns"] else 0
ok(cpu > 0.5, f"{label}: {fn} (a request's work) ran: {100 * cpu:.0f}% of its time on a CPU", str(w))
PY
}
# server_exports LABEL NAME MODE: issue 38's exports of a real server's
# recording, read by their consumers: a profile's pprof file by go tool
# pprof (its cpu and off_cpu sample types: each total is the report's sum of
# exclusive CPU / off-CPU time, within 1%); a trace's Perfetto file decoded
# with Perfetto's protobuf schema, each recorded thread's state track beside
# its slices (running slices with their CPU, blocked ones: the server waits
# for its client), in order, none overlapping.
server_exports() {
	local label=$1 name=$2 mode=$3
	if [ "$mode" = profile ]; then
		command -v go > /dev/null && go tool pprof -h > /dev/null 2>&1 ||
			{ skip "$label: go tool pprof reads the CPU types" "golang-go is not installed"; return; }
		"$SONDE" export -i "$name.data" --format=pprof -o "$name.pb.gz" 2> "$name.xerr" ||
			{ notok "$label: pprof export" "$(tail -2 "$name.xerr")"; return; }
		local t
		for t in cpu off_cpu; do
			GOCACHE="$T/gocache" HOME="${HOME:-$T}" go tool pprof -top -sample_index=$t -unit=ns -nodecount=5 \
				"$name.pb.gz" > "$name.$t.top" 2> "$name.xerr" ||
				notok "$label: go tool pprof -sample_index=$t" "$(tail -2 "$name.xerr")"
		done
		python3 - "$label" "$name" <<'PY'
import json, re, sys
label, name = sys.argv[1:3]
ok = lambda c, n, why="": print(("ok - " if c else "not ok - ") + n + ("" if c else ": " + why))
d = json.load(open(name + ".rep"))
fs = [f for f in d["functions"] if f.get("exclusive_cpu_ns") is not None]
want = {"cpu": sum(f["exclusive_cpu_ns"] for f in fs), "off_cpu": sum(f["exclusive_ns"] - f["exclusive_cpu_ns"] for f in fs)}
for t in ("cpu", "off_cpu"):
    m = re.search(r"of ([0-9.]+)(ns|us|ms|s) total", open(f"{name}.{t}.top").read())
    got = float(m.group(1)) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)] if m else None
    ok(got is not None and abs(got - want[t]) <= 0.01 * want[t] + 1e3,
       f"{label}: go tool pprof reads the {t} sample type: {want[t] / 1e6:.1f} ms in all, the report's",
       f"pprof {got}, report {want[t]}")
PY
	else
		"$SONDE" export -i "$name.data" --format=perfetto -o "$name.pftrace" 2> "$name.xerr" ||
			{ notok "$label: perfetto export" "$(tail -2 "$name.xerr")"; return; }
		perfetto_pb "$T/pb" || { skip "$label: state tracks" "python3-protobuf or protoc not installed"; return; }
		"$PB_PY" "$ROOT/tests/perfetto_pb_decode.py" "$T/pb" "$name.pftrace" > "$name.dec" 2> "$name.xerr" ||
			{ notok "$label: the perfetto export decodes" "$(tail -2 "$name.xerr")"; return; }
		python3 - "$label" "$name.dec" <<'PY'
import json, sys
label, path = sys.argv[1:3]
ok = lambda c, n, why="": print(("ok - " if c else "not ok - ") + n + ("" if c else ": " + why))
d = json.load(open(path))
ok(not d["errors"], f"{label}: the Perfetto export decodes with Perfetto's schema", "; ".join(d["errors"][:3]))
st = {tid: t["tracks"][f"{tid} state"] for tid, t in d["threads"].items() if t["slices"] and f"{tid} state" in t.get("tracks", {})}
busy = [tid for tid, t in d["threads"].items() if t["slices"]]
ok(busy and sorted(st) == sorted(busy), f"{label}: each recorded thread ({len(busy)}) has its state track", f"{sorted(st)} of {busy}")
bad = []
for tid, tr in st.items():
    kinds = {x[0] for x in tr}
    s = sorted(tr, key=lambda x: x[1])
    if not {"running", "blocked"} <= kinds:
        bad.append(f"{tid}: states {sorted(kinds)}")
    if any(s[i][2] > s[i + 1][1] + 1000 for i in range(len(s) - 1)):
        bad.append(f"{tid}: slices overlap")
    if not all("cpu" in x[4] for x in tr if x[0] == "running"):
        bad.append(f"{tid}: a running slice without its CPU")
ok(st and not bad, f"{label}: the state tracks run and block (the server waits for its client), in order, none overlapping, each run on a CPU", "; ".join(bad[:3]))
PY
	fi
}
# realtime PID: PID's threads at real-time priority (SCHED_FIFO 1), where
# the machine's other work does not preempt them; 0 if it could be set
realtime() {
	[ "$(id -u)" = 0 ] && chrt -a -f -p 1 "$1" > /dev/null &&
		echo "# $(chrt -p "$1" | head -1)"
}
# rss_own PID: resident kB of PID's mappings, without System V / anonymous
# shared memory and /dev/shm segments (PostgreSQL's buffers and WAL)
rss_own() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { skip = ($6 ~ /^\/(SYSV|dev\/zero|dev\/shm\/PostgreSQL)/) }
	     /^Rss:/ && !skip { s += $2 } END { print s }' "/proc/$1/smaps"
}

# smaps_by_name PID: resident kB per mapping name (anonymous ones: [anon]), sorted
smaps_by_name() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { n = ($6 == "" ? "[anon]" : $6) } /^Rss:/ { s[n] += $2 }
	     END { for (n in s) print n, s[n] }' "/proc/$1/smaps" | sort
}

# run_cycles SERVER PID FUNC: the 20 cycles on PID, the server's hooks:
# srv_window_start / srv_window_end (the load in the window, the server's
# own count of FUNC's calls in it printed by srv_window_end), srv_load_bg /
# srv_load_bg_wait (load while sonde is killed).
run_cycles() {
	local S=$1 p=$2 fn=$3 i=0 c mode kill name got want first= last
	for c in "${cycles[@]}"; do
		i=$((i + 1))
		set -- $c
		mode=$1 kill=$2 name="$S-c$i"
		# PostgreSQL's odd cycles by a root sonde (as `sudo sonde record -p`
		# on a server's process: attach/fd_share.c), its even ones as nobody
		[ -n "$root_odd" ] && { [ $((i % 2)) = 1 ] && runas=() || runas=("${asuser[@]}"); }
		if ! attach_sonde "$name" "$mode" "$p" "$fn"; then
			notok "$S: cycle $i ($mode): attached" "$(tail -2 "$name.err")"
			kill -KILL "$sp" 2>/dev/null; wait "$sp" 2>/dev/null
			continue
		fi
		if [ "$kill" = 1 ]; then
			srv_load_bg
			kill -KILL "$sp"
			wait "$sp" 2>/dev/null
			check "$S: cycle $i ($mode, SIGKILL of sonde under load): the agent saw it and ended" agent_ended "$p"
			check "$S: cycle $i: the load ran on unharmed" srv_load_bg_wait
		else
			srv_window_start
			want=$(srv_window_end)
			kill -INT "$sp"
			wait "$sp"
			check "$S: cycle $i ($mode): sonde ends with status 0" test $? -eq 0
			check "$S: cycle $i ($mode): the agent has ended" agent_ended "$p"
			got=$(calls_of "$name" "$mode" "$fn" 2>&1)
			if [ -n "$want" ] && [ "$got" = "$want" ]; then
				ok "$S: cycle $i ($mode): $fn's calls equal the server's own count of the window ($want)"
			else
				notok "$S: cycle $i ($mode): $fn's calls equal the server's own count of the window" "recorded '$got', the server counted '$want'"
			fi
			[ "$mode" = profile ] && cpu_split_of "$S: cycle $i" "$name" "$fn"
			# the first profile and trace cycles: their exports' consumers
			case $i in 1 | 2) server_exports "$S: cycle $i" "$name" "$mode" ;; esac
		fi
		last=$(rss_own "$p")
		[ -z "$first" ] && { first=$last; smaps_by_name "$p" > "$S.smaps1"; }
		k=; [ "$kill" = 1 ] && k=", killed"
		echo "# $S: after cycle $i ($mode$k): resident $last kB (own), $(grep -c . "/proc/$p/maps") mappings"
	done
	# where it grew: the mappings (by name) whose resident memory grew most
	smaps_by_name "$p" > "$S.smaps20"
	join -a2 -e0 -o 0,1.2,2.2 "$S.smaps1" "$S.smaps20" | awk '$3 - $2 > 64 {print "# " $1 ": " $2 " -> " $3 " kB resident"}'
	grep -E 'sonde' "/proc/$p/maps" | awk '{print "# " $1, $2, $6}' | sort -k3 | uniq -c -f2 | sed 's/^/# /'
	check "$S: one runtime loaded, at most one session mapped (the last one's, until the next attach: docs/ATTACH.md)" \
		bash -c "[ \$(grep libsonde-rt /proc/$p/maps | awk '{print \$6}' | sort -u | wc -l) -le 1 ] && [ \$(grep -c sonde-session /proc/$p/maps) -le 1 ]"
	# each probe -p session's area (8 MB of address space) goes one session
	# after its end: after the cycles' four probe sessions, two at most
	check "$S: at most two probe areas mapped after $(printf '%s\n' "${cycles[@]}" | grep -c '^probe') probe sessions ($(grep -c 'sonde-probes' "/proc/$p/maps"))" \
		test "$(grep -c 'sonde-probes' "/proc/$p/maps")" -le 2
	# Issue 37: within 1 MiB.  What stays of sonde after a session: the trap
	# tables of the session before (src/rt/instr.c, given back one session
	# later), each probe -p area's header and used sites (its unused site
	# records are never touched: probe_area.h nused), the last session's file.
	check "$S: resident memory from after cycle 1 to after cycle 20 within 1 MiB ($(( last - first )) kB)" \
		test $(( last - first )) -lt 1024
}

# ================= PostgreSQL 15 =================
if [ ! -x "$PGBIN/postgres" ] || ! command -v pgbench > /dev/null; then
	skip "attach to PostgreSQL" "postgresql-15 is not installed"
else
	runas=("${asuser[@]}")
	"${asuser[@]}" "$PGBIN/initdb" -A trust -U postgres -D "$T/pg" > initdb.log 2>&1 ||
		notok "PostgreSQL: initdb" "$(tail -2 initdb.log)"
	"${asuser[@]}" "$PGBIN/postgres" -D "$T/pg" -k "$T" -c listen_addresses= -c fsync=off \
		-c synchronous_commit=off -c autovacuum=off > pg.log 2>&1 &
	pm=$!
	psqlq() { psql -h "$T" -U postgres -d postgres -XAtqc "$1"; }
	poll_until 60 psqlq "select 1" > /dev/null || notok "PostgreSQL: started" "$(tail -3 pg.log)"
	psqlq "create table counter (n bigint); insert into counter values (0)" > /dev/null
	echo 'UPDATE counter SET n = n + 1;' > inc.sql
	pgbench -h "$T" -U postgres -n -c 1 -j 1 -f inc.sql -T 100000 postgres > pgbench.out 2>&1 &
	gb=$!
	# the backend of pgbench's client, which runs the UPDATE (pgbench's first
	# connection, which only asks the server's version, has the same
	# application_name and is gone a moment later: seen under load, every
	# cycle then attached to a pid that no longer existed)
	backend_of() { be=$(psqlq "select pid from pg_stat_activity where application_name = 'pgbench' and query like 'UPDATE counter%'"); [ -n "$be" ] && [ -d "/proc/$be" ]; }
	poll_until 60 backend_of || notok "PostgreSQL: pgbench connected" "$(tail -3 pgbench.out)"
	realtime "$be"
	counter() { psqlq "select n from counter"; }
	counter_at_least() { [ "$(counter)" -ge "$1" ]; }
	stopped() { [ "$(awk '{print $3}' "/proc/$gb/stat")" = T ]; }
	# the backend waits for its client (epoll) with pgbench stopped: no
	# statement in flight, none to come
	idle() { [ "$(cat "/proc/$be/wchan")" = do_epoll_wait ]; }
	pause() { kill -STOP "$gb"; poll_until 60 stopped && poll_until 60 idle; }
	srv_window_start() { local c0; c0=$(counter); n0=$c0; kill -CONT "$gb"; poll_until 120 counter_at_least $((c0 + 300)); }
	srv_window_end() { pause >&2 || echo "# pgbench or its backend did not stop" >&2; echo $(( $(counter) - n0 )); }
	srv_load_bg() { local c0; c0=$(counter); kill -CONT "$gb"; poll_until 120 counter_at_least $((c0 + 200)); }
	srv_load_bg_wait() { local c0; c0=$(counter); poll_until 120 counter_at_least $((c0 + 200)) && pause; }
	pause
	root_odd=; [ "$(id -u)" = 0 ] && root_odd=1
	run_cycles PostgreSQL "$be" pg_parse_query
	root_odd=
	check "PostgreSQL: the server still answers after the cycles" bash -c "[ \"\$(psql -h '$T' -U postgres -d postgres -XAtqc 'select 6*7')\" = 42 ]"
	kill -CONT "$gb"; kill -TERM "$gb"; wait "$gb" 2>/dev/null
	kill -INT "$pm"   # fast shutdown
	wait "$pm"
	check "PostgreSQL: the server exits with status 0 (fast shutdown)" test $? -eq 0
	check "PostgreSQL: its log says it shut down, no PANIC or crash" \
		bash -c "grep -q 'database system is shut down' pg.log && ! grep -E 'PANIC|terminated by signal|server process .* was terminated' pg.log"
fi

# ================= Redis (threaded) =================
if ! command -v redis-server > /dev/null || ! command -v redis-benchmark > /dev/null; then
	skip "attach to Redis" "redis-server (redis-tools) is not installed"
else
	runas=()
	sock=$T/redis.sock
	redis-server --port 0 --unixsocket "$sock" --save '' --appendonly no --dir "$T" > redis.log 2>&1 &
	rp=$!
	rcli() { redis-cli -s "$sock" "$@"; }
	poll_until 60 bash -c "[ \"\$(redis-cli -s '$sock' ping 2>/dev/null)\" = PONG ]" || notok "Redis: started" "$(tail -3 redis.log)"
	incrs=0
	bench() { redis-benchmark -s "$sock" -t incr -n 1500 -c 4 -q > "bench$incrs.out" 2>&1; }
	processed() { rcli info stats | tr -d '\r' | sed -n 's/^total_commands_processed://p'; }
	srv_window_start() { c0=$(processed); bench; incrs=$((incrs + 1500)); }
	# the INFO before the window's load and the one after it are calls
	# too; INFO counts a command once it has run (its own after its reply)
	srv_window_end() { echo $(( $(processed) - c0 + 1 )); }
	srv_load_bg() { bench & bp=$!; incrs=$((incrs + 1500)); poll_until 60 bash -c "[ \"\$(redis-cli -s '$sock' get counter:__rand_int__)\" -ge $((incrs - 1000)) ] 2>/dev/null"; }
	srv_load_bg_wait() { wait "$bp"; }
	bench; incrs=1500 # warm-up, nobody attached
	realtime "$rp"
	run_cycles Redis "$rp" processCommand
	check "Redis: the key holds every INCR the benchmarks made ($incrs)" test "$(rcli get counter:__rand_int__)" = "$incrs"
	rcli shutdown nosave > /dev/null 2>&1
	wait "$rp"
	check "Redis: the server exits with status 0 (SHUTDOWN)" test $? -eq 0
fi

#!/usr/bin/env bash
# bench/redis_timing_bench.sh — record --timing (issue 39) on a second real
# server: Debian's redis-server (its package binary, stripped, patched
# without a rebuild) under redis-benchmark (GET and SET, one client, no
# pipelining, over a Unix socket), side by side in one run: plain, then sonde
# record --timing=all, none and auto, launched (sonde starts the server) and
# attached (sonde record -p to a server started plain; the benchmark's
# connection is made after the attach).  Each: requests/s of GET and SET
# (the median of REPS runs of N requests each), and, for the launched ones,
# the calls sonde recorded.  Then the calls of one fixed workload (N SETs
# and N GETs) under all, none and auto: how many functions have the same
# count (the server's cron runs HZ times a second, so the functions it calls
# follow the run's length, not the workload).
# Never fails on timing.   usage: BUILD=build bash bench/redis_timing_bench.sh
set -u
: "${BUILD:?}"
BUILD=$(cd "$BUILD" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
SONDE=$BUILD/bin/sonde
REPS=${REPS:-3} N=${N:-100000}
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	{ echo "redis-server and redis-tools are not installed"; exit 0; }
W=$(mktemp -d /tmp/sonde-redisbench.XXXXXX); cd "$W" || exit 1
sock=$W/redis.sock
ropts=(--port 0 --unixsocket "$sock" --save '' --appendonly no --dir "$W")
up() { for _ in $(seq 600); do redis-cli -s "$sock" ping 2>/dev/null | grep -q PONG && return 0; sleep 0.1; done; return 1; }
down() { redis-cli -s "$sock" shutdown nosave >/dev/null 2>&1; for _ in $(seq 600); do [ -e "$sock" ] || return 0; sleep 0.1; done; }
# rps: "GET SET" requests/s of one redis-benchmark run
rps() {
	redis-benchmark -s "$sock" -t get,set -n "$N" -c 1 -P 1 -q 2>/dev/null | tr '\r' '\n' |
		awk '/^SET:/ {s = $2} /^GET:/ {g = $2} END {print g + 0, s + 0}'
}
calls() { "$SONDE" report -i "$1" --format=json 2>/dev/null | python3 -c "import json,sys; print(sum(f['calls'] for f in json.load(sys.stdin)['functions']))" 2>/dev/null; }
med() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# launched MODE: the server started by sonde (MODE plain: without)
launched() {
	local m=$1 r
	for r in $(seq "$REPS"); do
		if [ "$m" = plain ]; then redis-server "${ropts[@]}" >rs-$m.log 2>&1 &
		else "$SONDE" record --timing=$m -o "$m-$r.data" -- redis-server "${ropts[@]}" >rs-$m.log 2>&1 & fi
		up || { echo "the server did not start ($m)" >&2; tail -3 rs-$m.log >&2; return; }
		rps >>"rps-l-$m"
		down; wait
	done
}

# attached MODE: sonde record -p to a running server
attached() {
	local m=$1 r s p
	for r in $(seq "$REPS"); do
		redis-server "${ropts[@]}" >rs-a.log 2>&1 &
		p=$!
		up || return
		"$SONDE" record --timing=$m -p "$p" -o "a-$m-$r.data" >a-$m.log 2>&1 &
		s=$!
		for _ in $(seq 600); do grep -qs "recording process" a-$m.log && break; sleep 0.1; done
		rps >>"rps-a-$m"
		kill -INT $s; wait $s
		down; wait
	done
}

for m in plain all none auto; do launched $m; done
for m in all none auto; do attached $m; done
lscpu | grep "Model name"
echo "REPS=$REPS N=$N redis-benchmark -t get,set -c 1 -P 1 (Redis $(redis-server --version | awk '{print $3}' | sed 's/^v=//'), package binary)"
pg=$(awk '{print $1}' rps-l-plain | med) ps=$(awk '{print $2}' rps-l-plain | med)
printf "%-8s %10s %7s %10s %7s %14s %10s %7s %10s %7s\n" mode "GET/s" "%" "SET/s" "%" calls "att GET/s" "%" "att SET/s" "%"
for m in plain all none auto; do
	g=$(awk '{print $1}' rps-l-$m | med) s=$(awk '{print $2}' rps-l-$m | med)
	ag=$([ -s rps-a-$m ] && awk '{print $1}' rps-a-$m | med || echo 0)
	as=$([ -s rps-a-$m ] && awk '{print $2}' rps-a-$m | med || echo 0)
	c=$([ $m = plain ] && echo - || calls "$m-1.data")
	python3 -c "
pg, ps = float('$pg'), float('$ps')
g, s, ag, as_ = float('$g'), float('$s'), float('$ag'), float('$as')
att = f'{ag:10.0f} {100 * ag / pg:6.1f}% {as_:10.0f} {100 * as_ / ps:6.1f}%' if ag else f'{\"-\":>10} {\"\":7} {\"-\":>10}'
print(f'%-8s %10.0f %6.1f%% %10.0f %6.1f%% %14s %s' % ('$m', g, 100 * g / pg, s, 100 * s / ps, '$c', att))"
done

# the calls of one workload, function by function
for m in all none auto; do
	"$SONDE" record --timing=$m -o "fix-$m.data" -- redis-server "${ropts[@]}" >rs-fix.log 2>&1 &
	up && redis-benchmark -s "$sock" -t get,set -n "$N" -c 1 -P 1 -q >/dev/null 2>&1
	down; wait
	"$SONDE" report -i "fix-$m.data" --format=json >"fix-$m.json" 2>/dev/null
done
for m in none auto; do python3 "$HERE/timing_counts.py" fix-all.json fix-$m.json "$m"; done
cd / && rm -rf "$W"

#!/usr/bin/env bash
# bench/pg_timing_bench.sh — record --timing (issue 39) on a real server:
# Debian's PostgreSQL 15 (its package binary, patched without a rebuild)
# under `pgbench -S` (read-only selects, one client), side by side in one
# run: plain, then sonde record --timing=all, none and auto, launched (sonde
# starts the postmaster; --exec '*postgres' leaves setpriv alone) and
# attached (sonde record -p to a postmaster started plain; pgbench's
# backend is forked after the attach).  Each: transactions/s over DUR
# seconds (median of REPS), and, for the launched ones, the calls sonde
# recorded.  Then the calls of one fixed workload (pgbench -S -t TX) under
# all, none and auto: how many functions have the same count in each (the
# server's background processes make some calls that depend on time, so
# equality is expected of the backend's functions, not of every process).
# Never fails on timing.   usage: BUILD=build bash bench/pg_timing_bench.sh
set -u
: "${BUILD:?}"
BUILD=$(cd "$BUILD" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
SONDE=$BUILD/bin/sonde
REPS=${REPS:-3} DUR=${DUR:-5} TX=${TX:-3000}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
[ -x "$PGBIN/postgres" ] && command -v pgbench >/dev/null || { echo "postgresql-15 is not installed"; exit 0; }
W=$(mktemp -d /tmp/sonde-pgbench.XXXXXX); chmod 755 "$W"; cd "$W" || exit 1
asuser=()
[ "$(id -u)" = 0 ] && asuser=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
mkdir pg sock; [ "$(id -u)" = 0 ] && chown nobody:nogroup pg sock
"${asuser[@]}" "$PGBIN/initdb" -A trust -U postgres -D "$W/pg" >initdb.log 2>&1 || { tail -3 initdb.log; exit 1; }
pgopts=(-D "$W/pg" -k "$W/sock" -c listen_addresses= -c fsync=off -c autovacuum=off)
up() { for _ in $(seq 600); do psql -h "$W/sock" -U postgres -d postgres -XAtqc "select 1" >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
pm() { head -1 "$W/pg/postmaster.pid" 2>/dev/null; }
down() { local p; p=$(pm); [ -n "$p" ] && kill -INT "$p"; for _ in $(seq 600); do [ -e "$W/pg/postmaster.pid" ] || return 0; sleep 0.1; done; }
tps() { pgbench -h "$W/sock" -U postgres -n -S -c 1 -j 1 "$@" postgres 2>/dev/null | awk '/^tps = / { print $3; exit }'; }
calls() { "$SONDE" report -i "$1" --format=json 2>/dev/null | python3 -c "import json,sys; print(sum(f['calls'] for f in json.load(sys.stdin)['functions']))" 2>/dev/null; }
med() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

"${asuser[@]}" "$PGBIN/postgres" "${pgopts[@]}" >pg-init.log 2>&1 &
up && pgbench -h "$W/sock" -U postgres -i -s 1 postgres >pgbench-init.log 2>&1
down; wait

# launched MODE: the postmaster started by sonde (MODE plain: without)
launched() {
	local m=$1 r
	for r in $(seq "$REPS"); do
		if [ "$m" = plain ]; then "${asuser[@]}" "$PGBIN/postgres" "${pgopts[@]}" >pg-$m.log 2>&1 &
		else "$SONDE" record --timing=$m --exec '*postgres' -o "$m-$r.data" -- "${asuser[@]}" "$PGBIN/postgres" "${pgopts[@]}" >pg-$m.log 2>&1 & fi
		up || { echo "the server did not start ($m)" >&2; tail -3 pg-$m.log >&2; return; }
		tps -T "$DUR" >>"tps-l-$m"
		down; wait
	done
}

# attached MODE: sonde record -p to a running postmaster, pgbench's connection made after
attached() {
	local m=$1 r s
	for r in $(seq "$REPS"); do
		"${asuser[@]}" "$PGBIN/postgres" "${pgopts[@]}" >pg-a.log 2>&1 &
		up || return
		"$SONDE" record --timing=$m -p "$(pm)" -o "a-$m-$r.data" >a-$m.log 2>&1 &
		s=$!
		for _ in $(seq 600); do grep -qs "attached\|recording" a-$m.log && break; sleep 0.1; done
		tps -T "$DUR" >>"tps-a-$m"
		kill -INT $s; wait $s
		down; wait
	done
}

for m in plain all none auto; do launched $m; done
for m in all none auto; do attached $m; done
lscpu | grep "Model name"
echo "REPS=$REPS DUR=${DUR}s pgbench -S -c 1 (PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}'), package binary)"
plain=$(med <tps-l-plain)
printf "%-10s %10s %8s %14s %10s %8s\n" mode "launched" "%" "calls" "attached" "%"
for m in plain all none auto; do
	l=$(med <tps-l-$m)
	a=$([ -s tps-a-$m ] && med <tps-a-$m || echo -)
	c=$([ $m = plain ] && echo - || calls "$m-1.data")
	python3 -c "
p, l, a = float('$plain'), float('$l'), '$a'
pa = f'{100 * float(a) / p:7.1f}%' if a != '-' else '       -'
print(f'%-10s %10.0f %7.1f%% %14s %10s %s' % ('$m', l, 100 * l / p, '$c', a if a == '-' else f'{float(a):.0f}', pa))"
done

# the calls of one workload, function by function
for m in all none auto; do
	"$SONDE" record --timing=$m --exec '*postgres' -o "fix-$m.data" -- "${asuser[@]}" "$PGBIN/postgres" "${pgopts[@]}" >pg-fix.log 2>&1 &
	up && tps -t "$TX" --random-seed=1 >/dev/null
	down; wait
	"$SONDE" report -i "fix-$m.data" --processes --format=json >"fix-$m.json" 2>/dev/null
done
for m in none auto; do python3 "$HERE/timing_counts.py" --busiest fix-all.json fix-$m.json "backend, $m"; done
cd / && rm -rf "$W"

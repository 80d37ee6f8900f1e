#!/usr/bin/env bash
# probe_agent_realprogs.sh — the agent probe engine on real programs nobody
# here wrote, plain builds (no sonde-cc) from Debian sources, cached in
# SONDE_TEST_CACHE: Lua built with clang (C), LevelDB's db_bench built with
# g++ (C++, names with "::", a background compaction thread), SQLite's
# speedtest1 built with gcc.  Expected counts come from the programs: the
# Lua script counts its own tostring() calls, db_bench does --num writes and
# reads (and prints "N of N found"), and gdb counts sqlite3_step's hits of
# the same run.  Output and exit status unchanged.
# test-timeout: 1500
source "$ROOT/tests/lib.sh"
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}

# ---- Lua (clang) ----
if ! command -v clang >/dev/null; then
	skip "lua (clang): agent probes" "clang not installed"
elif ! sh "$ROOT/tools/fetch-lua.sh" "$cache" > fetch.log 2>&1; then
	skip "lua (clang): agent probes" "no Lua source ($(tail -1 fetch.log))"
else
	lua=$cache/lua-clang
	if real_build lua-clang lua clang -g; then
		cp "$PROGS/tostring.lua" t.lua
		"$lua" t.lua > lua.plain; prc=$?
		n=$(awk '$1 == "tostring" {print $2}' lua.plain)
		L=$(grep -n '^static int luaB_tostring' "$cache/lua/src/lbaselib.c" | cut -d: -f1)
		"$SONDE" probe --format=json -o lua.json -e func:luaB_tostring -e "line:lbaselib.c:$((L + 1))" \
			-e func:luaV_execute -- "$lua" t.lua > lua.out 2> lua.err
		rc=$?
		check "lua (clang): sonde exits 0, the program as without it" test "$rc" -eq 0 -a "$prc" -eq 0
		check "lua (clang): output unchanged" cmp -s lua.plain lua.out
		# the line's first instruction is 4 bytes into the function, inside
		# the entry's jump: the entry becomes an int3, said; the line a jump
		check "lua (clang): engine agent; the entry an int3 under the line's jump, said" jq_py lua.json \
			"p=d['probes']; assert d['target']['engine'] == 'agent' and p[0]['int3_sites'] == 1 and p[0]['int3_reason'] == \"another probe's site was placed inside its jump\" and p[1]['int3_sites'] == 0, p[:2]"
		check "lua (clang): func luaB_tostring counts the script's $n tostring calls" jq_py lua.json \
			"p=d['probes'][0]; assert p['calls'] == p['returns'] == $n, p"
		check "lua (clang): a line of luaB_tostring counts them too" jq_py lua.json \
			"p=d['probes'][1]; assert p['hits'] == $n, p"
		check "lua (clang): luaV_execute's calls all return" jq_py lua.json \
			"p=d['probes'][2]; assert p['calls'] > 0 and p['calls'] == p['returns'], p"
	else
		notok "lua builds with clang" "$(tail -3 build-lua-clang.log)"
	fi
fi

# ---- LevelDB db_bench (g++, C++) ----
if ! sh "$ROOT/tools/fetch-src.sh" leveldb "$cache/src" > fetch.log 2>&1; then
	skip "leveldb (g++): agent probes" "could not fetch leveldb ($(tail -1 fetch.log))"
else
	dir=$cache/leveldb-plain-gcc
	if real_build leveldb-plain-gcc leveldb gcc g++ -g; then
		rm -rf db1 db2
		"$dir/db_bench" --benchmarks=fillseq,readrandom --num=3000 --db="$PWD/db1" > ldb.plain 2>&1; prc=$?
		"$SONDE" probe --format=json -o ldb.json -e 'func:leveldb::DBImpl::Write' -e 'func:leveldb::DBImpl::Get' \
			-- "$dir/db_bench" --benchmarks=fillseq,readrandom --num=3000 --db="$PWD/db2" > ldb.out 2> ldb.err
		rc=$?
		check "leveldb (g++): sonde exits 0, the program as without it" test "$rc" -eq 0 -a "$prc" -eq 0
		check "leveldb (g++): it read back every key, as without sonde" \
			sh -c "grep -q '(3000 of 3000 found)' ldb.plain && grep -q '(3000 of 3000 found)' ldb.out"
		check "leveldb (g++): func leveldb::DBImpl::Write: the 3000 writes of --num=3000" jq_py ldb.json \
			"p=d['probes'][0]; assert d['target']['engine'] == 'agent' and p['calls'] == p['returns'] == 3000 and p['where'].startswith('leveldb::DBImpl::Write('), p"
		check "leveldb (g++): func leveldb::DBImpl::Get: the 3000 reads" jq_py ldb.json \
			"p=d['probes'][1]; assert p['calls'] == p['returns'] == 3000, p"
	else
		notok "leveldb builds with g++" "$(tail -3 build-leveldb-plain-gcc.log)"
	fi
fi

# ---- SQLite speedtest1 (gcc), against gdb's count ----
if ! command -v gdb >/dev/null; then
	skip "sqlite (gcc): agent probes" "gdb not installed (it gives the expected count)"
elif ! sh "$ROOT/tools/fetch-src.sh" sqlite3 "$cache/src" > fetch.log 2>&1; then
	skip "sqlite (gcc): agent probes" "could not fetch sqlite3 ($(tail -1 fetch.log))"
else
	dir=$cache/sqlite-plain
	if real_build sqlite-plain sqlite cc; then
		st="$dir/speedtest1 --size 2 --testset main"
		$st > sq.plain 2>&1; prc=$?
		gdb -q -batch -ex 'break sqlite3_step' -ex 'ignore 1 100000000' -ex run -ex 'info breakpoints' \
			--args $st > sq.gdb 2>&1
		want=$(sed -n 's/.*breakpoint already hit \([0-9]*\) time.*/\1/p' sq.gdb | head -1)
		"$SONDE" probe --format=json -o sq.json -e func:sqlite3_step -- $st > sq.out 2> sq.err
		rc=$?
		check "sqlite (gcc): sonde exits 0, the program as without it" test "$rc" -eq 0 -a "$prc" -eq 0
		# "  100 - 50000 INSERTs into table with no index ......  0.052s": the tests, not their times
		sed -E -n 's/^ *([0-9]+ - .*[^.])\.*  *[0-9.]+s$/\1/p' sq.plain > sq.plain.tests
		sed -E -n 's/^ *([0-9]+ - .*[^.])\.*  *[0-9.]+s$/\1/p' sq.out > sq.tests
		check "sqlite (gcc): the same $(wc -l < sq.plain.tests) tests ran" \
			sh -c "[ $(wc -l < sq.plain.tests) -gt 10 ] && cmp -s sq.plain.tests sq.tests"
		check "sqlite (gcc): gdb counted sqlite3_step" test -n "$want"
		check "sqlite (gcc): func sqlite3_step counts what gdb counts ($want)" jq_py sq.json \
			"p=d['probes'][0]; assert d['target']['engine'] == 'agent' and p['calls'] == p['returns'] == int('${want:-0}'), p"
	else
		notok "sqlite builds with gcc" "$(tail -3 build-sqlite-plain.log)"
	fi
fi

#!/usr/bin/env bash
# attach_realprogs.sh — `sonde record -p` on real programs nobody here wrote,
# built with sonde-cc from Debian sources (tests/lib.sh's real_build: cached
# in SONDE_TEST_CACHE, shared with the other tests): SQLite's
# speedtest1, LevelDB's db_bench (C++, a background compaction thread), Lua
# running tests/progs/bench.lua, pigz (threads) when its source can be
# fetched.  Each is attached while it runs, after it has printed its first
# progress; sonde records until the program exits.  Checks: its output (what
# it computes, not its timings) and exit status are those of a run without
# sonde, and the recording holds calls of a function the program runs in its
# work after the attach.  Needs ptrace of a non-child: root, or
# kernel.yama.ptrace_scope 0.
# test-timeout: 1500 (the first run builds real programs into the test cache: slow under load)
source "$ROOT/tests/lib.sh"
source "$ROOT/tests/attach_lib.sh"
need_ptrace "attach to real programs"

# run_attached NAME PATTERN FUNC CMD...: runs CMD with its output in NAME.out,
# waits for PATTERN in it (empty: for some output), attaches until the end; checks the exit status
# against NAME.plainrc and that FUNC (a substring of a function name) has
# calls in the recording.  Output comparison is the caller's.
run_attached() {
	local name=$1 pat=$2 fn=$3; shift 3
	"$@" > "$name.out" 2> "$name.perr" &
	local p=$!
	if [ -z "$pat" ]; then
		for _ in $(seq 1000); do [ -s "$name.out" ] && break; sleep 0.02; done
	elif ! wait_for "$name.out" "$pat"; then
		notok "$name: attach" "the program printed no '$pat'"; wait $p; return 1
	fi
	"$SONDE" record -p "$p" -o "$name.data" 2> "$name.err" &
	local sp=$!
	wait $p; local rc=$?
	wait $sp; local src=$?
	check "$name: same exit status attached ($(cat "$name.plainrc"))" test "$rc" = "$(cat "$name.plainrc")"
	if ! grep -q "recording process $p" "$name.err"; then
		notok "$name: sonde attached while it ran" "$(head -3 "$name.err")"; return 1
	fi
	check "$name: sonde ends with the program, status 0" test "$src" = 0
	"$SONDE" report -i "$name.data" --format=json > "$name.json" 2> "$name.rerr" ||
		{ notok "$name: report" "$(head -2 "$name.rerr")"; return 1; }
	FN=$fn python3 - "$name.json" "$name" <<'PY'
import json, os, sys
fs = json.load(open(sys.argv[1]))["functions"]
fn = os.environ["FN"]
hit = [(f["name"], f["calls"]) for f in fs if fn in f["name"] and f["calls"] > 0]
print(("ok" if hit else "not ok") + f" - {sys.argv[2]}: the recording has calls of {fn} "
      f"({hit[0][1] if hit else 0} calls; {len(fs)} functions recorded)")
PY
}

# ---- SQLite speedtest1 ----
if sh "$ROOT/tools/fetch-src.sh" sqlite3 "$cache/src" > fetch.log 2>&1; then
	if dir=$cache/sqlite-sonde; real_build sqlite-sonde sqlite "$SONDE_CC_BIN"; then
		st=$dir/speedtest1
		"$st" --size 10 --testset main > sq-plain.txt 2>&1; echo $? > sq.plainrc
		run_attached sq '^ *1[0-9][0-9] - ' sqlite3VdbeExec "$st" --size 10 --testset main
		# "  100 - 50000 INSERTs into table with no index ......  0.052s": number and name
		for f in sq-plain sq; do
			grep -E '^ *[0-9]+ - ' $f.txt 2>/dev/null | sed -e 's/ *[0-9.]*s$//' -e 's/\.*$//' > $f.tests
		done
		grep -E '^ *[0-9]+ - ' sq.out | sed -e 's/ *[0-9.]*s$//' -e 's/\.*$//' > sq.tests
		check "sq: the same $(wc -l < sq-plain.tests) tests ran attached" \
			sh -c "[ $(wc -l < sq-plain.tests) -gt 10 ] && cmp -s sq-plain.tests sq.tests"
	else
		notok "SQLite builds with sonde-cc" "$(tail -3 build-sqlite-sonde.log)"
	fi
else
	skip "SQLite speedtest1 attached" "could not fetch sqlite3 ($(tail -1 fetch.log))"
fi

# ---- LevelDB db_bench (C++) ----
if sh "$ROOT/tools/fetch-src.sh" leveldb "$cache/src" > fetch.log 2>&1; then
	if dir=$cache/leveldb-sonde-gcc; SONDE_CC=gcc SONDE_CXX=g++ real_build leveldb-sonde-gcc leveldb "$SONDE_CC_BIN" "$SONDE_CXX_BIN"; then
		args="--benchmarks=fillseq,readrandom,readrandom --num=100000"
		"$dir/db_bench" $args --db="$PWD/db-plain" > ldb-plain.txt 2>&1; echo $? > ldb.plainrc
		run_attached ldb '^fillseq' 'DBImpl::Get' "$dir/db_bench" $args --db="$PWD/db-att"
		# "readrandom : 3.1 micros/op; (100000 of 100000 found)", twice
		grep -o '([0-9]* of [0-9]* found)' ldb-plain.txt > ldb-plain.found
		grep -o '([0-9]* of [0-9]* found)' ldb.out > ldb.found
		check "ldb: the keys found as without sonde ($(head -1 ldb-plain.found), twice)" \
			sh -c "[ \$(wc -l < ldb-plain.found) = 2 ] && cmp -s ldb-plain.found ldb.found"
	else
		notok "LevelDB builds with sonde-c++" "$(grep -m3 -i error build-leveldb-sonde-gcc.log)"
	fi
else
	skip "LevelDB db_bench attached" "could not fetch leveldb ($(tail -1 fetch.log))"
fi

# ---- Lua ----
if sh "$ROOT/tools/fetch-lua.sh" "$cache" > fetch.log 2>&1; then
	LUAFLAGS='-Dluai_makeseed(L)=0u -Dl_randomizePivot()=0u -DSTRCACHE_N=1 -DSTRCACHE_M=1'
	if lua=$cache/lua-sonde; real_build lua-sonde lua "$SONDE_CC_BIN" -g $LUAFLAGS; then
		# bench.lua prints its results at the end: attach once it runs
		# (its first line is printed by a wrapper that then runs it).
		printf 'print("started") io.stdout:flush()\nlocal f = arg[1]\nfor i = 1, 6 do arg = { [0] = f, "24" } dofile(f) end\n' > wrap.lua
		"$lua" wrap.lua "$PROGS/bench.lua" > lua-plain.txt 2>&1; echo $? > lua.plainrc
		run_attached lua '^started' luaV_execute "$lua" wrap.lua "$PROGS/bench.lua"
		check "lua: output unchanged attached" cmp -s lua-plain.txt lua.out
	else
		notok "Lua builds with sonde-cc" "$(tail -3 build-lua-sonde.log)"
	fi
else
	skip "Lua attached" "could not fetch lua5.4 ($(tail -1 fetch.log))"
fi

# ---- pigz (threads) ----
if sh "$ROOT/tools/fetch-src.sh" pigz "$cache/src" > fetch.log 2>&1; then
	if dir=$cache/pigz-sonde; real_build pigz-sonde pigz "$SONDE_CC_BIN"; then
		sh "$ROOT/tools/gen-data.sh" in.txt 64
		"$dir/pigz" -p 4 -c in.txt > plain.gz; echo $? > pz.plainrc
		run_attached pz '' get_space "$dir/pigz" -p 4 -c in.txt
		check "pz: compressed output byte-identical attached" cmp -s plain.gz pz.out
	else
		notok "pigz builds with sonde-cc" "$(tail -3 build-pigz-sonde.log)"
	fi
else
	skip "pigz attached" "no pigz source package ($(tail -1 fetch.log))"
fi

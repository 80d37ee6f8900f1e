# test-timeout: 1500
# Real programs never built for sonde (docs/INSTRUMENTATION.md, "Programs
# never built for sonde"): plain `cc -O2 -g` builds of zstd, SQLite's
# speedtest1 and Lua 5.4 from Debian's source packages, recorded without a
# rebuild.  For each: the output is unchanged; the call count of every
# function equals the sonde-cc build's for the same work (the start-up files'
# functions aside, which a sonde-cc build does not instrument) and equals
# `uftrace record --no-libcall -P .`'s for every function uftrace counts; at
# least 99.5% of the functions found take a jump (leveldb's db_bench too, g++
# and clang++; a body that is only a ud2 trap, per objdump, is not counted).
# zstd stripped by us gives the same counts as its unstripped twin, address
# for address, and names a function without a symbol module+offset.  Debian's own
# installed, stripped zstd, lua5.4 and sqlite3 record and report.
. "$ROOT/tests/lib.sh"
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
mkdir -p "$cache"
have_uftrace=1
command -v uftrace >/dev/null || have_uftrace=0
sh "$ROOT/tools/gen-data.sh" data.txt 4

# The builds: tests/lib.sh's real_build (cached, shared with the other tests).

# compare LABEL PLAIN_JSON SONDECC_JSON [RACY-PREFIX]: every function's count
# equal (those whose name starts with RACY-PREFIX aside: their count differs
# from run to run of the same binary)
compare() {
	python3 - "$@" <<'PY'
import json, sys
label, a, b = sys.argv[1:4]
racy = sys.argv[4] if len(sys.argv) > 4 else None
crt = {"_init", "_fini", "frame_dummy", "register_tm_clones", "deregister_tm_clones", "__do_global_dtors_aux"}
# summed by name: C++ destructors (D0, D1) and constructors share their demangled name
p, s = {}, {}
for f in json.load(open(a))["functions"]:
    if f["name"] not in crt:
        p[f["name"]] = p.get(f["name"], 0) + f["calls"]
for f in json.load(open(b))["functions"]:
    s[f["name"]] = s.get(f["name"], 0) + f["calls"]
diff = sorted((k, p.get(k), s.get(k)) for k in set(p) | set(s) if p.get(k) != s.get(k) and not (racy and k.startswith(racy)))
print(("ok" if not diff and len(p) > 50 else "not ok") +
      f" - {label}: {len(p)} functions, {sum(p.values())} calls, each equal to the sonde-cc build's" +
      ("" if not diff else f": differ (name, plain, sonde-cc) {diff[:6]}"))
PY
}

# coverage LABEL DATA: at least 99.5% of the functions found take a jump
coverage() { # LABEL DATA [BINARY]
	"$SONDE" info -i "$2" --format=json >"$2.info.json"
	python3 - "$1" "$2.info.json" "${3:-}" <<'PY'
import json, re, subprocess, sys
label, path, binary = sys.argv[1:4]
p = json.load(open(path))["patched"]
found = sum(x["functions_found"] for x in p)
ok = sum(x["patchable"] for x in p)
left = [l for x in p for l in x["left_out"]]
# With the binary: a left-out function whose body is only a trap (objdump's
# first instruction is ud2: clang's deleting destructor of an abstract class)
# is code no call can complete; it is named, and not counted as a function.
traps = 0
if binary:
    for l in left:
        a = int(l["address"], 16)
        d = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={a}", f"--stop-address={a + 2}",
                            binary], capture_output=True, text=True).stdout
        m = re.search(r"^\s*[0-9a-f]+:\s+(\S+)", d, re.M)
        traps += bool(m and m.group(1) == "ud2")
n = found - traps
good = found > 0 and ok >= 0.995 * n and all(l["why"] for l in left)
print(("ok" if good else "not ok") + f" - {label}: {ok} of {n} functions take a jump ({100.0 * ok / max(n, 1):.2f}%), "
      f"every other one listed with its reason" + (f" ({traps} more are a ud2 trap only)" if traps else "") +
      ("" if good else f": {left[:5]}"))
PY
}

# against_uftrace LABEL JSON COMMAND...: uftrace -P . on the same plain build
against_uftrace() {
	local label=$1 json=$2; shift 2
	[ $have_uftrace = 1 ] || { skip "$label: counts equal uftrace's" "uftrace not installed"; return; }
	rm -rf uf.data
	uftrace record --no-libcall -P . -d uf.data "$@" >/dev/null 2>uf.err ||
		{ notok "$label: uftrace -P ." "$(tail -2 uf.err)"; return; }
	python3 "$ROOT/tests/uftrace_compare.py" "$json" uf.data "$label (uftrace -P .)" 50 subset
}

if sh "$ROOT/tools/fetch-src.sh" zstd "$cache/src" >fetch.log 2>&1; then
	real_build zstd-sonde zstd "$SONDE_CC_BIN"
	real_build zstd-plain zstd cc -g
	zp=$cache/zstd-plain/zstd
	if [ -x "$zp" ] && [ -x "$cache/zstd-sonde/zstd" ]; then
		"$zp" -3 -q -c data.txt >plain.zst
		"$SONDE" record -o zp.data -- "$zp" -3 -q -c data.txt >rec.zst 2>rec.err
		check "zstd (plain build): compressed output byte-identical" cmp -s plain.zst rec.zst
		"$SONDE" record -o zt.data --trace -- "$zp" -3 -q -c data.txt >rect.zst 2>rect.err
		check "zstd (plain build) --trace: output byte-identical" cmp -s plain.zst rect.zst
		"$SONDE" record -o zs.data -- "$cache/zstd-sonde/zstd" -3 -q -c data.txt >/dev/null 2>&1
		"$SONDE" report -i zp.data --format=json >zp.json
		"$SONDE" report -i zt.data --format=json >zt.json
		"$SONDE" report -i zs.data --format=json >zs.json
		compare "zstd (plain build)" zp.json zs.json
		compare "zstd (plain build) --trace" zt.json zs.json
		# the stubs built before the program ran (the default), and those asked for when it runs
		SONDE_INSTR_ASK=1 "$SONDE" record -o za.data -- "$zp" -3 -q -c data.txt >reca.zst 2>reca.err
		check "zstd (plain build), stubs asked for: output byte-identical" cmp -s plain.zst reca.zst
		"$SONDE" report -i za.data --format=json >za.json
		compare "zstd (plain build), stubs asked for" za.json zs.json
		for d in zp:prebuilt za:asked; do
			"$SONDE" info -i ${d%%:*}.data --format=json >${d%%:*}.info
			check "zstd (plain build): stubs ${d#*:} (sonde info)" jq_py ${d%%:*}.info \
				"assert [m['stubs'] for m in d['modules']] == ['${d#*:}'], d['modules']"
		done
		coverage "zstd (plain build)" zp.data
		against_uftrace "zstd (plain build)" zp.json "$zp" -3 -q -c data.txt
		# stripped twin: the same counts, address for address
		cp "$zp" zstd-stripped && strip zstd-stripped
		"$SONDE" record -o zx.data -- ./zstd-stripped -3 -q -c data.txt >recx.zst 2>recx.err
		check "zstd stripped: output byte-identical" cmp -s plain.zst recx.zst
		"$SONDE" report -i zx.data --format=json >zx.json
		python3 - <<'PY'
import json
crt = {"_init", "_fini", "frame_dummy", "register_tm_clones", "deregister_tm_clones", "__do_global_dtors_aux"}
a = {f["address"]: f["calls"] for f in json.load(open("zp.json"))["functions"] if f["name"] not in crt}
b = {f["address"]: f["calls"] for f in json.load(open("zx.json"))["functions"]}
# the crt functions of the stripped twin have no name: drop them by address
crt_addr = {f["address"] for f in json.load(open("zp.json"))["functions"] if f["name"] in crt}
b = {k: v for k, v in b.items() if k not in crt_addr}
diff = sorted((k, a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k))
print(("ok" if not diff and len(a) > 50 else "not ok") + f" - zstd stripped: {len(b)} functions, each count equal to "
      "the unstripped twin's at the same address" + ("" if not diff else f": differ (address, unstripped, stripped) {diff[:6]}"))# a function the stripped twin has no symbol for is named by module and offset (as perf does)
named = {f["address"]: f["name"] for f in json.load(open("zp.json"))["functions"]}
bad = [(f["address"], f["name"]) for f in json.load(open("zx.json"))["functions"]
       if f["address"] and f["name"] != named.get(f["address"]) and f["name"] != "zstd-stripped+" + f["address"]]
unnamed = sum(1 for f in json.load(open("zx.json"))["functions"] if f["name"].startswith("zstd-stripped+0x"))
print(("ok" if not bad and unnamed > 50 else "not ok") + f" - zstd stripped: {unnamed} functions without a symbol, "
      "each named module+offset" + ("" if not bad else f": not so {bad[:6]}"))
PY
	else
		notok "zstd builds (plain and sonde-cc)" "$(tail -3 build-zstd-sonde.log build-zstd-plain.log)"
	fi
else
	skip "zstd from Debian source" "could not fetch zstd ($(tail -1 fetch.log))"
fi

if sh "$ROOT/tools/fetch-src.sh" sqlite3 "$cache/src" >fetch.log 2>&1; then
	real_build sqlite-sonde sqlite "$SONDE_CC_BIN"
	real_build sqlite-plain sqlite cc
	sp=$cache/sqlite-plain/speedtest1
	if [ -x "$sp" ] && [ -x "$cache/sqlite-sonde/speedtest1" ]; then
		"$sp" --size 5 --testset main >plain.txt 2>&1; prc=$?
		"$SONDE" record -o sp.data -- "$sp" --size 5 --testset main >rec.txt 2>rec.err; rrc=$?
		check "speedtest1 (plain build): same exit status ($prc)" test "$prc" = "$rrc"
		for f in plain rec; do
			grep -E '^ *[0-9]+ - ' $f.txt | sed -e 's/ *[0-9.]*s$//' -e 's/\.*$//' >$f.tests
		done
		check "speedtest1 (plain build): the same $(wc -l <plain.tests) tests run" \
			sh -c "[ $(wc -l <plain.tests) -gt 10 ] && cmp -s plain.tests rec.tests"
		"$SONDE" record -o ss.data -- "$cache/sqlite-sonde/speedtest1" --size 5 --testset main >/dev/null 2>&1
		"$SONDE" report -i sp.data --format=json >sp.json
		"$SONDE" report -i ss.data --format=json >ss.json
		compare "speedtest1 (plain build)" sp.json ss.json
		coverage "speedtest1 (plain build)" sp.data
		against_uftrace "speedtest1 (plain build)" sp.json "$sp" --size 5 --testset main
	else
		notok "SQLite builds (plain and sonde-cc)" "$(tail -3 build-sqlite-sonde.log build-sqlite-plain.log)"
	fi
else
	skip "SQLite from Debian source" "could not fetch sqlite3 ($(tail -1 fetch.log))"
fi

if sh "$ROOT/tools/fetch-lua.sh" "$cache" >fetch.log 2>&1; then
	LUAFLAGS='-Dluai_makeseed(L)=0u -Dl_randomizePivot()=0u -DSTRCACHE_N=1 -DSTRCACHE_M=1'
	real_build lua-plain lua cc -g $LUAFLAGS
	real_build lua-sonde lua "$SONDE_CC_BIN" -g $LUAFLAGS
	ln -sf "$cache/lua-plain" lua-plain && ln -sf "$cache/lua-sonde" lua-sonde
	if [ -x lua-plain ] && [ -x lua-sonde ]; then
		./lua-plain "$PROGS/bench.lua" 16 >plain.txt
		"$SONDE" record -o lp.data -- ./lua-plain "$PROGS/bench.lua" 16 >rec.txt 2>rec.err
		check "lua (plain build): output unchanged" cmp -s plain.txt rec.txt
		"$SONDE" record -o ls.data -- ./lua-sonde "$PROGS/bench.lua" 16 >/dev/null 2>&1
		"$SONDE" report -i lp.data --format=json >lp.json
		"$SONDE" report -i ls.data --format=json >ls.json
		compare "lua (plain build)" lp.json ls.json
		coverage "lua (plain build)" lp.data
		against_uftrace "lua (plain build)" lp.json ./lua-plain "$PROGS/bench.lua" 16
	else
		notok "Lua builds (plain and sonde-cc)" "$(tail -3 build-lua-plain.log build-lua-sonde.log)"
	fi
else
	skip "Lua from Debian source" "could not fetch lua5.4 ($(tail -1 fetch.log))"
fi

# LevelDB's db_bench (C++, COMDAT templates, 3 threads) with g++ and clang++
if sh "$ROOT/tools/fetch-src.sh" leveldb "$cache/src" >fetch.log 2>&1; then
	for cc in gcc clang; do
		case $cc in gcc) cxx=g++ ;; clang) cxx=clang++ ;; esac
		command -v $cxx >/dev/null || { skip "leveldb ($cxx)" "$cxx not installed"; continue; }
		real_build leveldb-plain-$cc leveldb $cc $cxx -g
		SONDE_CC=$cc SONDE_CXX=$cxx real_build leveldb-sonde-$cc leveldb "$SONDE_CC_BIN" "$SONDE_CXX_BIN"
		if [ -x "$cache/leveldb-plain-$cc/db_bench" ] && [ -x "$cache/leveldb-sonde-$cc/db_bench" ]; then
			args="--benchmarks=fillseq,readrandom --num=20000"
			"$SONDE" record -o lvp-$cc.data -- "$cache/leveldb-plain-$cc/db_bench" $args --db=$PWD/dbp-$cc >lvp.out 2>&1
			check "db_bench ($cxx, plain build) finds every key it wrote" grep -q "(20000 of 20000 found)" lvp.out
			"$SONDE" record -o lvs-$cc.data -- "$cache/leveldb-sonde-$cc/db_bench" $args --db=$PWD/dbs-$cc >/dev/null 2>&1
			"$SONDE" report -i lvp-$cc.data --format=json >lvp-$cc.json
			"$SONDE" report -i lvs-$cc.data --format=json >lvs-$cc.json
			# leveldb's background thread is detached: whether its std::thread state is
			# destroyed before the process exits changes from run to run (1 or 2 calls)
			compare "db_bench ($cxx, plain build)" lvp-$cc.json lvs-$cc.json 'std::thread::_State_impl<'
			coverage "db_bench ($cxx, plain build)" lvp-$cc.data "$cache/leveldb-plain-$cc/db_bench"

		else
			notok "leveldb builds ($cxx, plain and sonde-c++)" "$(tail -3 build-leveldb-plain-$cc.log build-leveldb-sonde-$cc.log)"
		fi
	done
else
	skip "leveldb from Debian source" "could not fetch leveldb ($(tail -1 fetch.log))"
fi

# Debian's own binaries: stripped, built by Debian.
deb() { # LABEL INPUT-FILE COMMAND...
	local label=$1 in=$2; shift 2
	command -v "$1" >/dev/null || { skip "$label" "$1 not installed"; return; }
	"$@" <"$in" >plain.out 2>&1; local prc=$?
	"$SONDE" record -o deb.data -- "$@" <"$in" >rec.out 2>rec.err; local rrc=$?
	check "$label: output and exit status ($prc) unchanged" sh -c "[ $prc = $rrc ] && cmp -s plain.out rec.out"
	"$SONDE" report -i deb.data --format=json >deb.json 2>deb.err
	python3 - "$label" <<'PY'
import json, sys
d = json.load(open("deb.json"))
n = sum(1 for f in d["functions"] if f["calls"])
print(("ok" if n >= 20 and d["lost_events"] == 0 else "not ok") + f" - {sys.argv[1]}: {n} functions called, nothing lost")
PY
}
deb "Debian's zstd (stripped)" data.txt zstd -3 -q -c
printf 'for i = 1, 2000 do local t = {} for j = 1, 50 do t[j] = tostring(i * j) end table.sort(t) end print("done")\n' >l.lua
deb "Debian's lua5.4 (stripped)" l.lua lua5.4 -
printf 'create table t(a,b); with recursive c(x) as (select 1 union all select x+1 from c where x<20000) insert into t select x, x*x from c; select count(*), sum(b) from t where a %% 7 = 0;\n' >q.sql
deb "Debian's sqlite3 (stripped)" q.sql sqlite3 :memory:

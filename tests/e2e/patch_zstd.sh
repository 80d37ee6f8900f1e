# test-timeout: 1500
# zstd from Debian's source, a plain `cc -O2 -g` build recorded without a
# rebuild (tests/patch_lib.sh says what is checked).  Then the same build
# stripped by us gives the same counts as its unstripped twin, address for
# address, and names a function without a symbol module+offset; and Debian's
# own installed, stripped zstd, lua5.4 and sqlite3 record and report.
. "$ROOT/tests/patch_lib.sh"

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

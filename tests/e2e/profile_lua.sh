# A real program nobody here wrote: Debian's Lua 5.4 built with sonde-cc.
# Its call counts equal uftrace's (`uftrace record --no-libcall`) on a -pg build
# of the same source, function for function: both see the functions that exist
# in the machine code, after inlining.  Lua's run-to-run randomness (hash seed, sort
# pivot, the address-indexed C-string cache) is switched off through its own
# configuration macros in both builds, so both runs do the same work.
# test-timeout: 1500 (the first run builds Lua into the test cache: slow under load)
. "$ROOT/tests/lib.sh"
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
if ! sh "$ROOT/tools/fetch-lua.sh" "$cache" >fetch.log 2>&1; then
	skip "lua from Debian source" "could not fetch lua5.4 source ($(tail -1 fetch.log))"; exit 0
fi
if ! command -v uftrace >/dev/null; then
	if [ "$(id -u)" = 0 ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y -qq uftrace >/dev/null 2>&1; fi
fi
LUAFLAGS='-Dluai_makeseed(L)=0u -Dl_randomizePivot()=0u -DSTRCACHE_N=1 -DSTRCACHE_M=1'
real_build lua-sonde lua "$SONDE_CC_BIN" -g $LUAFLAGS || { notok "build lua with sonde-cc" "$(tail -3 build-lua-sonde.log)"; exit 1; }
ln -sf "$cache/lua-sonde" lua-sonde
ok "Lua 5.4 from Debian source builds with sonde-cc"
plain=$(./lua-sonde "$PROGS/bench.lua" 16)
"$SONDE" record -- ./lua-sonde "$PROGS/bench.lua" 16 >out.txt 2>rec.err
check "lua output unchanged under sonde" test "$(cat out.txt)" = "$plain"
"$SONDE" report --format=json >so.json
# Trace mode on the same real program: the same calls, function for function.
"$SONDE" record --trace -o trace.data -- ./lua-sonde "$PROGS/bench.lua" 16 >out2.txt 2>rec2.err
check "lua output unchanged under sonde --trace" test "$(cat out2.txt)" = "$plain"
"$SONDE" report -i trace.data --format=json >tr.json
python3 - <<'PY'
import json
p = {f["name"]: f["calls"] for f in json.load(open("so.json"))["functions"]}
t = {f["name"]: f["calls"] for f in json.load(open("tr.json"))["functions"]}
diff = [(k, p.get(k), t.get(k)) for k in set(p) | set(t) if p.get(k) != t.get(k)]
print(("ok" if not diff and len(p) > 300 else "not ok") + f" - lua: trace-mode call counts equal profile-mode counts ({len(p)} functions)"
      + ("" if not diff else f": {diff[:5]}"))
PY
if ! command -v uftrace >/dev/null; then
	skip "call counts equal uftrace's" "uftrace not installed"; exit 0
fi
real_build lua-pg lua cc -g -pg $LUAFLAGS || { notok "build lua for uftrace" "$(tail -3 build-lua-pg.log)"; exit 1; }
ln -sf "$cache/lua-pg" lua-plain
# uftrace_counts: record with uftrace and write uf.txt (calls per function)
uftrace_counts() {
	uftrace record --no-libcall --no-pager -d uftrace.data ./lua-plain "$PROGS/bench.lua" 16 >/dev/null 2>uf.err &&
		uftrace report -d uftrace.data -f call --no-pager >uf.txt 2>>uf.err
}
uftrace_counts || { notok "uftrace record" "$(tail -3 uf.err)"; exit 1; }
compare() {
	python3 - <<'PY'
import json, re, sys
so = {f["name"]: f["calls"] for f in json.load(open("so.json"))["functions"]}
uf = {}
for l in open("uf.txt"):
    m = re.match(r"\s*(\d+)\s+(\S+)\s*$", l)
    if m:
        uf[m.group(2)] = uf.get(m.group(2), 0) + int(m.group(1))
# uftrace also counts the libc functions it hooks through the PLT; sonde counts
# the instrumented functions.  Every instrumented function must agree.
diff = [(k, so[k], uf.get(k)) for k in so if so[k] != uf.get(k)]
total = sum(so.values())
open("diff.txt", "w").write(repr(diff))
sys.exit(0 if (not diff and len(so) > 300 and total > 1000000) else 1)
PY
}
if ! compare && grep -qi "lost" uf.err; then
	# uftrace said it dropped records (its buffers overflowed under load):
	# its counts are incomplete, so record it again; sonde's stand as they are.
	echo "# uftrace reported lost records; recording it again: $(grep -i lost uf.err | head -1)"
	uftrace_counts
fi
if compare; then
	ok "lua: $(python3 -c "import json;d=json.load(open('so.json'))['functions'];print(len(d),'functions,',sum(f['calls'] for f in d),'calls')"), all equal to uftrace's"
else
	notok "lua: call counts equal to uftrace's" "differ (name, sonde, uftrace): $(head -c 600 diff.txt); uftrace stderr: $(head -c 300 uf.err)"
fi
python3 -c "import json; print(('ok' if json.load(open('so.json'))['lost_events'] == 0 else 'not ok') + ' - lua: nothing lost')"
python3 - <<'PY'
import sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
check_invariants(["luaV_execute", "luaD_call", "luaH_get", "luaS_newlstr", "sort_comp", "auxsort"], label="(lua)")
done()
PY

# test-timeout: 1500
# Lua 5.4 from Debian's source, a plain `cc -O2 -g` build recorded without a
# rebuild (tests/patch_lib.sh says what is checked).
. "$ROOT/tests/patch_lib.sh"

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

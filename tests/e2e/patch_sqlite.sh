# test-timeout: 1500
# SQLite's speedtest1 from Debian's source, a plain `cc -O2 -g` build
# recorded without a rebuild (tests/patch_lib.sh says what is checked).
. "$ROOT/tests/patch_lib.sh"

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

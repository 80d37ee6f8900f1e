# test-timeout: 1500
# LevelDB's db_bench (C++, COMDAT templates, 3 threads) from Debian's source,
# plain g++ and clang++ builds recorded without a rebuild: counts equal the
# sonde-c++ builds', and at least 99.5% of the functions take a jump (a body
# that is only a ud2 trap, per objdump, is not counted).
. "$ROOT/tests/patch_lib.sh"

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

# leveldb 1.23 (Debian source package), C++ with COMDAT templates, built with
# sonde-c++ on g++ and on clang++ through CMake; db_bench runs under
# sonde record (4 threads: its own and leveldb's background compaction), with
# its result unchanged, every call on a numbered function (<= 1% unnumbered)
# and nothing lost.  Builds are cached (SONDE_TEST_CACHE).
# test-timeout: 1500 (the first run builds real programs into the test cache: slow under load)
. "$ROOT/tests/lib.sh"
if ! sh "$ROOT/tools/fetch-src.sh" leveldb "$cache/src" >fetch.log 2>&1; then
	skip "leveldb from Debian source" "could not fetch leveldb ($(tail -1 fetch.log))"; exit 0
fi
for cc in gcc clang; do
	case $cc in gcc) cxx=g++ ;; clang) cxx=clang++ ;; esac
	command -v $cxx >/dev/null || { skip "leveldb ($cxx)" "$cxx not installed"; continue; }
	out=$cache/leveldb-sonde-$cc
	SONDE_CC=$cc SONDE_CXX=$cxx real_build leveldb-sonde-$cc leveldb "$SONDE_CC_BIN" "$SONDE_CXX_BIN" ||
		{ notok "leveldb builds with sonde-c++ on $cxx" "$(grep -m3 -i error build-leveldb-sonde-$cc.log)"; continue; }
	ok "leveldb builds with sonde-c++ on $cxx"
	args="--benchmarks=fillseq,readrandom --num=20000 --db=$PWD/db-$cc"
	"$SONDE" record -o l-$cc.data -- "$out/db_bench" $args >out.txt 2>rec.err; rc=$?
	check "db_bench ($cxx) exits 0 under sonde" test $rc = 0
	check "db_bench ($cxx) finds every key it wrote" grep -q "(20000 of 20000 found)" out.txt
	"$SONDE" report -i l-$cc.data --format=json >so.json
	"$SONDE" info -i l-$cc.data --format=json >info.json
	python3 - "$cxx" <<'PY'
import json, sys
cxx = sys.argv[1]
fs = json.load(open("so.json"))["functions"]
info = json.load(open("info.json"))
total = sum(f["calls"] for f in fs)
unn = sum(f["calls"] for f in fs if f["name"].startswith("<unnumbered"))
print(("ok" if total > 100000 and unn <= total / 100 else "not ok") +
      f" - db_bench ({cxx}): {unn} of {total} calls unnumbered (<= 1%), {len(fs)} functions")
print(("ok" if not info["lost"] and len(info["threads"]) >= 2 else "not ok") +
      f" - db_bench ({cxx}): {len(info['threads'])} threads recorded, nothing lost {info['lost']}")
PY
done

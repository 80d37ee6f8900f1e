# C++ with the standard library's templates (std::map<std::string,int>,
# std::sort), built with sonde-c++ on g++ and clang++: it links (COMDAT
# functions included), every call lands on a numbered function, and the call
# counts equal uftrace's (`--no-libcall`) on a -pg build of the same source.
. "$ROOT/tests/lib.sh"
for cxx in g++ clang++; do
	command -v $cxx >/dev/null || { skip "$cxx" "not installed"; continue; }
	SONDE_CXX=$cxx "$SONDE_CXX_BIN" -O2 -g "$PROGS/wordcount.cpp" -o wc-$cxx ||
		{ notok "wordcount builds with sonde-c++ on $cxx" "link failed"; continue; }
	ok "wordcount builds with sonde-c++ on $cxx"
	"$SONDE" record -o wc-$cxx.data -- ./wc-$cxx >out.txt 2>rec.err
	check "output unchanged ($cxx)" test "$(cat out.txt)" = "$(./wc-$cxx)"
	"$SONDE" report -i wc-$cxx.data --format=json >so.json
	"$SONDE" info -i wc-$cxx.data --format=json >info.json
	python3 - "$cxx" <<'PY'
import json, sys
cxx = sys.argv[1]
fs = json.load(open("so.json"))["functions"]
total = sum(f["calls"] for f in fs)
unn = sum(f["calls"] for f in fs if f["name"].startswith("<unnumbered"))
lost = json.load(open("info.json"))["lost"]
print(("ok" if total > 1000 and unn <= total / 100 and not lost else "not ok") +
      f" - {cxx}: unnumbered calls {unn} of {total} (<= 1%), nothing lost {lost}")
PY
	if ! command -v uftrace >/dev/null; then skip "counts equal uftrace's ($cxx)" "uftrace not installed"; continue; fi
	$cxx -O2 -g -pg "$PROGS/wordcount.cpp" -o wcpg-$cxx &&
	uftrace record --no-libcall -d uf-$cxx ./wcpg-$cxx >/dev/null 2>uf.err &&
	uftrace report -d uf-$cxx -f call --no-pager --demangle=full >uf.txt 2>>uf.err ||
		{ notok "uftrace on wordcount ($cxx)" "$(tail -2 uf.err)"; continue; }
	python3 - "$cxx" <<'PY'
import json, re, sys
cxx = sys.argv[1]
so = {f["name"]: f["calls"] for f in json.load(open("so.json"))["functions"]}
uf = {}
for l in open("uf.txt"):
    m = re.match(r"\s*(\d+)\s+(.+?)\s*$", l)
    if m and not m.group(2).startswith("linux:") and m.group(1) != "Calls":
        uf[m.group(2)] = uf.get(m.group(2), 0) + int(m.group(1))
diff = [(k[:80], so.get(k), uf.get(k)) for k in set(so) | set(uf) if so.get(k) != uf.get(k)]
print(("ok" if not diff and len(so) >= 5 else "not ok") +
      f" - {cxx}: {len(so)} functions, {sum(so.values())} calls, all equal to uftrace's" + (f": differ {diff[:4]}" if diff else ""))
PY
done

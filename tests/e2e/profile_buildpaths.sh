# Build paths other than the sonde-cc launcher (sonde-config, pkg-config),
# dormant hooks without sonde, and the callgrind / folded exports as their
# consumers read them.
. "$ROOT/tests/lib.sh"
CFG="$BUILD/bin/sonde-config"
cc -O2 -g $("$CFG" --cflags) "$PROGS/seed002.c" $("$CFG" --libs) -o via-config || { notok "build with sonde-config" "failed"; exit 1; }
ok "build with plain cc + sonde-config --cflags --libs"
PKG_CONFIG_PATH="$BUILD/lib/pkgconfig" pkg-config --cflags --libs sonde >pc.txt 2>/dev/null &&
	cc -O2 -g $(cat pc.txt) "$PROGS/seed002.c" -o via-pc 2>/dev/null
if [ -s pc.txt ] && [ -x via-pc ]; then
	# pkg-config puts Libs before the sources; the module object must still end up linked
	# (a failed run or record is a failure of this check, not a missing line)
	check "pkg-config build is instrumented" sh -c "./via-pc 0.1 >/dev/null && \"$SONDE\" record -o pc.data -- ./via-pc 0.1 >/dev/null 2>&1 &&
		\"$SONDE\" report -i pc.data --format=json | grep -q '\"name\": \"C\"'"
else
	command -v pkg-config >/dev/null && notok "pkg-config sonde" "$(cat pc.txt)" || skip "pkg-config sonde" "pkg-config not installed"
fi
# Dormant: without sonde the program behaves as before.
out=$(./via-config 0.1); rc=$?
check "instrumented program runs unchanged without sonde (output)" test "$out" = "seed002 done"
check "instrumented program runs unchanged without sonde (status)" test $rc -eq 0
"$SONDE" record -- ./via-config 2 >/dev/null 2>rec.err
python3 - <<'PY'
import sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
r = report()
say(r.get("C", {}).get("calls") == 3 and r.get("G", {}).get("calls") == 3, "sonde-config build: exact counts", str(r.get("C")))
PY
"$SONDE" export --format=folded -o folded.txt
python3 - <<'PY'
import sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
rep = sonde_json("report")
stacks = {}
for line in open("folded.txt"):
    path, v = line.rsplit(" ", 1)
    stacks[path] = stacks.get(path, 0) + int(v)
total = sum(stacks.values())
say(abs(total - rep["total_ns"]) <= len(stacks) + 1, "folded: sum of stacks = total recorded time", f"{total} vs {rep['total_ns']}")
say("main;B;C;F;G" in stacks and "main;A;C;E" in stacks, "folded: full call paths", str(list(stacks)[:6]))
excl = {}
for path, v in stacks.items():
    leaf = path.split(";")[-1]
    excl[leaf] = excl.get(leaf, 0) + v
r = {f["name"]: f for f in rep["functions"]}
say(all(abs(excl[n] - r[n]["exclusive_ns"]) <= 4 for n in excl), "folded: leaf sums = exclusive times", str(excl))
PY
"$SONDE" export --format=callgrind -o callgrind.out
if command -v callgrind_annotate >/dev/null; then
	callgrind_annotate --inclusive=yes callgrind.out >ann.txt 2>ann.err
	if grep -q "seed002.c:main" ann.txt || grep -q " main" ann.txt; then ok "callgrind_annotate reads the export"; else notok "callgrind_annotate reads the export" "$(head -5 ann.err)"; fi
	python3 - <<'PY'
import re, sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
r = report()
incl = {}
for line in open("ann.txt"):
    m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+\S*:(\w+)", line)
    if m:
        incl[m.group(2)] = int(m.group(1).replace(",", ""))
ok_ = all(n in incl and abs(incl[n] - r[n]["inclusive_ns"]) <= 8 for n in ("main", "B", "C", "F"))
say(ok_, "callgrind_annotate --inclusive shows sonde's inclusive times", str({n: (incl.get(n), r[n]["inclusive_ns"]) for n in ("main", "B", "C", "F")}))
PY
else
	skip "callgrind_annotate reads the export" "valgrind not installed"
fi
# Launcher use, as ccache: "sonde-cc gcc ...", and CMake's compiler + linker launchers.
"$SONDE_CC_BIN" cc -O1 -c "$PROGS/seed002.c" -o launch.o && "$SONDE_CC_BIN" cc launch.o -o launched &&
	"$SONDE" record -o launch.data -- ./launched 0.1 >/dev/null 2>&1
check "launcher use (sonde-cc cc ...) instruments" sh -c "\"$SONDE\" report -i launch.data --format=json | grep -q '\"name\": \"C\"'"
if command -v cmake >/dev/null; then
	mkdir -p cm && printf 'cmake_minimum_required(VERSION 3.21)\nproject(t C)\nadd_executable(s %s)\n' "$PROGS/seed002.c" >cm/CMakeLists.txt
	if cmake -S cm -B cm/b -DCMAKE_C_COMPILER_LAUNCHER="$SONDE_CC_BIN" -DCMAKE_C_LINKER_LAUNCHER="$SONDE_CC_BIN" >cm.log 2>&1 &&
		cmake --build cm/b >>cm.log 2>&1; then
		"$SONDE" record -o cm.data -- ./cm/b/s 0.1 >/dev/null 2>&1
		check "CMake compiler + linker launcher build is instrumented" sh -c "\"$SONDE\" report -i cm.data --format=json | grep -q '\"name\": \"C\"'"
	else
		notok "CMake launcher build" "$(tail -3 cm.log)"
	fi
else
	skip "CMake launcher build" "cmake not installed"
fi

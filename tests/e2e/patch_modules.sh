# Shared libraries of a program never built for sonde, given with --module
# (docs/INSTRUMENTATION.md, "Programs never built for sonde"): a linked one,
# and a plugin the program opens with dlopen after it started, closes and
# opens again (tests/progs/modules.c, plain gcc builds).  Expected counts are
# the ones the program prints ("calls F N", "calls A->B N").  The plugin is
# opened once by its path and once by its bare name, which the dynamic
# loader finds through the executable's RUNPATH only when dlopen still knows
# its real caller.  Without --module only the executable is recorded.
. "$ROOT/tests/lib.sh"
cc=${CC:-gcc}
$cc -O2 -g -fPIC -shared -I"$PROGS" "$PROGS/libshared.c" -o libshared.so &&
	$cc -O2 -g -fPIC -shared -I"$PROGS" "$PROGS/libplug.c" -o libplug.so &&
	$cc -O2 -g -I"$PROGS" "$PROGS/modules.c" -o modules -L. -lshared -Wl,-rpath,"$PWD" -ldl ||
	{ notok build "$cc failed"; exit 1; }
for plug in "$PWD/libplug.so" libplug.so; do
	case $plug in /*) label="plugin opened by its path" ;; *) label="plugin opened by its bare name (RUNPATH)" ;; esac
	./modules "$plug" >plain.txt 2>&1
	"$SONDE" record --module 'libshared.so' --module 'libplug.so*' -o m.data -- ./modules "$plug" >rec.txt 2>rec.err
	check "$label: output unchanged" cmp -s plain.txt rec.txt
	"$SONDE" report -i m.data --format=json >r.json
	"$SONDE" callers-callees -i m.data plug_fn --format=json >cc.json
	"$SONDE" info -i m.data --format=json >info.json
	python3 - "$label" <<'PY'
import json, sys
label = sys.argv[1]
def say(good, name, why=""):
    print(("ok - " if good else "not ok - ") + f"{label}: {name}" + ("" if good else f": {why}"))
want = {}
for l in open("plain.txt"):
    f = l.split()
    if f[0] == "calls" and "->" not in f[1]:
        want[f[1]] = int(f[2])
fs = json.load(open("r.json"))["functions"]
got = {}
for f in fs:
    got[f["name"]] = got.get(f["name"], 0) + f["calls"]
bad = {k: (v, got.get(k)) for k, v in want.items() if got.get(k) != v}
say(not bad and len(want) == 5, "each function called as often as the program counted, plugin and library too",
    str(bad))
mods = {f["name"]: f["module"].rsplit("/", 1)[-1] for f in fs}
say(mods.get("plug_fn") == "libplug.so" and mods.get("shared_fn") == "libshared.so",
    "functions attributed to their library", str(mods))
callers = {c["name"]: c["calls"] for c in json.load(open("cc.json"))["callers"]}
say(callers == {"use_plugin": want["plug_fn"]}, "plug_fn called from use_plugin only", str(callers))
paths = [m["path"].rsplit("/", 1)[-1] for m in json.load(open("info.json"))["modules"] if m["how"] == "patched"]
say(sorted(set(paths)) == ["libplug.so", "libshared.so", "modules"],
    "sonde info: the executable, the library and the plugin patched", str(paths))
# the stubs sonde built before the program ran, taken where sonde built them or moved to where
# the program found room (a library usually has another object right below it): never asked for
ways = {m["path"].rsplit("/", 1)[-1] + ":" + str(m["stubs"]) for m in json.load(open("info.json"))["modules"]}
say(all(w.split(":")[1] in ("prebuilt", "moved") for w in ways), "stubs built before the program ran, "
    "none asked for (" + ", ".join(sorted(ways)) + ")", str(ways))
PY
	# the same with every region asked for: the same counts (a run with the code moved is the one above)
	SONDE_INSTR_ASK=1 "$SONDE" record --module 'libshared.so' --module 'libplug.so*' -o a.data -- ./modules "$plug" >reca.txt 2>reca.err
	check "$label, stubs asked for: output unchanged" cmp -s plain.txt reca.txt
	"$SONDE" report -i a.data --format=json >ra.json
	python3 - "$label" <<'PY'
import json, sys
# by name and module: crt's deregister_tm_clones and its kin are in each of them (by name
# alone the dict kept whichever module's came last in the report's order: CI saw 1 against 2)
a = {(f["name"], f["module"]): f["calls"] for f in json.load(open("r.json"))["functions"]}
b = {(f["name"], f["module"]): f["calls"] for f in json.load(open("ra.json"))["functions"]}
print(("ok" if a == b else "not ok") + f" - {sys.argv[1]}, stubs asked for: the same counts as with the stubs built before"
      + ("" if a == b else f": {sorted(set(a.items()) ^ set(b.items()))[:6]}"))
PY
done
# without --module: the executable only
"$SONDE" record -o e.data -- ./modules "$PWD/libplug.so" >rec.txt 2>rec.err
"$SONDE" report -i e.data --format=json >r.json
check "without --module: the libraries' functions are not recorded" jq_py r.json \
	"assert {f['module'].rsplit('/', 1)[-1] for f in d['functions']} == {'modules'}, {f['module'] for f in d['functions']}"

# tests/patch_lib.sh — what the tests of programs never built for sonde
# (tests/e2e/patch_*.sh; docs/INSTRUMENTATION.md, "Programs never built for
# sonde") share: each records a plain `cc -O2 -g` build from Debian's source
# without a rebuild and checks that its output is unchanged, that the call
# count of every function equals the sonde-cc build's for the same work (the
# start-up files' functions aside, which a sonde-cc build does not instrument)
# and `uftrace record --no-libcall -P .`'s for every function uftrace counts,
# and that at least 99.5% of the functions found take a jump.  Sourced.
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

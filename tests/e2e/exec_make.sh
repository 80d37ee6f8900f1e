# test-timeout: 900
# exec_make.sh — issue 40: `sonde record --exec cc1 -- make -j2` building
# zstd's library from Debian's source with its own Makefile and Debian's gcc
# (never rebuilt): the decompressor's library (ZSTD_LIB_COMPRESSION=0
# ZSTD_LIB_DICTBUILDER=0: 12 C files and one .S, the compressor's 20 would
# add minutes to CI).  Checked:
# - the build's output lines (in any order: make -j2) and exit status, and
#   every object it writes, the same bytes as the build without sonde;
# - as many cc1 processes with a source file as compile commands in make's
#   output (CC and AS lines), make, sh, the gcc driver and as not patched;
# - two of the compiles (zstd_ddict.c, fse_decompress.c) recorded again by
#   the same make rebuilding just their objects: every function's calls in
#   those two cc1 processes equal, and `report --comm cc1` the sum of the
#   tree's cc1 processes.  The reference goes through make because cc1's
#   counts depend on its environment (make's jobserver and MAKELEVEL), and
#   both runs go without address randomisation (setarch -R) because cc1
#   hashes pointers (its hash tables grow at other moments when the heap
#   moves: a few calls of hash_table::expand and xcalloc differ otherwise).
. "$ROOT/tests/lib.sh"
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
command -v setarch > /dev/null || { skip "make -j2 --exec cc1" "no setarch (util-linux)"; exit 0; }
if ! sh "$ROOT/tools/fetch-src.sh" zstd "$cache/src" > fetch.log 2>&1; then
	skip "make -j2 --exec cc1 on zstd's source" "no zstd source package ($(tail -1 fetch.log))"
	exit 0
fi
V=(libzstd.a ZSTD_LIB_COMPRESSION=0 ZSTD_LIB_DICTBUILDER=0 ZSTD_LEGACY_SUPPORT=0 CC=gcc)
# make_in DIR OUT [SONDE-RECORD-OPTIONS...]: the build in DIR, without sonde
# when no options follow; its output and status in OUT
make_in() {
	local dir=$1 out=$2; shift 2
	local pre=()
	[ $# -gt 0 ] && pre=("$SONDE" record "$@" --)
	(cd "$dir" && setarch -R "${pre[@]}" env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -j2 "${V[@]}") \
		> "$out" 2> "$out.err"
	echo "exit $?" >> "$out"
}
for d in plain rec; do rm -rf "$d" && mkdir "$d" && cp -R "$cache/src/zstd/lib" "$d/"; done
make_in plain/lib plain.txt
make_in rec/lib rec.txt --exec cc1 -o "$PWD/tree.data"
grep -q '^exit 0$' plain.txt || { notok "zstd's library builds without sonde" "$(tail -3 plain.txt.err)"; exit 0; }
# (the lines as a set: two jobs at once print theirs in the order they run)
check "make -j2 --exec cc1: the build's output lines and exit status unchanged" \
	bash -c 'cmp -s <(sort plain.txt) <(sort rec.txt) && [ "$(tail -1 plain.txt)" = "$(tail -1 rec.txt)" ]'
check "make -j2 --exec cc1: every object and the library the same bytes as without sonde" \
	bash -c 'diff -r plain/lib/obj rec/lib/obj && cmp plain/lib/libzstd.a rec/lib/libzstd.a'
"$SONDE" info -i tree.data --format=json > ti.json
# the reference: the same make in the same tree rebuilding two objects
rm -f rec/lib/obj/conf_*/static/zstd_ddict.o rec/lib/obj/conf_*/static/fse_decompress.o
make_in rec/lib one.txt --exec cc1 -o "$PWD/one.data"
check "the reference build (two objects again) ends with status 0" grep -q '^exit 0$' one.txt
"$SONDE" info -i one.data --format=json > oi.json
"$SONDE" report -i tree.data --comm cc1 --format=json > comm.json 2> comm.err
python3 - "$SONDE" "$(gcc -print-prog-name=cc1)" <<'PY'
import json, os, subprocess, sys
def say(good, name, why=""):
    print(("ok - " if good else "not ok - ") + name + ("" if good else ": " + why))
sonde, cc1 = sys.argv[1], os.path.realpath(sys.argv[2])
tree, one = json.load(open("ti.json")), json.load(open("oi.json"))
lines = [l.split() for l in open("plain.txt")]
compiles = [w[1] for w in lines if len(w) == 2 and w[0] in ("CC", "AS") and w[1].endswith(".o")]
def sources(info):
    """cc1 processes with a source file: {file name: pid}"""
    out = {}
    for p in info["processes"]:
        if os.path.realpath(p["exe"]) == cc1:
            src = [a for a in p.get("argv", []) if a.endswith((".c", ".S"))]
            if src:
                out.setdefault(os.path.basename(src[0]), []).append(p["pid"])
    return out
ts = sources(tree)
say(len(compiles) >= 13 and sum(len(v) for v in ts.values()) == len(compiles) and
    sorted(os.path.splitext(k)[0] for k in ts) == sorted(os.path.basename(c)[:-2] for c in compiles),
    f"{sum(len(v) for v in ts.values())} cc1 processes with a source file for {len(compiles)} compile commands",
    f"{sorted(ts)} for {compiles}")
progs = {os.path.basename(os.path.realpath(p["program"])): [os.path.realpath(m) for m in p["modules"]]
         for p in tree["programs"]}
say(progs.get("cc1") == [cc1] and all(not v for k, v in progs.items() if k != "cc1") and "make" in progs,
    "make, sh, the gcc driver and as not patched, cc1 alone", str(progs))
def calls(data, pid):
    r = json.loads(subprocess.check_output([sonde, "report", "-i", data, "--pid", str(pid), "--format=json"]))
    return {(f["name"], f["address"]): f["calls"] for f in r["functions"]}
os_ = sources(one)
for src in ("zstd_ddict.c", "fse_decompress.c"):
    if len(ts.get(src, [])) != 1 or len(os_.get(src, [])) != 1:
        say(False, f"{src}: one cc1 in each recording", f"tree {ts.get(src)}, reference {os_.get(src)}")
        continue
    a, b = calls("tree.data", ts[src][0]), calls("one.data", os_[src][0])
    bad = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
    say(len(a) > 1000 and not bad, f"{src}: cc1's {len(a)} functions, {sum(a.values())} calls, each as in cc1 "
        "recorded again on the same file", str(sorted(bad.items())[:4]))
tot = {}
for pids in ts.values():
    for pid in pids:
        for k, v in calls("tree.data", pid).items():
            tot[k[1]] = tot.get(k[1], 0) + v
probe_pids = [p["pid"] for p in tree["processes"] if os.path.realpath(p["exe"]) == cc1 and
              not any(a.endswith((".c", ".S")) for a in p.get("argv", []))]
for pid in probe_pids:  # the Makefile's compiler probes ($(shell ...) on stdin) are cc1 processes too
    for k, v in calls("tree.data", pid).items():
        tot[k[1]] = tot.get(k[1], 0) + v
comm = {f["address"]: f["calls"] for f in json.load(open("comm.json"))["functions"]}
bad = {k: (comm.get(k), tot.get(k)) for k in set(comm) | set(tot) if comm.get(k) != tot.get(k)}
say(not bad and comm, f"report --comm cc1: each function's calls the sum over the tree's {len(ts) + len(probe_pids)} cc1 "
    f"processes ({sum(comm.values())} calls)", str(sorted(bad.items())[:4]))
PY

#!/usr/bin/env bash
# sym_debuglink.sh — separate debug info (objcopy --only-keep-debug, strip,
# objcopy --add-gnu-debuglink), found next to the binary or in its .debug/
# directory, serves probes and reports alike: a variable probe prints the
# values the program prints itself, and the names and file:line of
# `sonde report` match nm, addr2line and readelf run on the unstripped copy.
source "$ROOT/tests/lib.sh"

src="$PROGS/probe_loop.c"
L_VAR=$(grep -n MARK_VAR "$src" | head -1 | cut -d: -f1)

# split FULL OUT DEBUGDIR STRIPFLAGS...: OUT is FULL without debug info (and
# without what STRIPFLAGS removes), linked to DEBUGDIR/OUT.debug.
split() {
	local full=$1 out=$2 dbgdir=$3; shift 3
	mkdir -p "$dbgdir" &&
	objcopy --only-keep-debug "$full" "$dbgdir/$out.debug" &&
	strip "$@" -o "$out" "$full" &&
	objcopy --add-gnu-debuglink="$dbgdir/$out.debug" "$out"
}

# ---- (a) variable probes read DWARF from the separate debug file ----
gcc -O2 -g -o loop.full "$src" || { notok build "gcc failed"; exit 0; }
split loop.full loop.here . --strip-debug &&
split loop.full loop.dotdebug .debug --strip-all || { notok split "objcopy/strip failed"; exit 0; }
check "loop.here has no DWARF of its own" bash -c '! readelf -S loop.here | grep -q "\.debug_info"'
check "loop.dotdebug has no DWARF and no .symtab" bash -c \
	'! readelf -S loop.dotdebug | grep -qE "\.debug_info|\.symtab"'

for bin in loop.here loop.dotdebug; do
	./$bin > plain.out || { notok "$bin runs" "status $?"; continue; }
	# The program prints g_count (iterations) and g_sum (the sum of every v).
	read -r _ count _ sum _ < plain.out
	"$SONDE" probe --format=json -o "$bin.json" -e "var:probe_loop.c:$L_VAR:v" -- ./$bin \
		> probed.out 2> "$bin.err"
	rc=$?
	check "$bin: var probe exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { cat "$bin.err"; continue; }
	check "$bin: program output unchanged" cmp -s plain.out probed.out
	# v = work(i) = 3i+1 for i = 0..count-1: min 1, max 3(count-1)+1.
	check "$bin: var probe count and sum are the program's ($count, $sum)" jq_py "$bin.json" \
		"p=d['probes'][0]; assert (p['count'], p['sum'], p['min'], p['max']) == ($count, $sum, 1, 3*($count-1)+1), p"
done

# Without the debug file the variable is unknown: a clear error, not a value.
mv .debug/loop.dotdebug.debug moved.debug
"$SONDE" probe -e "var:probe_loop.c:$L_VAR:v" -- ./loop.dotdebug > /dev/null 2> nodebug.err
rc=$?
check "debug file removed: probe fails" test "$rc" -ne 0
check "debug file removed: one clear error line" grep -q '^sonde: error: ' nodebug.err
mv moved.debug .debug/loop.dotdebug.debug

# ---- (b) report names and lines come from the separate debug file ----
"$SONDE_CC_BIN" -O0 -g -o prof.full "$src" || { notok build "sonde-cc failed"; exit 0; }
split prof.full prof.here . --strip-debug &&
split prof.full prof.dotdebug .debug --strip-all || { notok split "objcopy/strip failed"; exit 0; }

# Expected, from the unstripped copy: each function's address and size (nm),
# its file (addr2line on an address in its body) and its line, the line that
# declares it (DW_AT_decl_line of the DW_TAG_subprogram whose DW_AT_low_pc is
# that address, from readelf; the line table's first row is the opening
# brace's line, and sonde-cc's entry sled precedes that row).
nm -S --defined-only prof.full | awk '$3 ~ /^[Tt]$/ {print $1, $2, $4}' > syms.txt
readelf --debug-dump=info prof.full > info.txt
: > expect.txt
while read -r addr size name; do
	mid=$(printf '0x%x' $((0x$addr + 0x$size / 2)))
	echo "$name 0x$addr $(addr2line -e prof.full "$mid" | cut -d' ' -f1)" >> expect.txt
done < syms.txt

for bin in prof.here prof.dotdebug; do
	./$bin > plain.out || { notok "$bin runs" "status $?"; continue; }
	read -r _ count _ _ _ < plain.out
	rm -rf "$bin.data"
	"$SONDE" record -o "$bin.data" -- ./$bin > /dev/null 2> "$bin.rec.err" ||
		{ notok "$bin: record" "$(tail -1 "$bin.rec.err")"; continue; }
	"$SONDE" report -i "$bin.data" --format=json > "$bin.report.json" 2> "$bin.rep.err" ||
		{ notok "$bin: report" "$(tail -1 "$bin.rep.err")"; continue; }
	python3 - "$bin" "$bin.report.json" expect.txt info.txt "$count" <<'PY'
import json, re, sys
bin, report, expect, info, count = sys.argv[1:5] + [int(sys.argv[5])]
# readelf: DW_AT_decl_line of each DW_TAG_subprogram, by DW_AT_low_pc.
decl, cur = {}, None
for l in open(info):
    if "(DW_TAG_" in l:
        cur = {} if "(DW_TAG_subprogram)" in l else None
    elif cur is not None:
        m = re.match(r"\s*<\w+>\s+(DW_AT_\w+)\s*:\s*(.*)", l)
        if m:
            cur[m.group(1)] = m.group(2).strip()
            if "DW_AT_low_pc" in cur and "DW_AT_decl_line" in cur:
                decl[int(cur["DW_AT_low_pc"], 16)] = int(cur["DW_AT_decl_line"])
want = {}
for l in open(expect):
    name, addr, loc = l.split()
    want[name] = (loc.rpartition(":")[0], decl.get(int(addr, 16)))
fns = {f["name"]: f for f in json.load(open(report))["functions"]}
def say(ok, name, why=""):
    print(f"ok - {bin}: {name}" if ok else f"not ok - {bin}: {name}: {why}")
# probe_loop.c's own functions, every one called at least once.
mine = ["main", "work", "note", "sink"]
say(all(n in fns for n in mine), "every function named as nm names it", sorted(fns))
for n in mine:
    if n not in fns:
        continue
    got = (fns[n].get("file"), fns[n].get("line"))
    say(got == want.get(n), f"{n} at addr2line's file, readelf's line {want.get(n)}", str(got))
# The calls the program made: work and sink once per iteration it counted,
# note for i % 3 == 0.
calls = {n: fns[n]["calls"] for n in mine if n in fns}
say(calls == {"main": 1, "work": count, "sink": count, "note": (count + 2) // 3},
    "calls match the program's count", str(calls))
PY
done

# Without the debug file the stripped binary's functions have no names: the
# names above really came from the debug file.
mv .debug/prof.dotdebug.debug moved.debug
if "$SONDE" report -i prof.dotdebug.data --format=json > nodebug.json 2> nodebug.err; then
	check "debug file removed: report has no name 'work'" jq_py nodebug.json \
		"assert 'work' not in [f['name'] for f in d['functions']], [f['name'] for f in d['functions']]"
else
	notok "debug file removed: report still runs" "$(tail -1 nodebug.err)"
fi
mv moved.debug .debug/prof.dotdebug.debug

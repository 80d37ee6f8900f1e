# exitsled.sh — exit sleds (docs/INSTRUMENTATION.md "Exit sleds"): a GCC
# or Clang build through sonde-cc has a five-byte nop before each `ret` of
# its functions (sonde-as; Clang through -fno-integrated-as) and records them
# in __sonde_exit_sleds; while recording they call the module's exit
# trampoline and the return address is never replaced.  Checked on
# tests/progs/exitsled.c and exitsled_cxx.cpp, sonde-cc -O2, with gcc/g++
# and with clang/clang++ (each check's name starts with the compiler):
#  - the build has the sleds (the section, and a nop before c()'s `ret`);
#  - gdb's bt at a breakpoint in c() (called by b, a, main) is the plain
#    run's, frame for frame: no exit trampoline in the stack; so are the
#    stacks of `perf record --call-graph=dwarf` samples in c() (if perf can
#    sample here);
#  - the program's own output (backtrace() names, return values in rax:rdx,
#    xmm0, xmm0:xmm1, st0, st0:st1, counts after longjmp) is the plain
#    build's under `sonde record` and `--trace`, and the recording's call
#    counts are the program's;
#  - longjmp out of 9 recorded frames and a C++ exception through 8: the
#    calls after them are under the right callers (the dead frames closed at
#    the next entry or exit, by comparing stack slots);
#  - a tail call to a function sonde does not record (usleep): the caller's
#    time includes it (its tail sled replaced the return address);
#  - a coroutine switched away from inside recorded frames (exitsled_co.c):
#    output and counts the program's;
#  - Lua 5.4 built with clang through sonde-cc (at the end).
# test-timeout: 1500 (the first run builds Lua with clang into the test cache)
. "$ROOT/tests/lib.sh"
# every check's name starts with the compiler ($cc)
eval "lib_$(declare -f ok)"; eval "lib_$(declare -f notok)"; eval "lib_$(declare -f skip)"
ok() { lib_ok "$cc: $1"; }
notok() { lib_notok "$cc: $1" "$2"; }
skip() { lib_skip "$cc: $1" "$2"; }
sleds() { # CC CXX: every check below, in the directory CC
cc=$1 cxx=$2
mkdir -p "$cc" && cd "$cc" || return
SONDE_CC=$cc "$SONDE_CC_BIN" -O2 -rdynamic "$PROGS/exitsled.c" -o ex &&
	$cc -O2 -rdynamic "$PROGS/exitsled.c" -o ex-plain &&
	SONDE_CXX=$cxx "$SONDE_CXX_BIN" -O2 "$PROGS/exitsled_cxx.cpp" -o exx &&
	$cxx -O2 "$PROGS/exitsled_cxx.cpp" -o exx-plain || { notok "build" "sonde-cc or $cc failed"; cd ..; return; }

check "the sonde-cc build has a __sonde_exit_sleds section" sh -c "readelf -SW ex | grep -q ' __sonde_exit_sleds '"
check "c() has a five-byte nop right before its ret" \
	sh -c "objdump -d ex | awk '/<c>:/,/^\$/' | grep -B1 -E '\\sret' | grep -q '0f 1f 44 00 00'"

# the program's own observations, plain build against sonde-cc build
./ex-plain >plain.out
./exx-plain >plainx.out
check "dormant: output of the plain build" cmp -s plain.out <(./ex)
for mode in profile trace; do
	opt=; [ $mode = trace ] && opt=--trace
	"$SONDE" record $opt -o $mode.data -- ./ex >$mode.out 2>$mode.err
	"$SONDE" record $opt -o x$mode.data -- ./exx >x$mode.out 2>x$mode.err
	check "$mode: output of the plain build (backtrace, return registers, longjmp)" cmp -s plain.out $mode.out
	check "$mode: C++ output of the plain build (exceptions through exit sleds)" cmp -s plainx.out x$mode.out
	"$SONDE" export -i $mode.data --format folded >$mode.folded 2>/dev/null
	"$SONDE" export -i x$mode.data --format folded >x$mode.folded 2>/dev/null
	"$SONDE" report -i $mode.data --format json >$mode.json 2>/dev/null
	"$SONDE" report -i x$mode.data --format json >x$mode.json 2>/dev/null
	for p in "$mode:ex:plain.out" "x$mode:exx:plainx.out"; do
		IFS=: read -r d prog ref <<<"$p"
		python3 - "$d.json" "$ref" <<'PY' && ok "$mode/$prog: calls recorded = the program's own counts" || notok "$mode/$prog: calls" "see $PWD/$d.json"
import json, re, sys
rec = {}
for f in json.load(open(sys.argv[1]))["functions"]:
    rec[re.sub(r"\(.*", "", f["name"])] = rec.get(re.sub(r"\(.*", "", f["name"]), 0) + f["calls"]
own = dict((m.group(1), int(m.group(2))) for m in re.finditer(r"^calls (\w+) (\d+)$", open(sys.argv[2]).read(), re.M))
own.pop("r_", None)
bad = [(k, v, rec.get(k)) for k, v in own.items() if rec.get(k) != v]
if bad or not own:
    print(bad, file=sys.stderr); sys.exit(1)
PY
	done
	# a tail call (tailer jumps to usleep, which sonde does not record): the
	# frame lasts until usleep returns, so tailer's time has the sleeps, and
	# ends there: not with main's own sleep after it (half of it is margin)
	python3 - "$mode.json" "$mode.out" <<'PY' && ok "$mode: a tail call's frame ends when the callee returns (tailer's time: its sleeps, not main's)" || notok "$mode: tail call" "see $PWD/$mode.json"
import json, re, sys
m = re.search(r"tailer slept at least (\d+) us, then main (\d+) us", open(sys.argv[2]).read())
us, main_us = int(m.group(1)), int(m.group(2))
f = [f for f in json.load(open(sys.argv[1]))["functions"] if f["name"] == "tailer"][0]
print("tailer", f["inclusive_ns"], "ns; slept", us, "us, then main", main_us, "us", file=sys.stderr)
sys.exit(0 if f["calls"] == 4 and us * 1000 <= f["inclusive_ns"] < (us + main_us / 2) * 1000 else 1)
PY
	check "$mode: after tailer(), after() is main's" sh -c "grep -q '^main;after ' $mode.folded && ! grep -q 'tailer;after' $mode.folded"
	# after the longjmp out of down() x 9, after() is main's callee, never down's
	check "$mode: after the longjmp, after() is called by main" \
		sh -c "grep -q '^main;after ' $mode.folded && ! grep -q 'down;after' $mode.folded"
	check "$mode: after the exception, after() is called by catcher() and main" \
		sh -c "grep -q '^main;catcher(int);after(int) ' x$mode.folded && grep -q '^main;after(int) ' x$mode.folded && ! grep -q 'deep(int);after' x$mode.folded"
done

# a coroutine switched away from inside recorded frames (exitsled_co.c): the
# program's output and its own counts, profile and trace
SONDE_CC=$cc "$SONDE_CC_BIN" -O2 "$PROGS/exitsled_co.c" -o co && $cc -O2 "$PROGS/exitsled_co.c" -o co-plain &&
	./co-plain >co.plain || notok "coroutine: build" "sonde-cc or $cc failed"
for mode in profile trace; do
	opt=; [ $mode = trace ] && opt=--trace
	[ -s co.plain ] || break
	"$SONDE" record $opt -o co-$mode.data -- ./co >co-$mode.out 2>co-$mode.err
	check "coroutine ($mode): output of the plain build" cmp -s co.plain co-$mode.out
	"$SONDE" report -i co-$mode.data --format json >co-$mode.json 2>/dev/null
	python3 - co-$mode.json co.plain <<'PY' && ok "coroutine ($mode): calls recorded = the program's own counts" || notok "coroutine ($mode): calls" "see $PWD/co-$mode.json"
import json, re, sys
rec = dict((f["name"], f["calls"]) for f in json.load(open(sys.argv[1]))["functions"])
own = dict((m.group(1), int(m.group(2))) for m in re.finditer(r"^calls (\w+) (\d+)$", open(sys.argv[2]).read(), re.M))
sys.exit(0 if own and all(rec.get(k) == v for k, v in own.items()) else 1)
PY
done

# gdb's bt at a breakpoint in c(): the plain run's frames, no trampoline
gdb=$(command -v gdb || command -v gdb-multiarch)
if [ -n "$gdb" ]; then
	printf 'set pagination off\nbreak c\nrun\nbt\n' >bt.gdb
	frames() { sed -nE 's/^#[0-9]+ +(0x[0-9a-f]+ in )?([^ ]+) .*/\2/p' "$1"; }
	"$gdb" -q -batch -x bt.gdb --args ./ex bt >bt.plain 2>&1
	"$SONDE" record --no-patch -o bt.data -- "$gdb" -q -batch -x bt.gdb --args ./ex bt >bt.rec 2>&1
	if [ "$(frames bt.plain | head -4 | tr '\n' ' ')" = "c b a main " ] && cmp -s <(frames bt.plain) <(frames bt.rec); then
		ok "gdb bt in a recorded -O2 function: the plain run's frames ($(frames bt.rec | tr '\n' ' '))"
	else
		notok "gdb bt in a recorded -O2 function" "$(frames bt.plain | tr '\n' ' ') / $(frames bt.rec | tr '\n' ' ')"
	fi
	# and the run under gdb was recorded (c() entered once before the break)
	check "gdb bt: the program under gdb was recorded" sh -c "'$SONDE' info -i bt.data 2>&1 | grep -q 'instrumented'"
else
	skip "gdb bt" "gdb not installed"
fi

# perf --call-graph=dwarf (unwinds a copy of the stack after the fact): the
# first sample in c() has the plain run's callers
if command -v perf >/dev/null && perf record -q -e cpu-clock -o perf.try true >/dev/null 2>&1; then
	pstack() { # the first sample in c: its frames' names
		perf script -i "$1" 2>/dev/null | awk '/^ex/ { getline; if ($2 ~ /^c\+/) { s = ""; while ($0 != "") { sub(/\+.*/, "", $2); s = s " " $2; getline } print s; exit } }'
	}
	perf record -q -e cpu-clock --call-graph=dwarf -o perf.plain ./ex-plain spin >/dev/null 2>&1
	"$SONDE" record --no-patch -o perf.data -- perf record -q -e cpu-clock --call-graph=dwarf -o perf.rec ./ex spin >/dev/null 2>&1
	sp=$(pstack perf.plain) sr=$(pstack perf.rec)
	if [ "$(echo $sp | cut -d' ' -f1-4)" = "c b a main" ] && [ "$sp" = "$sr" ]; then
		ok "perf --call-graph=dwarf in a recorded -O2 function: the plain run's frames ($sr)"
	else
		notok "perf --call-graph=dwarf" "plain:$sp / recorded:$sr"
	fi
else
	skip "perf --call-graph=dwarf" "perf cannot sample here"
fi
cd ..
}
found=0
for pair in gcc:g++ clang:clang++; do
	IFS=: read -r cc cxx <<<"$pair"
	if command -v "$cc" >/dev/null && command -v "$cxx" >/dev/null; then
		found=1
		sleds "$cc" "$cxx"
	else
		lib_skip "exitsled $cc" "$cc/$cxx not installed"
	fi
done
[ $found = 1 ] || exit 0

# A real program built with Clang through sonde-cc: Debian's Lua 5.4.  Its
# functions have exit sleds (most of them: the others end in an indirect tail
# call); recorded, its output is the plain run's, luaB_tostring's calls are
# the script's own count, and gdb's bt in luaB_tostring is the plain run's.
cc=clang # (the checks below: "clang: ...")
cache=${SONDE_TEST_CACHE:-$BUILD/test-cache}
gdb=$(command -v gdb || command -v gdb-multiarch)
if ! command -v clang >/dev/null; then
	lib_skip "clang: lua" "clang not installed"
elif ! sh "$ROOT/tools/fetch-lua.sh" "$cache" >fetch.log 2>&1; then
	lib_skip "clang: lua" "no Lua source ($(tail -1 fetch.log))"
elif ! SONDE_CC=clang real_build lua-sonde-clang lua "$SONDE_CC_BIN" -g; then
	lib_notok "clang: lua builds with sonde-cc" "$(tail -3 build-lua-sonde-clang.log)"
else
	lua=$cache/lua-sonde-clang
	cp "$PROGS/tostring.lua" t.lua
	python3 - "$lua" <<'PY' && lib_ok "clang: lua: $(cat share.txt)" || lib_notok "clang: lua: 90% of the functions with exit sleds" "$(cat share.txt)"
import struct, subprocess, sys
path = sys.argv[1]
out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
sec = {}
for l in out.splitlines():
    f = l.split("]")[1].split() if "]" in l else []
    if len(f) > 4 and all(c in "0123456789abcdef" for c in f[3] + f[4]):
        sec[f[0]] = (int(f[3], 16), int(f[4], 16))
nf = sec.get("__patchable_function_entries", (0, 0))[1] // 8
data = open(path, "rb").read()
fns = 0
if "__sonde_exit_sleds" in sec:
    o, n = sec["__sonde_exit_sleds"]
    w = struct.unpack("<%di" % (n // 4), data[o:o + n])
    i = 0
    while i + 2 <= len(w):
        fns += 1; i += 2 + (w[i + 1] & 0xffff) + ((w[i + 1] >> 16) & 0xffff)
open("share.txt", "w").write(f"{fns} of {nf} functions with exit sleds")
sys.exit(0 if nf > 500 and fns >= 0.9 * nf else 1)
PY
	"$lua" t.lua >lua.plain; prc=$?
	n=$(awk '$1 == "tostring" {print $2}' lua.plain)
	for mode in profile trace; do
		opt=; [ $mode = trace ] && opt=--trace
		"$SONDE" record $opt -o lua-$mode.data -- "$lua" t.lua >lua-$mode.out 2>lua-$mode.err; rc=$?
		check "lua ($mode): exit status and output of the plain run" sh -c "[ $rc = $prc ] && cmp -s lua.plain lua-$mode.out"
		"$SONDE" report -i lua-$mode.data --format json >lua-$mode.json 2>/dev/null
		check "lua ($mode): luaB_tostring's calls are the script's $n" jq_py lua-$mode.json \
			"c=[f['calls'] for f in d['functions'] if f['name'] == 'luaB_tostring']; assert c == [$n], c"
	done
	if [ -n "$gdb" ]; then
		printf 'set pagination off\nbreak luaB_tostring\nrun\nbt\n' >lbt.gdb
		frames() { sed -nE 's/^#[0-9]+ +(0x[0-9a-f]+ in )?([^ ]+) .*/\2/p' "$1"; }
		"$gdb" -q -batch -x lbt.gdb --args "$lua" t.lua >lbt.plain 2>&1
		"$SONDE" record --no-patch -o lbt.data -- "$gdb" -q -batch -x lbt.gdb --args "$lua" t.lua >lbt.rec 2>&1
		# A tail call's callee runs with its return address replaced (its tail
		# caller's sled did it: INSTRUMENTATION.md "Exit sleds"), and gdb
		# shows the exit trampoline as one more frame above it: here only
		# above luaD_callnoyield, which f_call (elided in both) tail-calls;
		# every other frame has exit sleds and shows nothing.  Without them,
		# a trampoline would follow every recorded frame.
		tramps=$(frames lbt.rec | grep -c '^sonde_exit_trampoline$')
		others=$(frames lbt.rec | grep -B1 '^sonde_exit_trampoline$' | grep -v -e '^sonde_exit_trampoline$' -e '^--$' | sort -u | tr '\n' ' ')
		if [ "$(frames lbt.plain | head -1)" = luaB_tostring ] && [ "$(frames lbt.plain | wc -l)" -gt 4 ] &&
			cmp -s <(frames lbt.plain) <(frames lbt.rec | grep -v '^sonde_exit_trampoline$') &&
			{ [ "$tramps" = 0 ] || [ "$others" = "luaD_callnoyield " ]; } &&
			grep -q instrumented <("$SONDE" info -i lbt.data 2>&1); then
			lib_ok "clang: lua: gdb bt in recorded luaB_tostring: the plain run's frames, and $tramps exit trampoline(s), above luaD_callnoyield (f_call's tail callee) only ($(frames lbt.rec | tr '\n' ' '))"
		else
			lib_notok "clang: lua: gdb bt in luaB_tostring" "$(frames lbt.plain | tr '\n' ' ') / $(frames lbt.rec | tr '\n' ' ')"
		fi
	fi
fi

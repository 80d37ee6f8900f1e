# Bad input: a clear one-line error and a non-zero exit, never a crash.
. "$ROOT/tests/lib.sh"
# expect_err NAME CODE PATTERN COMMAND...: exit status CODE, one "sonde: error:" line matching PATTERN
expect_err() {
	local name=$1 code=$2 pat=$3; shift 3
	"$@" >out.txt 2>err.txt
	local rc=$?
	if [ $rc -ne "$code" ]; then notok "$name" "exit $rc, expected $code ($(head -c 300 err.txt))"; return; fi
	if [ $rc -ge 128 ]; then notok "$name" "crashed"; return; fi
	if ! grep -q "^sonde: error: .*$pat" err.txt; then notok "$name" "message: $(head -c 300 err.txt)"; return; fi
	ok "$name"
}
"$SONDE_CC_BIN" -O1 -g "$PROGS/seed002.c" -o seed002 || { notok build "sonde-cc failed"; exit 1; }
"$SONDE" record -- ./seed002 0.2 >/dev/null 2>&1 || notok "record" "failed"

expect_err "missing recording directory" 2 "no such recording" "$SONDE" report -i nowhere.data
mkdir empty.data
expect_err "empty directory" 2 "profile.sonde: cannot open" "$SONDE" report -i empty.data
for cut in 10 100 2000; do
	rm -rf cut.data; cp -r sonde.data cut.data
	truncate -s $cut cut.data/profile.sonde
	expect_err "truncated at $cut bytes" 2 "truncated at byte" "$SONDE" report -i cut.data
done
rm -rf cut.data; cp -r sonde.data cut.data
size=$(stat -c %s cut.data/profile.sonde)
truncate -s $((size - 16)) cut.data/profile.sonde
expect_err "END record missing" 2 "truncated at byte" "$SONDE" info -i cut.data
rm -rf bad.data; cp -r sonde.data bad.data
printf '\xff' | dd of=bad.data/profile.sonde bs=1 seek=200 conv=notrunc 2>/dev/null
expect_err "flipped byte" 2 "damaged record at byte" "$SONDE" report -i bad.data
rm -rf bad.data; cp -r sonde.data bad.data
printf 'NOTSONDE' | dd of=bad.data/profile.sonde bs=1 seek=0 conv=notrunc 2>/dev/null
expect_err "bad magic" 2 "not a sonde recording" "$SONDE" tree -i bad.data
# Random damage anywhere must never crash any reader.
python3 - <<'PY'
import os, random, shutil, subprocess
random.seed(1)
data = open("sonde.data/profile.sonde", "rb").read()
crashes = []
for i in range(60):
    b = bytearray(data)
    for _ in range(random.randint(1, 8)):
        b[random.randrange(len(b))] = random.randrange(256)
    if random.random() < 0.3:
        b = b[:random.randrange(len(b))]
    shutil.rmtree("fz.data", ignore_errors=True); os.mkdir("fz.data")
    open("fz.data/profile.sonde", "wb").write(bytes(b))
    for cmd in (["report"], ["tree"], ["info"], ["callers-callees", "C"], ["export", "--format=folded", "-o", "/dev/null"]):
        p = subprocess.run([os.environ["SONDE"], *cmd, "-i", "fz.data"], capture_output=True, text=True, timeout=30)
        if p.returncode < 0 or p.returncode >= 128 or (p.returncode != 0 and "sonde: error:" not in p.stderr):
            crashes.append((i, cmd, p.returncode, p.stderr[:200]))
print(("ok" if not crashes else "not ok") + " - 60 randomly damaged recordings x 5 commands: no crash, errors are one clear line" + ("" if not crashes else f": {crashes[:3]}"))
PY
expect_err "program not built with sonde-cc, --no-patch" 2 "no function sonde could record" "$SONDE" record --no-patch -o plain.data -- /bin/true
expect_err "program that does not exist" 2 "cannot run" "$SONDE" record -o x.data -- ./no-such-program
expect_err "record without a program" 1 "no program to record" "$SONDE" record
expect_err "unknown command" 1 "unknown command" "$SONDE" frobnicate
expect_err "unknown option" 1 "unknown option" "$SONDE" report --frobnicate
expect_err "bad --sort" 1 "invalid --sort" "$SONDE" report --sort=bogus
expect_err "bad --limit" 1 "invalid value" "$SONDE" report --limit=abc
expect_err "bad --format" 1 "unknown format" "$SONDE" report --format=xml
expect_err "bad --min-percent" 1 "invalid value" "$SONDE" tree --min-percent=300
expect_err "missing option argument" 1 "needs an argument" "$SONDE" report --sort
expect_err "unknown function" 1 "no function 'nosuch'" "$SONDE" callers-callees nosuch
expect_err "callers-callees without a function" 1 "expected one function" "$SONDE" callers-callees
expect_err "unknown thread" 1 "no thread" "$SONDE" report --tid 1
expect_err "export without format" 1 "--format is required" "$SONDE" export
expect_err "export unknown format" 1 "unknown export format" "$SONDE" export --format=bogus
expect_err "record into a foreign directory" 1 "not a sonde recording" sh -c "mkdir -p mine && touch mine/notes.txt && \"$SONDE\" record -o mine -- ./seed002 0.1"
"$SONDE" callers-callees '[A-C]' >out.txt 2>err.txt
rc=$?
if [ $rc -eq 1 ] && grep -q "ambiguous" err.txt && grep -q "^  A@seed002.c " err.txt && grep -q "^  C@seed002.c " err.txt; then ok "ambiguous function lists candidates"; else notok "ambiguous function lists candidates" "rc=$rc $(cat err.txt)"; fi
"$SONDE" report --help >help.txt 2>&1 && grep -q -- "--sort" help.txt && ok "report --help" || notok "report --help" "$(head -3 help.txt)"
# Numbers: range-checked, no overflow, no NaN or infinity; an empty format is not a format
# (it made every reporting command loop forever).
expect_err "empty --format" 1 "unknown format ''" timeout 10 "$SONDE" report --format=
expect_err "empty --format (export)" 1 "unknown export format" timeout 10 "$SONDE" export --format= -o x
expect_err "--buffer-size overflowing 64 bits" 1 "invalid size" "$SONDE" record --buffer-size=99999999999999999999 -- ./seed002 0.1
expect_err "negative --buffer-size" 1 "invalid size" "$SONDE" record --buffer-size=-5 -- ./seed002 0.1
expect_err "--buffer-size beyond 4G" 1 "invalid size" "$SONDE" record --buffer-size=5G -- ./seed002 0.1
expect_err "--max-memory below 16M" 1 "at least 16M" "$SONDE" record --max-memory=1M -- ./seed002 0.1
expect_err "--max-memory beyond 256G" 1 "invalid size" "$SONDE" record --max-memory=300G -- ./seed002 0.1
expect_err "--min-time nan" 1 "invalid duration" "$SONDE" record --trace --min-time=nan -- ./seed002 0.1
expect_err "--min-time inf" 1 "invalid duration" "$SONDE" record --trace --min-time=inf -- ./seed002 0.1
expect_err "--min-percent nan" 1 "invalid value" "$SONDE" tree --min-percent=nan
expect_err "--time-range nan" 1 "invalid --time-range" "$SONDE" replay --time-range=nan,1
expect_err "--time-range inf" 1 "invalid --time-range" "$SONDE" replay --time-range=0,inf
expect_err "--duration inf" 1 "invalid value" "$SONDE" probe --duration=inf -e func:main -- ./seed002 0.1
# -h is --help on every command; a flame graph is not spilled into a terminal.
"$SONDE" record -h >help.txt 2>&1 && grep -q -- "--trace" help.txt && ok "record -h shows the help" || notok "record -h shows the help" "$(head -3 help.txt)"
if command -v script >/dev/null 2>&1; then
	script -qec "\"$SONDE\" flamegraph" /dev/null >tty.txt 2>&1
	rc=$?
	if [ $rc -eq 1 ] && grep -q "sonde: error: the flame graph is an SVG file: give -o" tty.txt && ! grep -q "<svg" tty.txt; then
		ok "flamegraph refuses to write SVG into a terminal (exit 1)"
	else
		notok "flamegraph refuses to write SVG into a terminal" "exit $rc: $(head -c 300 tty.txt)"
	fi
else
	skip "flamegraph refuses to write SVG into a terminal" "no 'script' to give it a terminal"
fi
"$SONDE" flamegraph >fg.svg 2>err.txt && grep -q "<svg" fg.svg && ok "flamegraph into a pipe or file still writes SVG" || notok "flamegraph into a pipe or file still writes SVG" "$(cat err.txt)"
# A program killed by a signal: info names the signal.
printf '#include <stdlib.h>\nint main(void) { abort(); }\n' >abrt.c
"$SONDE_CC_BIN" abrt.c -o abrt && "$SONDE" record -o abrt.data -- ./abrt >/dev/null 2>&1
"$SONDE" info -i abrt.data >info.txt 2>&1
grep -q "exit status:  killed by SIGABRT (signal 6)" info.txt && ok "info: killed by SIGABRT, not -6" || notok "info: killed by SIGABRT, not -6" "$(grep exit info.txt)"

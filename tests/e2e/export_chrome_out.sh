# Where the Chrome export goes (src/export/bulk_out.c): a regular file gets
# its 1 MiB blocks with O_DIRECT and the tail with an ordinary write; stdout
# redirected to a file (at an aligned offset, at an unaligned one, with
# O_APPEND), a pipe, tmpfs, SONDE_EXPORT_DIRECT=0 and a file that held more
# before must all get the same bytes.  The calls counted in the JSON are the
# program's (tests/progs/flight.c prints them); the export of an existing
# file's replacement is the new content only; a full device is a clear
# error.  With O_DIRECT (when the directory's file system takes it, asked of
# Python's os.open), the file's pages are not left in the page cache
# (fincore from util-linux): the export did not go through it.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O1 -g -I"$PROGS" "$PROGS/flight.c" -o flight || { notok build "sonde-cc failed"; exit 1; }
./flight 60000 500 >plain.out
"$SONDE" record --trace -o r -- ./flight 60000 500 >rec.out 2>rec.err; rc=$?
[ $rc -eq 0 ] && cmp -s plain.out rec.out && ok "program output unchanged" ||
	{ notok "program output unchanged" "exit $rc; $(tail -2 rec.err)"; exit 0; }

# (always: no page cache for the rest of an export whose writer thread
# waited long, as on a loaded machine: the check below is of O_DIRECT itself)
SONDE_EXPORT_DIRECT=always "$SONDE" export -i r --format=chrome -o file.json 2>err.txt && ok "export -o FILE" ||
	{ notok "export -o FILE" "$(cat err.txt)"; exit 0; }
size=$(stat -c %s file.json)
direct=$(python3 -c "
import os
try:
    os.close(os.open('probe.direct', os.O_WRONLY | os.O_CREAT | os.O_DIRECT)); print(1)
except OSError:
    print(0)")
rm -f probe.direct
if [ "$direct" = 1 ] && [ -e /proc/self/fd/0 ] && command -v fincore >/dev/null; then
	res=$(fincore -n -r -o PAGES file.json | tr -d ' ')
	# Only the last, partial block went through the cache (and a reader
	# racing it, none here): a buffered write leaves all ~1250 pages.
	[ "${res:-x}" -le 2 ] 2>/dev/null && ok "O_DIRECT: the file's $size bytes are not in the page cache" ||
		notok "O_DIRECT: the file's $size bytes are not in the page cache" "$res pages resident"
else
	skip "O_DIRECT page-cache check" "the file system of $T refuses O_DIRECT, or no /proc, or no fincore"
fi

python3 - <<'PY'
import json, os
def say(good, name, why=""):
    print(("ok - " if good else "not ok - ") + name + ("" if good else f": {why}"))
want = {l.split()[0]: int(l.split()[1]) for l in open("plain.out")}
try:
    d = json.load(open("file.json"))
except Exception as e:
    say(False, "the export is JSON", repr(e)); raise SystemExit
c = {}
for e in d["traceEvents"]:
    if e["ph"] == "X" and e.get("cat") != "sched":  # not the state tracks
        c[e["name"]] = c.get(e["name"], 0) + 1
got = {k: c.get(k, 0) for k in want}
say(got == want and c.get("main") == 1, "the JSON's slices are the program's calls", f"{got} vs {want}")
say(os.path.getsize("file.json") > 3 << 20, "the output spans several 1 MiB blocks", str(os.path.getsize("file.json")))
PY

# The same bytes every other way.
same() { # NAME FILE [PREFIX_BYTES]
	if tail -c +$(( ${3:-0} + 1 )) "$2" | cmp -s - file.json; then ok "$1: the same bytes"; else
		notok "$1: the same bytes" "$(stat -c %s "$2") bytes vs $size"; fi
}
"$SONDE" export -i r --format=chrome >redir.json 2>err.txt; same "stdout redirected to a file" redir.json
"$SONDE" export -i r --format=chrome 2>err.txt | cat >pipe.json; same "stdout a pipe" pipe.json
{ head -c 8192 /dev/zero | tr '\0' ' '; "$SONDE" export -i r --format=chrome; echo '"after"'; } >off8192.json 2>err.txt
printf '"after"\n' >>file.after; cat file.json file.after >want.after
tail -c +8193 off8192.json | cmp -s - want.after && ok "stdout a file at offset 8192 (aligned), written on after" ||
	notok "stdout a file at offset 8192 (aligned), written on after" "$(stat -c %s off8192.json) bytes"
{ printf '     '; "$SONDE" export -i r --format=chrome; } >off5.json 2>err.txt; same "stdout a file at offset 5" off5.json 5
head -c 4096 /dev/zero | tr '\0' ' ' >append.json
"$SONDE" export -i r --format=chrome >>append.json 2>err.txt; same "stdout appending (O_APPEND)" append.json 4096
SONDE_EXPORT_DIRECT=0 "$SONDE" export -i r --format=chrome -o cached.json 2>err.txt; same "SONDE_EXPORT_DIRECT=0" cached.json
head -c $(( size + 3000000 )) /dev/urandom >over.json
"$SONDE" export -i r --format=chrome -o over.json 2>err.txt; same "-o over a larger file" over.json
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	shm=$(mktemp /dev/shm/sonde-e2e-chrome.XXXXXX)
	"$SONDE" export -i r --format=chrome -o "$shm" 2>err.txt; same "a file on tmpfs" "$shm"
	rm -f "$shm"
else
	skip "a file on tmpfs" "/dev/shm is not writable"
fi
if [ -w /dev/full ]; then
	"$SONDE" export -i r --format=chrome -o /dev/full >out.txt 2>err.txt; rc=$?
	[ $rc -eq 2 ] && grep -q "write error (No space left on device)" err.txt && ok "a full device: exit 2, says so" ||
		notok "a full device: exit 2, says so" "exit $rc: $(head -c 300 err.txt)"
fi

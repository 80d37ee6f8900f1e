# Two static functions named helper in two files (tests/progs/twins_*.c): the
# JSON tells them apart (file, line, address), NAME@FILE and 0xADDR choose one
# in callers-callees, a bare ambiguous name is a usage error listing both.
# Expected counts come from the program's own output; addresses from nm.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O1 -g "$PROGS/twins_a.c" "$PROGS/twins_b.c" -o twins || { notok build "sonde-cc failed"; exit 1; }
./twins 9 14 > plain.out
"$SONDE" record -- ./twins 9 14 > out.txt 2> rec.err || notok record "$(head -c 300 rec.err)"
check "program output unchanged" cmp -s plain.out out.txt
na=$(awk '$1 == "helper@twins_a.c" {print $2}' plain.out)
nb=$(awk '$1 == "helper@twins_b.c" {print $2}' plain.out)
# nm lists both local symbols; the debug info (addr2line) says which file each is in.
addr_in() {
	nm twins | awk '$3 == "helper" {print $1}' | while read -r a; do
		addr2line -e twins "0x$a" | grep -q "/$1:" && echo "0x$a"
	done | head -1
}
addr_a=$(addr_in twins_a.c); addr_b=$(addr_in twins_b.c)
export NA=$na NB=$nb ADDR_A=$addr_a ADDR_B=$addr_b
python3 - <<'PY' || notok "JSON checks" "python exited with an error (see above)"
import sys, os, subprocess; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
na, nb = int(os.environ["NA"]), int(os.environ["NB"])
fns = sonde_json("report")["functions"]
h = {os.path.basename(f["file"] or ""): f for f in fns if f["name"] == "helper"}
say(set(h) == {"twins_a.c", "twins_b.c"}, "report JSON: two helpers, each with its file", str(list(h)))
if set(h) == {"twins_a.c", "twins_b.c"}:
    say(h["twins_a.c"]["calls"] == na and h["twins_b.c"]["calls"] == nb,
        f"report JSON: helper@twins_a.c {na} calls, helper@twins_b.c {nb}", str(h))
    say(int(h["twins_a.c"]["address"], 16) == int(os.environ["ADDR_A"], 16) and
        int(h["twins_b.c"]["address"], 16) == int(os.environ["ADDR_B"], 16),
        "report JSON: addresses are nm's", f"{h['twins_a.c']['address']} {h['twins_b.c']['address']}")
for sel, n, caller in [("helper@twins_a.c", na, "run_a"), ("helper@twins_b.c", nb, "run_b"),
                       ("helper@progs/twins_b.c", nb, "run_b"),
                       (os.environ["ADDR_A"], na, "run_a"), (os.environ["ADDR_B"], nb, "run_b")]:
    try:
        cc = callers_callees(sel)
        f = cc["function"]
        ok = f["calls"] == n and [c["name"] for c in cc["callers"]] == [caller] \
             and cc["callers"][0]["file"].endswith("/twins_" + caller[-1] + ".c") and cc["callers"][0]["line"] > 0
        say(ok, f"callers-callees {sel}: {n} calls from {caller}", str(cc))
    except RuntimeError as e:
        say(False, f"callers-callees {sel}", str(e))
done()
PY
"$SONDE" callers-callees helper > amb.out 2> amb.err
rc=$?
if [ $rc -eq 1 ] && grep -q "^sonde: error: 'helper' is ambiguous (2 functions match)" amb.err &&
   grep -q "helper@twins_a.c" amb.err && grep -q "helper@twins_b.c" amb.err; then
	ok "bare ambiguous name: exit 1, both candidates listed as NAME@FILE"
else
	notok "bare ambiguous name" "exit $rc: $(head -c 400 amb.err)"
fi
"$SONDE" callers-callees helper@nosuch.c > none.out 2> none.err
rc=$?
if [ $rc -eq 1 ] && grep -q "^sonde: error: no function 'helper@nosuch.c'" none.err; then
	ok "NAME@FILE with no such file: exit 1"
else
	notok "NAME@FILE with no such file" "exit $rc: $(head -c 300 none.err)"
fi

# A multi-threaded Debian binary that was not rebuilt: pigz -p 2 under
# `sonde record --locks` writes byte-identical output, and its locks show up.
. "$ROOT/tests/lib.sh"
PIGZ=$(command -v pigz || true)
[ -n "$PIGZ" ] || { skip pigz "pigz is not installed (apt-get install pigz)"; exit 0; }
seq 1 3000000 >in.txt
"$PIGZ" -p 2 -c in.txt >plain.gz || { notok "plain pigz" "failed"; exit 1; }
timeout 120 "$SONDE" record --locks -o rec -- "$PIGZ" -p 2 -c in.txt >sonde.gz 2>rec.err
check "pigz under sonde exits 0" test $? -eq 0
check "pigz output byte-identical" cmp -s plain.gz sonde.gz
"$SONDE" locks -i rec --format=json >locks.json 2>locks.err || { notok "sonde locks" "$(cat locks.err)"; exit 0; }
"$SONDE" locks -i rec >locks.txt 2>&1
python3 - locks.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
locks = d["locks"]
acq = sum(l["acquisitions"] for l in locks)
def say(ok, name, why=""):
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else f": {why}"))
say(len(locks) >= 2 and acq > 100, "pigz locks reported", f"{len(locks)} locks, {acq} acquisitions")
say(any(l["kind"] in ("mutex", "cond") for l in locks), "pigz mutexes / condition variables seen", str({l["kind"] for l in locks}))
say(d["lost_events"] == 0, "no lost events", str(d["lost_events"]))
say(all(l["name"] for l in locks), "every lock has a name", str([l["name"] for l in locks]))
PY

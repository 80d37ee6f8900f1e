# Thread names set in the three ways a program can (tests/progs/thread_names.c:
# pthread_setname_np on itself, prctl(PR_SET_NAME), pthread_setname_np from
# another thread): each recorded thread carries the name the program gave it,
# in info and in the Chrome export's thread names.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O1 -g -pthread -I"$PROGS" "$PROGS/thread_names.c" -o thread_names || { notok build "sonde-cc failed"; exit 1; }
"$SONDE" record -o p.data -- ./thread_names >out.txt 2>err.txt || notok "record" "$(cat err.txt)"
"$SONDE" record --trace -o t.data -- ./thread_names >/dev/null 2>err.txt || notok "record --trace" "$(cat err.txt)"
"$SONDE" info -i p.data --format=json >p.json && "$SONDE" info -i t.data --format=json >t.json &&
	"$SONDE" export -i t.data --format=chrome -o t.chrome.json || notok "info / export" "failed"
python3 - <<'PY'
import json
def say(ok, name, why=""):
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else f": {why}"))
want = {l.split()[1] for l in open("out.txt") if l.startswith("thread ")}
for f, what in (("p.json", "profile"), ("t.json", "trace")):
    names = {t["name"] for t in json.load(open(f))["threads"]}
    for n in sorted(want):
        say(n in names, f"{what}: thread '{n}' is named as the program named it", str(sorted(names)))
ev = json.load(open("t.chrome.json"))["traceEvents"]
cn = {e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
say(want <= cn, "chrome export: the three names on their tracks", str(sorted(cn)))
PY

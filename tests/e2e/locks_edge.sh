# Hard cases of the lock wrappers (tests/progs/lock_edge.c): fork inside a
# locked section, locks taken in another library's constructor, a dlopen'd
# library's lock, addresses freed and reused (mutexes and semaphores: a
# semaphore is named by the function that called sem_init), a named
# semaphore through sem_open / sem_close.  No deadlock (the test runs
# under a timeout), no crash, right counts.
. "$ROOT/tests/lib.sh"
CCX=${CC:-cc}
$CCX -O2 -g -shared -fPIC -pthread "$PROGS/lock_ctorlib.c" -o liblock_ctorlib.so &&
$CCX -O2 -g -shared -fPIC -pthread "$PROGS/lock_dl.c" -o lock_dl.so &&
$CCX -O2 -g -pthread "$PROGS/lock_edge.c" -o lock_edge -L. -llock_ctorlib -Wl,-rpath,'$ORIGIN' -ldl ||
	{ notok build "cc failed"; exit 1; }
plain=$(./lock_edge 2>/dev/null)
for mode in aggregates events; do
	opt=--locks; [ $mode = events ] && opt=--locks=events
	out=$(timeout 60 "$SONDE" record $opt -o rec.$mode -- ./lock_edge 2>prog.$mode.err)
	rc=$?
	check "$mode: no deadlock, no crash (exit $rc)" test $rc -eq 0
	check "$mode: program output unchanged" test "$out" = "$plain"
	"$SONDE" locks -i rec.$mode --per-lock --format=json >locks.$mode.json 2>locks.$mode.err ||
		{ notok "$mode: sonde locks --per-lock" "$(cat locks.$mode.err)"; continue; }
	"$SONDE" locks -i rec.$mode --format=json >grouped.$mode.json 2>grouped.$mode.err ||
		{ notok "$mode: sonde locks" "$(cat grouped.$mode.err)"; continue; }
	# By default the locks made at one site are one row (as mutrace groups them).
	python3 - "$mode" grouped.$mode.json <<'PY' || notok "$mode: grouped JSON checks" "python failed"
import json, sys
mode, d = sys.argv[1], json.load(open(sys.argv[2]))
def say(ok, name, why=""):
    print(("ok - " if ok else "not ok - ") + f"{mode}: {name}" + ("" if ok else f": {why}"))
def group(prefix): return [(l["locks"], l["acquisitions"], l["releases"]) for l in d["locks"] if l["name"].startswith(prefix)]
say(group("make_lock (lock_edge.c:") == [(3, 60, 60)], "grouped: the 3 mutexes of make_lock are one row, 10+20+30 acquisitions",
    str(group("make_lock")))
say(group("make_sem (lock_edge.c:") == [(2, 12, 12)], "grouped: the 2 semaphores of make_sem are one row, 4+8 waits",
    str(group("make_sem")))
say(all(l["locks"] == 1 for l in d["locks"] if l["named_by_symbol"]), "grouped: locks named by a symbol stay alone",
    str([(l["name"], l["locks"]) for l in d["locks"] if l["named_by_symbol"]]))
PY
	python3 - "$mode" locks.$mode.json prog.$mode.err <<'PY'
import json, re, sys
mode, d, err = sys.argv[1], json.load(open(sys.argv[2])), open(sys.argv[3]).read()
reused = "reused=1" in err
static_reused = "static_reused=1" in err
sem_reused = "sem_reused=1" in err
sem_open = "sem_open=1" in err
def say(ok, name, why=""):
    print(("ok - " if ok else "not ok - ") + f"{mode}: {name}" + ("" if ok else f": {why}"))
locks = d["locks"]
def named(n): return [l for l in locks if l["name"] == n]
def starting(p): return sorted((l for l in locks if l["name"].startswith(p)), key=lambda l: l["generation"])
fl = sorted(named("fork_lock"), key=lambda l: l["acquisitions"])
say(len(fl) == 2 and len({l["pid"] for l in fl}) == 2, "fork_lock seen in parent and child", str(fl))
if len(fl) == 2:
    child, parent = fl
    say(parent["acquisitions"] == 1001 and parent["releases"] == 1001, "parent: 1001 acquisitions and releases",
        f"{parent['acquisitions']} / {parent['releases']}")
    say(child["acquisitions"] == 3 and child["releases"] == 4 and child["unmatched_releases"] == 0,
        "child: held across fork, 3 acquisitions, 4 releases, none unmatched", str(child))
ll = named("lib_lock")
say(len(ll) == 1 and ll[0]["acquisitions"] == 10, "lock in another library's constructor: 10", str(ll))
lm = starting("lib_make (lock_ctorlib.c:")
say(len(lm) == 1 and lm[0]["acquisitions"] == 3, "heap lock made in the library's constructor: 3", str(lm))
dl = named("dl_lock")
say(len(dl) == 1 and dl[0]["acquisitions"] == 7 and dl[0]["named_by_symbol"], "dlopen'd library's lock by symbol: 7",
    str([l["name"] for l in locks]))
mk = starting("make_lock (lock_edge.c:")
say([l["acquisitions"] for l in mk] == [10, 20, 30], "reused address with init: 10, 20, 30", str(mk))
if reused:
    say([l["generation"] for l in mk] == [0, 1, 2], "generations 0, 1, 2", str([l["generation"] for l in mk]))
st = starting("use_static_heap (lock_edge.c:")
say([l["acquisitions"] for l in st] == [5, 6], "reused address with a static initializer: 5, 6", str(st))
if static_reused and len(st) == 2:
    say(st[1]["generation"] == st[0]["generation"] + 1, "a new generation after destroy", str(st))
sm = starting("make_sem (lock_edge.c:")
say([(l["kind"], l["acquisitions"], l["releases"]) for l in sm] == [("semaphore", 4, 4), ("semaphore", 8, 8)],
    "heap semaphores named by their sem_init function, a new lock per sem_init: 4, 8", str(sm))
if sem_reused and len(sm) == 2:
    # (the address may have held the mutexes above first: generations count every reuse)
    say(sm[1]["generation"] == sm[0]["generation"] + 1, "semaphore at a reused address: the next generation",
        str([l["generation"] for l in sm]))
if sem_open:
    ns = [l for l in locks if l["kind"] == "semaphore" and l["name"].startswith("main (lock_edge.c:")]
    say(len(ns) == 1 and ns[0]["acquisitions"] == 3, "named semaphore (sem_open): named by first use, 3 waits", str(ns))
say(d["lost_events"] == 0 and d["unmatched_unlocks"] == 0, "no loss, no unmatched unlock", str(d["lost_events"]))
if mode == "events":
    ev = d["events"]
    say(ev["compared"] > 0 and ev["mismatched"] == 0 and not ev["error"], "events agree with the aggregates", str(ev))
PY
done

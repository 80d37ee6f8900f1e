# A sequence gap in a thread's lock events cuts the holds open before it.  A
# release after the gap whose hold time reaches back to the hold's start
# closes it (the same hold, measured by the runtime); any other release means
# the open hold ended among the lost events: it ends at the last time known
# before the gap ("closed at lost events"), never across it.  The recordings
# are made here (tests/fuzz/craft.py's record writers), so the expected
# slices are the test's own arithmetic (1 tick = 1 ns, start 0):
#  gap.data:  chunk 0 (seq 0) at 1000: acquire L            -> hold [1000, 1000], cut
#             chunk 2 (seq 2, seq 1 lost) at 50000: release L
#             held 500 (taken at 49500, among the lost)     -> hold [49500, 50000]
#             +100: acquire L, +100: release L held 100     -> hold [50100, 50200]
#  same.data: as gap.data, but the release at 50000 says
#             held 49000: the hold taken at 1000            -> hold [1000, 50000]
#  open.data: chunk 0 only acquires; chunk 2 (after the gap) has no release
#             of L: the hold ends at the gap, not at the thread's end
. "$ROOT/tests/lib.sh"
python3 - "$ROOT/tests/fuzz" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[1])
import craft as c
def lock(dt, op, aux):
    return c.varint(dt << 2 | 3) + bytes([1]) + c.varint(1) + bytes([op]) + c.varint(aux)
os.makedirs("gap.data", exist_ok=True)
prof = c.profile(*c.base(mode=14, extra=[c.lkrec(2, 1, c.lk_lock(1)), c.lkrec(3, 0, b""),
                                         c.lk_stats(0, [c.lk_stat(1, acq=2)]), c.lk_summary(1)]))
def write(d, *chunks):
    os.makedirs(d, exist_ok=True)
    open(f"{d}/profile.sonde", "wb").write(prof)
    open(f"{d}/events.sonde", "wb").write(c.events(*chunks))
first = c.chunk(0, 0, 1000, lock(0, 0, 0))
write("gap.data", first, c.chunk(0, 2, 50000, lock(0, 2, 500) + lock(100, 0, 0) + lock(100, 2, 100)))
write("same.data", first, c.chunk(0, 2, 50000, lock(0, 2, 49000) + lock(100, 0, 0) + lock(100, 2, 100)))
write("open.data", first, c.chunk(0, 2, 50000, c.enter(0, 1) + c.exit_(100)))
PY
for d in gap same open; do
	"$SONDE" export -i $d.data --format=chrome -o $d.json 2>err.txt || notok "$d: export --format=chrome" "$(cat err.txt)"
done
python3 - <<'PY'
import json
def say(ok, name, why=""):
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else f": {why}"))
def holds(f):
    ev = json.load(open(f))["traceEvents"]
    return sorted((round(e["ts"] * 1000), round(e["dur"] * 1000), e.get("args", {}).get("end"))
                  for e in ev if e.get("ph") == "X" and e.get("cat") == "lock" and not e["name"].startswith("wait"))
h = holds("gap.json")
say(h == [(1000, 0, "closed at lost events"), (49500, 500, None), (50100, 100, None)],
    "another hold's release after the gap: the cut hold ends before the gap, marked; the others whole", str(h))
h = holds("same.json")
say(h == [(1000, 49000, None), (50100, 100, None)], "the same hold's release after the gap closes it: [1000, 50000]", str(h))
h = holds("open.json")
say(h == [(1000, 0, "closed at lost events")], "no release after the gap: the hold ends at the gap, not at the thread's end", str(h))
PY
"$SONDE" export -i gap.data --format=perfetto -o gap.pftrace 2>err.txt && [ -s gap.pftrace ] && ok "perfetto export of the same recording" ||
	notok "perfetto export of the same recording" "$(cat err.txt)"

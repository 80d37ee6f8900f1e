# events.sonde with zstd chunks (record --compress=zstd, the default) and
# without (--compress=none): the same events either way, as the program
# counted them; the compressed file is smaller; a damaged compressed chunk is
# an error naming the byte, never a crash or a wrong count.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O2 -g -I"$PROGS" "$PROGS/flight.c" -o flight || { notok build "sonde-cc failed"; exit 1; }
./flight 300000 5000 >plain.out
"$SONDE" record --trace -o z.data -- ./flight 300000 5000 >z.out 2>z.err || notok "record --trace (default)" "$(tail -2 z.err)"
"$SONDE" record --trace --compress=none -o n.data -- ./flight 300000 5000 >n.out 2>n.err || notok "record --compress=none" "$(tail -2 n.err)"
cmp -s plain.out z.out && cmp -s plain.out n.out && ok "the program's output is unchanged" || notok "the program's output is unchanged" "differs"
for d in z n; do
	"$SONDE" replay -i $d.data --format=json >$d.json 2>$d.rerr || notok "replay $d.data" "$(cat $d.rerr)"
done
python3 - <<'PY'
import json
def say(ok, name, why=""):
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else f": {why}"))
want = {l.split()[0]: int(l.split()[1]) for l in open("plain.out")}
for d, what in (("z", "zstd"), ("n", "none")):
    n = {}
    for c in json.load(open(f"{d}.json"))["calls"]:
        n[c["name"]] = n.get(c["name"], 0) + 1
    say(all(n.get(k) == v for k, v in want.items()), f"--compress={what}: every call the program counted is in the timeline", f"{n} vs {want}")
PY
zs=$(stat -c %s z.data/events.sonde); ns=$(stat -c %s n.data/events.sonde)
[ "$zs" -lt "$ns" ] && ok "zstd: events.sonde smaller ($zs vs $ns bytes)" || notok "zstd: events.sonde smaller" "$zs vs $ns bytes"
python3 - z.data/events.sonde <<'PY' && ok "the recording holds zstd chunks (record type 8)" || notok "the recording holds zstd chunks (record type 8)" "none found"
import struct, sys
b = open(sys.argv[1], "rb").read()
off, found = 16, 0
while off + 16 <= len(b):
    t, crc, n = struct.unpack_from("<IIQ", b, off)
    found += t == 8
    off += 16 + n
sys.exit(0 if found else 1)
PY
# damage inside a zstd frame, checksum mended: the reader must say so
cp -r z.data bad.data
python3 - bad.data/events.sonde <<'PY'
import struct, sys, zlib
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
off = 16
while off + 16 <= len(b):
    t, crc, n = struct.unpack_from("<IIQ", b, off)
    if t == 8:
        for k in range(off + 16 + 32 + 4, off + 16 + n, 7):   # the frame, after its magic number
            b[k] ^= 0x5a
        struct.pack_into("<I", b, off + 4, zlib.crc32(bytes(b[off + 16:off + 16 + n])) & 0xFFFFFFFF)
        break
    off += 16 + n
open(p, "wb").write(bytes(b))
PY
"$SONDE" replay -i bad.data --format=json >/dev/null 2>bad.err; rc=$?
[ $rc -eq 2 ] && grep -q "damaged chunk at byte" bad.err && ok "a damaged zstd frame: exit 2, 'damaged chunk at byte N'" ||
	notok "a damaged zstd frame: exit 2, 'damaged chunk at byte N'" "exit $rc $(cat bad.err)"
"$SONDE" record --trace --compress=lz4 -o x.data -- ./flight 1 1 >/dev/null 2>err.txt; rc=$?
[ $rc -eq 1 ] && grep -q "expected zstd or none" err.txt && ok "--compress=lz4: usage error" || notok "--compress=lz4: usage error" "exit $rc $(cat err.txt)"

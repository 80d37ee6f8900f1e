# The format version of a recording (docs/FORMAT.md, "Versioning"): a real
# recording whose files' version field (bytes 8..11 of each file header) is
# patched to an older and to a newer version is refused by every reading
# command with one clear line and exit 2; the patch put back, the same
# commands read it again.  The version this sonde writes is taken from
# src/common/format.h, the patching is done by python.
. "$ROOT/tests/lib.sh"
# expect_err NAME CODE PATTERN COMMAND...: exit status CODE, one "sonde: error:" line matching PATTERN
expect_err() {
	local name=$1 code=$2 pat=$3; shift 3
	"$@" >out.txt 2>err.txt
	local rc=$?
	if [ $rc -ne "$code" ]; then notok "$name" "exit $rc, expected $code ($(head -c 300 err.txt))"; return; fi
	if ! grep -q "^sonde: error: .*$pat" err.txt; then notok "$name" "message: $(head -c 300 err.txt)"; return; fi
	if [ "$(grep -c . err.txt)" -ne 1 ]; then notok "$name" "more than one line: $(head -c 300 err.txt)"; return; fi
	ok "$name"
}
cur=$(sed -n 's/^#define SONDE_DATA_VERSION \([0-9]*\)u$/\1/p' "$ROOT/src/common/format.h")
[ -n "$cur" ] || { notok "format version" "SONDE_DATA_VERSION not found in format.h"; exit 0; }
old=$((cur - 1)) new=$((cur + 1))

"$SONDE_CC_BIN" -O2 -g -pthread "$PROGS/lock_basic.c" -o lock_basic || { notok build "sonde-cc failed"; exit 1; }
"$SONDE" record --locks --trace -o rec -- ./lock_basic >/dev/null 2>rec.err || { notok record "$(tail -3 rec.err)"; exit 0; }
[ -s rec/events.sonde ] || { notok record "no events.sonde"; exit 0; }

# set_version DIR V FILE...: the version field of each FILE of DIR set to V
set_version() {
	local d=$1 v=$2; shift 2
	for f in "$@"; do
		python3 - "$d/$f" "$v" <<'PY'
import struct, sys
path, v = sys.argv[1], int(sys.argv[2])
b = bytearray(open(path, "rb").read())
assert b[:8] == b"SONDEDAT", "not a sonde file"
struct.pack_into("<I", b, 8, v)
open(path, "wb").write(bytes(b))
PY
	done
}
check "recorded files carry version $cur" python3 -c "
import struct, sys
for f in ('rec/profile.sonde', 'rec/events.sonde'):
    b = open(f, 'rb').read(16)
    assert b[:8] == b'SONDEDAT' and struct.unpack_from('<I', b, 8)[0] == $cur, f
"

commands=("report" "info" "locks" "export --format=chrome -o out.json")
for v in $old $new; do
	if [ "$v" -gt "$cur" ]; then
		pat="profile.sonde: format version $v is newer than this sonde reads ($cur)"
	else
		pat="profile.sonde: written by an older sonde (format version $v, this sonde reads $cur); record it again"
	fi
	rm -rf v$v; cp -r rec v$v
	set_version v$v "$v" profile.sonde events.sonde
	for c in "${commands[@]}"; do
		# shellcheck disable=SC2086
		expect_err "version $v: ${c%% *} refuses it" 2 "$pat" "$SONDE" $c -i v$v
	done
done

# events.sonde alone of another version: the timeline export refuses it too
rm -rf ev; cp -r rec ev
set_version ev "$new" events.sonde
expect_err "events.sonde of version $new: export refuses it" 2 \
	"events.sonde: format version $new is newer than this sonde reads ($cur)" \
	"$SONDE" export --format=chrome -o out.json -i ev

# put back: the same bytes are read again
set_version v$new "$cur" profile.sonde events.sonde
for c in "${commands[@]}"; do
	# shellcheck disable=SC2086
	check "version $cur again: ${c%% *} reads it" "$SONDE" $c -i v$new
done
exit 0

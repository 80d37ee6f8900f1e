#!/usr/bin/env python3
"""pack.py — the input format of tests/fuzz/fuzz_reader.c.

  pack.py pack DIR OUT [FLAGS [PARAM]]   a recording directory -> one fuzz input
  pack.py unpack IN DIR                  one fuzz input -> a recording directory
                                         (CRCs fixed as the harness fixes them)

Input: byte 0 flags, byte 1 param, then sections: u8 file (0 profile.sonde,
1 events.sonde), u32 little-endian length, the bytes (see fuzz_reader.c).
FLAGS defaults to 3 (fix both files' CRCs: a no-op on a sound recording, and
what lets mutations reach the record contents).
"""
import os
import struct
import sys
import zlib

FILES = ["profile.sonde", "events.sonde"]
FIX = [1, 2]


def pack(d, out, flags=3, param=0):
    b = bytearray([flags & 255, param & 255])
    for i, name in enumerate(FILES):
        p = os.path.join(d, name)
        if os.path.exists(p):
            data = open(p, "rb").read()
            b += struct.pack("<BI", i, len(data)) + data
    open(out, "wb").write(bytes(b))


def fix_crcs(b):
    b = bytearray(b)
    off = 16
    while off + 16 <= len(b):
        typ, crc, ln = struct.unpack_from("<IIQ", b, off)
        if ln > len(b) - off - 16:
            break
        struct.pack_into("<I", b, off + 4, zlib.crc32(bytes(b[off + 16:off + 16 + ln])) & 0xFFFFFFFF)
        off += 16 + ln
    return bytes(b)


def unpack(src, d):
    b = open(src, "rb").read()
    os.makedirs(d, exist_ok=True)
    for name in FILES:
        if os.path.exists(os.path.join(d, name)):
            os.unlink(os.path.join(d, name))
    if len(b) < 2:
        return
    flags, off, seen = b[0], 2, set()
    while off < len(b):
        which = b[off]
        off += 1
        raw = b[off:off + 4]
        off += len(raw)
        ln = int.from_bytes(raw, "little")
        ln = min(ln, len(b) - off)
        if which < 2 and which not in seen:
            seen.add(which)
            data = b[off:off + ln]
            if flags & FIX[which]:
                data = fix_crcs(data)
            open(os.path.join(d, FILES[which]), "wb").write(data)
        off += ln


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "pack":
        pack(sys.argv[2], sys.argv[3], *(int(x, 0) for x in sys.argv[4:6]))
    elif len(sys.argv) == 4 and sys.argv[1] == "unpack":
        unpack(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)

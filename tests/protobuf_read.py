"""protobuf_read.py — a small reader of the protobuf wire format, for the
tests that decode sonde's Perfetto exports (no protobuf library needed)."""


def varint(b, i):
    """Decode a varint at b[i:]; return (value, next index)."""
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7f) << s
        s += 7
        if not c & 0x80:
            return r, i


def fields(b):
    """All (field number, value) pairs of one message: ints for varints,
    bytes for length-delimited and fixed-size fields.  Raises ValueError on
    a malformed message."""
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
            if i > len(b):
                raise ValueError("length past the end")
        elif wt == 1:
            v = b[i:i + 8]
            i += 8
        elif wt == 5:
            v = b[i:i + 4]
            i += 4
        else:
            raise ValueError(f"wire type {wt}")
        out.append((f, v))
    return out

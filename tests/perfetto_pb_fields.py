"""perfetto_pb_fields.py — what tests/perfetto_pb_decode.py and
bench/perfetto_verify.py both ask of a decoded protobuf message."""


def count_unknown(m):
    """The unknown fields in message m and every message inside it: fields
    the subset's .proto does not name (0 when the library cannot say)."""
    try:
        n = len(m.UnknownFields())
    except (AttributeError, NotImplementedError):
        n = 0
    for fd, v in m.ListFields():
        if fd.type == fd.TYPE_MESSAGE:
            for x in (v if fd.label == fd.LABEL_REPEATED else [v]):
                n += count_unknown(x)
    return n

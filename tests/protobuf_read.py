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


def _s64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def perfetto_read(path):
    """Decode a Perfetto trace file written by `sonde export --format=perfetto`.

    Follows the trace's packet sequences (trusted_packet_sequence_id, 10) as
    trace_processor does: per sequence, interned event names, TracePacketDefaults
    (59: timestamp clock, TrackEventDefaults.track_uuid) and incremental clocks
    declared by a ClockSnapshot (6; clock ids 64-127 are the sequence's own,
    is_incremental: each timestamp is a delta to the previous one of that clock).
    Timestamps are returned on the snapshot's other clock (BOOTTIME).

    Returns a dict:
      framing     True if every top-level field is Trace.packet (1)
      packets     number of packets
      first_flags sequence_flags (13) of the first packet that has them
      cleared     sequences whose first packet clears the incremental state
      sequences   number of sequences
      tracks      {uuid: {"parent", "name", "pid", "tid", "thread_name"}} (keys present when set)
      events      [(track uuid, type, name, ts, annotations)] in file order; name is the
                  interned event name (iid, field 10) or the literal name (field 23)
      slices      [(track uuid, name, begin ts, end ts)]: BEGIN/END paired per track
      unclosed    BEGINs left without an END; unopened: ENDs without a BEGIN
    Raises ValueError when the file does not decode."""
    import struct
    top = fields(open(path, "rb").read())
    out = {"framing": all(f == 1 for f, _ in top), "packets": 0, "first_flags": None, "cleared": set(),
           "sequences": 0, "tracks": {}, "events": [], "slices": [], "unclosed": 0, "unopened": 0}
    seqs, open_ = {}, {}
    for f0, p in top:
        if f0 != 1:
            continue
        out["packets"] += 1
        pf = fields(p)
        d0 = dict(pf)
        sid = d0.get(10, 0)
        if sid not in seqs:
            seqs[sid] = {"interned": {}, "clock": None, "track": None, "clocks": {}}
            if d0.get(13, 0) & 1:
                out["cleared"].add(sid)
        st = seqs[sid]
        if d0.get(13, 0) & 1:
            st.update(interned={}, clock=None, track=None, clocks={})
        for f, v in pf:
            if f == 13 and out["first_flags"] is None:
                out["first_flags"] = v
            elif f == 6:  # ClockSnapshot: [value, incremental, base on the other clock, value at the snapshot]
                cl = [dict(fields(c)) for ff, c in fields(v) if ff == 1]
                base = next((c.get(2, 0) for c in cl if c.get(1, 0) < 64), 0)
                for c in cl:
                    if c.get(1, 0) >= 64:
                        st["clocks"][c[1]] = [c.get(2, 0), bool(c.get(3, 0)), base, c.get(2, 0)]
            elif f == 59:
                dd = dict(fields(v))
                st["clock"] = dd.get(58)
                if 11 in dd:
                    st["track"] = dict(fields(dd[11])).get(11)
            elif f == 12:
                for ff, vv in fields(v):
                    if ff == 2:
                        en = dict(fields(vv))
                        st["interned"][en[1]] = en[2].decode()
            elif f == 60:
                td = dict(fields(v))
                t = out["tracks"].setdefault(td[1], {})
                if 5 in td:
                    t["parent"] = td[5]
                if 2 in td:
                    t["name"] = td[2].decode()
                if 3 in td:
                    t["pid"] = dict(fields(td[3])).get(1)
                if 4 in td:
                    th = dict(fields(td[4]))
                    t["tid"] = th.get(2)
                    t["thread_name"] = th.get(5, b"").decode()
        ts = d0.get(8)
        clock = d0.get(58, st["clock"])
        if ts is not None and clock is not None and clock >= 64:
            c = st["clocks"].get(clock)
            if c is None:
                raise ValueError(f"sequence {sid}: clock {clock} used before its ClockSnapshot")
            if c[1]:
                c[0] += ts
                ts = c[0]
            ts = c[2] + ts - c[3]
        for f, v in pf:  # after the interned data of the same packet
            if f != 11:
                continue
            te = fields(v)
            d = dict(te)
            name = st["interned"].get(d[10], "?") if 10 in d else d.get(23, b"").decode()
            ann = {}
            for ff, vv in te:
                if ff == 4:
                    da = dict(fields(vv))
                    key = da.get(10, b"").decode()
                    if 4 in da:
                        ann[key] = _s64(da[4])
                    elif 5 in da:
                        ann[key] = struct.unpack("<d", da[5])[0]
                    elif 6 in da:
                        ann[key] = da[6].decode()
            uuid, typ = d.get(11, st["track"]), d.get(9)
            out["events"].append((uuid, typ, name, ts, ann))
            if typ == 1:
                open_.setdefault(uuid, []).append((name, ts))
            elif typ == 2:
                if open_.get(uuid):
                    n, b = open_[uuid].pop()
                    out["slices"].append((uuid, n, b, ts))
                else:
                    out["unopened"] += 1
    out["unclosed"] = sum(len(v) for v in open_.values())
    out["sequences"] = len(seqs)
    return out

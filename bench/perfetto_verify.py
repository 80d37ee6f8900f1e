"""perfetto_verify.py — read a Perfetto trace of any size back with the
protobuf library (python3-protobuf, its C++ implementation) and the module
protoc generates from tests/proto/perfetto_trace_subset.proto, under the
format's rules as tests/perfetto_pb_decode.py applies them (per trusted
packet sequence: its incremental state, interned names, defaults and
incremental clock), but streaming and counting instead of listing every
slice: tests/perfetto_pb_decode.py holds the whole Trace in memory, which a
100M-event trace does not fit in.

The file is cut into pieces of about 8 MB at packet boundaries (the Trace's
field 1, read with the library's own varint decoder) and each piece parsed
as a Trace: concatenated Trace messages are one Trace, so every byte goes
through the library.  Checks: every packet has a sequence id, each
sequence's first packet clears its state, every event's clock is declared
and its track is a thread's, every name iid is interned, every END closes a
BEGIN of the same track, no slice ends before it begins, none is left open,
no unknown field (in the first piece; counting them in every packet costs
more than the decoding).

Usage: /usr/bin/python3 bench/perfetto_verify.py PB2_DIR TRACE
Prints one JSON line: packets, slices, sequences, threads, max_depth,
unknown_fields, errors (the first 20), seconds."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from perfetto_pb_fields import count_unknown  # noqa: E402
sys.path.insert(0, sys.argv[1])
import perfetto_trace_subset_pb2 as pb  # noqa: E402
from google.protobuf.internal.decoder import _DecodeVarint  # noqa: E402

t_start = time.monotonic()
data = open(sys.argv[2], "rb").read()
errors, unknown = [], 0
seqs, tracks, open_ = {}, {}, {}
packets = slices = max_depth = 0
BEGIN, END = pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END
CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED


def err(msg):
    if len(errors) < 20:
        errors.append(msg)


pos, first = 0, True
while pos < len(data):
    end = pos
    while end < len(data) and end - pos < (8 << 20):  # packet boundaries up to ~8 MB
        if data[end] != 0x0a:
            err(f"byte {end}: not a Trace.packet field")
            end = len(data)
            break
        n, at = _DecodeVarint(data, end + 1)
        end = at + n
    trace = pb.Trace()
    trace.ParseFromString(data[pos:min(end, len(data))])
    pos = end
    if first:
        unknown += count_unknown(trace)
        first = False
    for p in trace.packet:
        i = packets
        packets += 1
        if not p.HasField("trusted_packet_sequence_id"):
            err(f"packet {i}: no trusted_packet_sequence_id")
        sid = p.trusted_packet_sequence_id
        st = seqs.get(sid)
        if p.sequence_flags & CLEARED or st is None:
            if st is None and not p.sequence_flags & CLEARED:
                err(f"sequence {sid}: first packet does not clear the incremental state")
            st = seqs[sid] = {"names": {}, "defaults": None, "clocks": {}}
        kind = p.WhichOneof("data")
        if p.HasField("trace_packet_defaults"):
            st["defaults"] = p.trace_packet_defaults
        if p.HasField("clock_snapshot"):
            cl = p.clock_snapshot.clocks
            base = [c for c in cl if c.clock_id < 64]
            for c in cl:
                if c.clock_id >= 64:
                    if not base:
                        err(f"sequence {sid}: clock {c.clock_id} not related to a global clock")
                        continue
                    st["clocks"][c.clock_id] = [c.timestamp, c.timestamp, base[0].timestamp,
                                                c.is_incremental, c.unit_multiplier_ns or 1]
        if kind == "track_descriptor":
            tracks[p.track_descriptor.uuid] = p.track_descriptor.HasField("thread")
        if p.HasField("interned_data"):
            for en in p.interned_data.event_names:
                st["names"][en.iid] = en.name
        if kind != "track_event":
            continue
        te = p.track_event
        d = st["defaults"]
        clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else (
            d.timestamp_clock_id if d is not None and d.HasField("timestamp_clock_id") else 6)
        ts = p.timestamp
        if clock >= 64:
            c = st["clocks"].get(clock)
            if c is None:
                err(f"packet {i}: clock {clock} undeclared on sequence {sid}")
                continue
            c[0] = c[0] + ts if c[3] else ts
            ts = c[2] + (c[0] - c[1]) * c[4]
        uuid = te.track_uuid if te.HasField("track_uuid") else (
            d.track_event_defaults.track_uuid if d is not None else None)
        if not tracks.get(uuid):
            err(f"packet {i}: event on track {uuid}, not a thread's track")
            continue
        stack = open_.get(uuid)
        if stack is None:
            stack = open_[uuid] = []
        if te.type == BEGIN:
            if te.HasField("name_iid") and te.name_iid not in st["names"]:
                err(f"packet {i}: name iid {te.name_iid} not interned on sequence {sid}")
            stack.append(ts)
            if len(stack) > max_depth:
                max_depth = len(stack)
        elif te.type == END:
            if not stack:
                err(f"packet {i}: end without a begin")
                continue
            if ts < stack.pop():
                err(f"packet {i}: a slice ends before it begins")
            slices += 1
for uuid, stack in open_.items():
    if stack:
        err(f"track {uuid}: {len(stack)} slices left open")
print(json.dumps({"packets": packets, "slices": slices, "sequences": len(seqs),
                  "threads": sum(1 for v in tracks.values() if v), "max_depth": max_depth,
                  "unknown_fields": unknown, "errors": errors, "seconds": round(time.monotonic() - t_start, 1)}))

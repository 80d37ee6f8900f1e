"""perfetto_pb_decode.py — decode a Perfetto trace with the protobuf library
(python3-protobuf) and the module protoc generated from
tests/proto/perfetto_trace_subset.proto, following the format's rules as
trace_processor does: per trusted packet sequence, its incremental state
(cleared by SEQ_INCREMENTAL_STATE_CLEARED), interned event names,
TracePacketDefaults and clocks; a sequence-scoped incremental clock's
timestamps are deltas to the previous one, converted to the other clock of
the ClockSnapshot that declared it.

Usage: python3 perfetto_pb_decode.py PB2_DIR TRACE > out.json
Prints {"packets", "sequences", "unknown_fields", "errors": [...],
"threads": {tid: {"name", "slices": [[name, begin_ns, end_ns, depth]],
"tracks": {name: [[name, begin_ns, end_ns, depth, {annotation: value}]]}}}}:
slices in the order they end, depth 1 = outermost; "tracks" holds the
slices of the thread's child tracks (a TrackDescriptor with parent_uuid the
thread's track and a name: its lock lanes, its state track); "counters" the
values of its counter tracks, {name: [[ns, value]]} (a trace's counted
functions' calls)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfetto_pb_fields import count_unknown  # noqa: E402
sys.path.insert(0, sys.argv[1])
import perfetto_trace_subset_pb2 as pb  # noqa: E402

trace = pb.Trace()
trace.ParseFromString(open(sys.argv[2], "rb").read())
errors = []


unknown = count_unknown(trace)
seqs, tracks, open_, threads = {}, {}, {}, {}
for i, p in enumerate(trace.packet):
    sid = p.trusted_packet_sequence_id
    if not p.HasField("trusted_packet_sequence_id"):
        errors.append(f"packet {i}: no trusted_packet_sequence_id")
    st = seqs.get(sid)
    if p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED or st is None:
        if st is None and not p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            errors.append(f"sequence {sid}: first packet does not clear the incremental state")
        st = seqs[sid] = {"names": {}, "defaults": None, "clocks": {}}
    if p.HasField("trace_packet_defaults"):
        st["defaults"] = p.trace_packet_defaults
    if p.HasField("clock_snapshot"):
        cl = p.clock_snapshot.clocks
        base = [c for c in cl if c.clock_id < 64]
        for c in cl:
            if c.clock_id >= 64:
                if not base:
                    errors.append(f"sequence {sid}: clock {c.clock_id} not related to a global clock")
                    continue
                st["clocks"][c.clock_id] = {"value": c.timestamp, "at": c.timestamp, "base": base[0].timestamp,
                                            "incremental": c.is_incremental, "unit": c.unit_multiplier_ns or 1}
    for en in p.interned_data.event_names:
        st["names"][en.iid] = en.name
    if p.HasField("track_descriptor"):
        td = p.track_descriptor
        tracks[td.uuid] = td
    if p.WhichOneof("data") != "track_event":
        continue
    te = p.track_event
    clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else (
        st["defaults"].timestamp_clock_id if st["defaults"] and st["defaults"].HasField("timestamp_clock_id") else 6)
    ts = p.timestamp
    if clock >= 64:
        c = st["clocks"].get(clock)
        if c is None:
            errors.append(f"packet {i}: clock {clock} undeclared on sequence {sid}")
            continue
        c["value"] = c["value"] + ts if c["incremental"] else ts
        ts = c["base"] + (c["value"] - c["at"]) * c["unit"]
    uuid = te.track_uuid if te.HasField("track_uuid") else (
        st["defaults"].track_event_defaults.track_uuid if st["defaults"] else None)
    child = None
    if uuid in tracks and not tracks[uuid].HasField("thread") and tracks[uuid].HasField("parent_uuid") and \
            tracks.get(tracks[uuid].parent_uuid) is not None and tracks[tracks[uuid].parent_uuid].HasField("thread"):
        child = tracks[uuid].name
        th = tracks[tracks[uuid].parent_uuid].thread
    elif uuid not in tracks or not tracks[uuid].HasField("thread"):
        errors.append(f"packet {i}: event on track {uuid}, not a thread's track or a thread's child track")
        continue
    else:
        th = tracks[uuid].thread
    t = threads.setdefault(th.tid, {"name": th.thread_name, "slices": []})
    stack = open_.setdefault(uuid, [])
    if te.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
        if te.HasField("name_iid"):
            if te.name_iid not in st["names"]:
                errors.append(f"packet {i}: name iid {te.name_iid} not interned on sequence {sid}")
            name = st["names"].get(te.name_iid, "?")
        else:
            name = te.name
        ann = {}
        for da in te.debug_annotations:
            ann[da.name] = da.int_value if da.HasField("int_value") else da.string_value
        stack.append((name, ts, ann))
    elif te.type == pb.TrackEvent.TYPE_COUNTER:
        if child is None or not tracks[uuid].HasField("counter"):
            errors.append(f"packet {i}: a counter value on track {uuid}, not a counter track of a thread")
            continue
        t.setdefault("counters", {}).setdefault(child, []).append([ts, te.counter_value])
    elif te.type == pb.TrackEvent.TYPE_SLICE_END:
        if not stack:
            errors.append(f"packet {i}: end without a begin")
            continue
        name, b, ann = stack.pop()
        if ts < b:
            errors.append(f"packet {i}: slice {name} ends before it begins")
        if child is None:
            t["slices"].append([name, b, ts, len(stack) + 1])
        else:
            t.setdefault("tracks", {}).setdefault(child, []).append([name, b, ts, len(stack) + 1, ann])
for uuid, stack in open_.items():
    if stack:
        errors.append(f"track {uuid}: {len(stack)} slices left open")
json.dump({"packets": len(trace.packet), "sequences": len(seqs), "unknown_fields": unknown,
           "errors": errors[:20], "threads": {str(k): v for k, v in threads.items()}}, sys.stdout)

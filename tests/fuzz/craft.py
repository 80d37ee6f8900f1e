#!/usr/bin/env python3
"""craft.py OUTDIR — crafted recordings, one directory per known way to break
a reader (the bugs the fuzzing of docs/FUZZING.md found or was told about),
written with valid checksums so that they reach the record contents.
tests/e2e/fuzz_reader.sh runs every reading command on each; they must end
with exit status 0 or 2 (with a "sonde: error:" line), in bounded time and
memory.  Each directory is also a seed of the fuzz corpus.

MODULE, when given as a second argument, is the module path written into the
recordings (an existing binary gives real names; default /nonexistent).
"""
import os
import struct
import sys
import zlib

NODE = struct.Struct("<IIIIQQ")  # parent, first_child, next_sibling, func, calls, ticks


def rec(typ, payload):
    return struct.pack("<IIQ", typ, zlib.crc32(payload) & 0xFFFFFFFF, len(payload)) + payload


VERSION = 2  # SONDE_DATA_VERSION (src/common/format.h)


def fhdr(kind):
    return b"SONDEDAT" + struct.pack("<II", VERSION, kind)


def meta(**kw):
    d = {"program": "crafted", "command": "crafted", "ticks_per_ns": "1.000000000", "start_ticks": "0",
         "end_ticks": "1000000", "mode": "1"}
    d.update({k: str(v) for k, v in kw.items()})
    return rec(1, "".join(f"{k}={v}\n" for k, v in d.items()).encode())


def process(index=0, pid=100, exe=b"/nonexistent/crafted", cmdline=b"crafted", cmdline_len=None, end=1000000):
    exe = exe.ljust(512, b"\0")[:512]
    cmd = cmdline.ljust(512, b"\0")[:512]
    n = len(cmdline) if cmdline_len is None else cmdline_len
    return rec(2, struct.pack("<IiiiIIQQ", index, pid, 1, 0, 0, 1, 0, end) + exe + cmd + struct.pack("<II", n, 0))


def thread(index=0, proc=0, tid=100, comm=b"crafted", start=0, end=1000000, nodes=0):
    return rec(3, struct.pack("<IIiI", index, proc, tid, 1) + comm.ljust(16, b"\0")[:16] +
               struct.pack("<QQQQ", start, end, nodes, 0) + b"\0" * 128 + struct.pack("<II", 0, 0))


def module(index=0, nfuncs=4, path=b"/nonexistent/crafted"):
    return rec(4, struct.pack("<IIIIQQ", index, 0, nfuncs, 0, 0, 0) + b"\0" * 20 + struct.pack("<I", 0) +
               path.ljust(512, b"\0")[:512] + b"".join(struct.pack("<Q", 0x1000 + 16 * i) for i in range(nfuncs)))


def cct(slot, nodes):
    return rec(5, struct.pack("<II", slot, len(nodes)) + b"".join(NODE.pack(*n) for n in nodes))


def lkrec(sub, count, items):
    return rec(6, struct.pack("<II", sub, count) + items)


def lk_lock(id_, kind=1, addr=0x5000):
    return struct.pack("<IIIIIIQQQ", id_, 0, 0, kind, 1, 0, addr, 0, 0)


def lk_stat(lock, acq=10, wait=100, hold=1000):
    # struct lkrec_stat, 560 bytes: lock, max_waiters; acquisitions, read, write, contended, tryfail,
    # timeouts, errors, owner_changes, releases, unmatched, cross, cond_reacq, wait, max_wait, hold,
    # max_hold, holds; wait_hist[40], hold_hist[40] (u32); sites[4] (3 x u64)
    head = struct.pack("<II", lock, 1) + struct.pack("<17Q", acq, 0, 0, 1, 0, 0, 0, 0, acq, 0, 0, 0,
                                                      wait, wait, hold, hold, acq)
    return head + b"\0" * 320 + b"\0" * 96


def lk_stats(thread_slot, stats):
    return lkrec(4, len(stats), struct.pack("<II", thread_slot, len(stats)) + b"".join(stats))


def lk_summary(nlocks):
    return lkrec(1, 1, struct.pack("<8Q", nlocks, 0, 0, 0, 0, 0, 0, 0))


def varint(v):
    b = bytearray()
    while v >= 0x80:
        b.append((v & 0x7F) | 0x80)
        v >>= 7
    b.append(v)
    return bytes(b)


def chunk(thread_slot, seq, base, payload, lost=0):
    return rec(7, struct.pack("<IIQQII", 2, len(payload), seq, base, thread_slot, lost) + payload)


def enter(dt, func):
    return varint(dt << 2 | 0) + varint(func)


def exit_(dt):
    return varint(dt << 2 | 1)


def profile(*records):
    return fhdr(1) + b"".join(records) + rec(99, b"")


def events(*records, end=True):
    return fhdr(2) + b"".join(records) + (rec(99, b"") if end else b"")


def base(mode=1, extra=(), **kw):
    return [meta(mode=mode, **kw), process(), module(path=MODULE), thread()] + list(extra)


def cases():
    c = {}
    # 1. siblings that point back at each other: readers looped forever
    c["sibling_cycle"] = {"profile.sonde": profile(*base(extra=[cct(0, [
        (0, 1, 0, 0, 0, 0), (0, 2, 0, 1, 1, 100), (1, 0, 3, 2, 1, 10), (1, 0, 2, 3, 1, 10)])]))}
    # 2. a child list that leads back up the tree: the path walk of profile.c
    #    (path[++d]) wrote past its array
    c["child_cycle"] = {"profile.sonde": profile(*base(extra=[cct(0, [
        (0, 1, 0, 0, 0, 0), (0, 2, 0, 1, 1, 100), (1, 3, 0, 2, 1, 50), (1, 0, 2, 3, 1, 10)])]))}
    # 3. a node in two lists (its parent's and another's)
    c["shared_node"] = {"profile.sonde": profile(*base(extra=[cct(0, [
        (0, 1, 0, 0, 0, 0), (0, 3, 2, 1, 1, 100), (0, 3, 0, 2, 1, 100), (1, 0, 0, 3, 1, 10)])]))}
    # a node no list reaches: counted by the sums, never walked
    c["unreachable_node"] = {"profile.sonde": profile(*base(extra=[cct(0, [
        (0, 1, 0, 0, 0, 0), (0, 0, 0, 1, 1, 100), (1, 0, 0, 2, 1, 50)])]))}
    # 4. a chain deeper than any shadow stack: recursion in tree / flamegraph
    deep = [(0, 1, 0, 0, 0, 0)] + [(i - 1, i + 1 if i + 1 < 200000 else 0, 0, 1, 1, 1) for i in range(1, 200000)]
    c["deep_chain"] = {"profile.sonde": profile(*base(extra=[cct(0, deep)]))}
    # 5. times near 2^63 and 2^64: signed overflow of the sums of profile.c,
    #    out-of-range float to integer conversions of the reports
    big = (1 << 63) - 1
    c["huge_ticks"] = {"profile.sonde": profile(*base(extra=[cct(0, [
        (0, 1, 0, 0, 0, 0), (0, 3, 2, 1, 1, big), (0, 0, 0, 2, 1, big), (1, 0, 0, 3, 1, big)])]))}
    c["huge_ticks_slow_clock"] = {"profile.sonde": profile(*base(ticks_per_ns="0.010001", extra=[cct(0, [
        (0, 1, 0, 0, 0, 0), (0, 2, 0, 1, 1, 1 << 61), (1, 0, 0, 2, 1, 1 << 60)])]))}
    # 6. lock ids at the top of the u32 range: maxid + 1 wrapped to 0 (slot_of),
    #    or asked for 8-17 GB
    for name, lid in (("lock_id_max", 0xFFFFFFFF), ("lock_id_big", 0x7FFFFFFF), ("lock_id_zero", 0)):
        c[name] = {"profile.sonde": profile(*base(mode=4, extra=[
            lkrec(2, 1, lk_lock(lid)), lkrec(3, 0, b""), lk_stats(0, [lk_stat(lid)]), lk_summary(1)]))}
    c["lock_huge_wait"] = {"profile.sonde": profile(*base(mode=4, extra=[
        lkrec(2, 1, lk_lock(1)), lkrec(3, 0, b""), lk_stats(0, [lk_stat(1, wait=1 << 63)]), lk_summary(1)]))}
    # 7. strings without their NUL, counts past their arrays
    c["unterminated_strings"] = {"profile.sonde": profile(
        meta(mode=1), process(exe=b"A" * 512, cmdline=b"B" * 512, cmdline_len=0xFFFFFFFF),
        module(path=b"C" * 512), thread(comm=b"D" * 16))}
    c["duplicate_slots"] = {"profile.sonde": profile(*base(extra=[thread(), process()]))}
    # 8. a timeline: calls that never return (nesting deeper than any stack),
    #    times that wrap around 2^64, an events record longer than the file
    opens = b"".join(enter(1, 1) for _ in range(100000))
    c["trace_deep"] = {"profile.sonde": profile(*base(mode=2)),
                       "events.sonde": events(chunk(0, 0, 10, opens))}
    wrap = enter(0, 1) + enter((1 << 62) - 1, 2) + exit_((1 << 62) - 1) + enter((1 << 62) - 1, 2) + exit_(5) + exit_(5)
    c["trace_time_wrap"] = {"profile.sonde": profile(*base(mode=2)),
                            "events.sonde": events(chunk(0, 0, (1 << 64) - 100, wrap), chunk(0, 1, 5, exit_(1)))}
    c["trace_huge_record"] = {"profile.sonde": profile(*base(mode=2)),
                              "events.sonde": fhdr(2) + struct.pack("<IIQ", 7, 0, (1 << 30) - 1) + b"\0" * 64}
    lock_ev = b"".join(varint(3) + bytes([1]) + varint(i) + bytes([2 | 0x80]) + varint(1 << 40) for i in range(1, 500))
    c["trace_lock_events"] = {"profile.sonde": profile(*base(mode=14, extra=[
        lkrec(2, 1, lk_lock(1)), lkrec(3, 0, b""), lk_stats(0, [lk_stat(1)]), lk_summary(1)])),
        "events.sonde": events(chunk(0, 0, 0, lock_ev), chunk(0, 1, 1 << 63, lock_ev))}
    return c


MODULE = b"/nonexistent/crafted"

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if len(sys.argv) > 2:
        MODULE = sys.argv[2].encode()
    for name, files in cases().items():
        d = os.path.join(sys.argv[1], name)
        os.makedirs(d, exist_ok=True)
        for f, data in files.items():
            open(os.path.join(d, f), "wb").write(data)
        print(name)

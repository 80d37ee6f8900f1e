#!/usr/bin/env python3
"""rsp_proxy.py — a GDB remote protocol proxy for the tests: it stands between
a client (sonde, gdb) and a stub (QEMU's gdbstub), forwards the packets, logs
every packet the client sends (one a line), and plays a debug probe on a
real board where QEMU cannot:

  --readonly LO-HI   memory [LO, HI) cannot be written: M and X there get
                     E01, and so does Z0 (a software breakpoint is a write),
                     as OpenOCD answers for flash it does not program
  --flash LO-HI      the memory map (qXfer:memory-map:read) says flash there
                     and RAM elsewhere
  --hw-limit N       at most N hardware breakpoints (Z1) at once: the next
                     one gets E0E, as a core with N comparators
  --slow-remove S    each breakpoint removal (z0, z1) waits S seconds before
                     it goes to the stub, as over a slow probe (a test's
                     window to signal the client while it leaves)

Acks are ended on each side (the proxy acks what it receives and swallows
the acks it gets), and QStartNoAckMode is taken out of the stub's features.
Usage: rsp_proxy.py LISTEN_PORT STUB_HOST:STUB_PORT [--log FILE] [options]
It serves one connection, then exits (when either side closes)."""
import argparse
import select
import socket
import sys
import time


def checksum(b):
    return sum(b) & 0xff


def frame(payload):
    return b"$" + payload + b"#%02x" % checksum(payload)


class Reader:
    """Packets and interrupts out of a byte stream (acks dropped)."""

    def __init__(self):
        self.buf = b""

    def feed(self, data):
        self.buf += data
        out = []
        while self.buf:
            c = self.buf[0:1]
            if c in (b"+", b"-"):
                self.buf = self.buf[1:]
            elif c == b"\x03":
                out.append(b"\x03")
                self.buf = self.buf[1:]
            elif c == b"$":
                end = self.buf.find(b"#")
                if end < 0 or len(self.buf) < end + 3:
                    break
                out.append(self.buf[1:end])
                self.buf = self.buf[end + 3:]
            else:
                self.buf = self.buf[1:]
        return out


def rng(s):
    lo, hi = s.split("-")
    return int(lo, 0), int(hi, 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("stub")
    ap.add_argument("--log")
    ap.add_argument("--readonly", type=rng)
    ap.add_argument("--flash", type=rng)
    ap.add_argument("--hw-limit", type=int, default=-1)
    ap.add_argument("--slow-remove", type=float, default=0)
    a = ap.parse_args()
    log = open(a.log, "w", buffering=1) if a.log else None
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", a.port))
    ls.listen(1)
    cli, _ = ls.accept()
    host, port = a.stub.rsplit(":", 1)
    stub = socket.create_connection((host, int(port)))
    for s in (cli, stub):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    from_cli, from_stub = Reader(), Reader()
    hw = set()
    rewrite = []        # the reply to qSupported: its features changed

    def reply(payload):
        cli.sendall(frame(payload))

    def in_ro(addr, n):
        return a.readonly and addr < a.readonly[1] and addr + n > a.readonly[0]

    def client_packet(p):
        if log:
            log.write(p.decode("latin-1") + "\n")
        if p == b"\x03":
            stub.sendall(p)
            return
        cli.sendall(b"+")
        if p == b"QStartNoAckMode":
            return reply(b"")
        if p.startswith(b"qXfer:memory-map:read::") and a.flash:
            off, n = (int(x, 16) for x in p.split(b"::")[1].split(b","))
            lo, hi = a.flash
            xml = ('<?xml version="1.0"?><memory-map>'
                   f'<memory type="flash" start="0x{lo:x}" length="0x{hi - lo:x}"><property name="blocksize">0x400</property></memory>'
                   f'<memory type="ram" start="0x{hi:x}" length="0x{0x100000000 - hi:x}"/></memory-map>').encode()
            chunk = xml[off:off + n]
            return reply((b"l" if off + n >= len(xml) else b"m") + chunk)
        if p[:1] in (b"M", b"X"):
            addr, n = p[1:].split(b":")[0].split(b",")
            if in_ro(int(addr, 16), int(n, 16)):
                return reply(b"E01")
        if p[:3] in (b"Z0,", b"Z1,", b"z1,"):
            addr = int(p[3:].split(b",")[0], 16)
            if p[:3] == b"Z0," and in_ro(addr, 2):
                return reply(b"E01")
            if p[:3] == b"Z1,":
                if addr not in hw and a.hw_limit >= 0 and len(hw) >= a.hw_limit:
                    return reply(b"E0E")
                hw.add(addr)
            elif p[:3] == b"z1,":
                hw.discard(addr)
        if p[:3] in (b"z0,", b"z1,") and a.slow_remove:
            time.sleep(a.slow_remove)
        if p.startswith(b"qSupported"):
            rewrite.append(lambda r: r.replace(b";QStartNoAckMode+", b"") +
                           (b";qXfer:memory-map:read+" if a.flash else b""))
        stub.sendall(frame(p))

    def stub_packet(p):
        stub.sendall(b"+")
        cli.sendall(frame(rewrite.pop(0)(p) if rewrite else p))

    socks = [cli, stub]
    while True:
        r, _, _ = select.select(socks, [], [])
        for s in r:
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                if log:
                    log.write("(closed by %s)\n" % ("client" if s is cli else "stub"))
                return
            try:
                for p in (from_cli if s is cli else from_stub).feed(data):
                    (client_packet if s is cli else stub_packet)(p)
            except OSError:
                if log:
                    log.write("(closed by %s)\n" % ("stub" if s is cli else "client"))
                return


if __name__ == "__main__":
    sys.exit(main())

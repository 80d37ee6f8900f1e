#!/usr/bin/env python3
"""ucsim_console.py — the tests' own client of ucsim's command console
(s51 -Z PORT -P -b), independent of sonde's (src/probe/ucsim/ulink.c).

    ucsim_console.py PORT wait            wait until the console answers
    ucsim_console.py PORT run             run the firmware until it stops itself
    ucsim_console.py PORT runticks        the same, and print the simulated clock ticks of the run
    ucsim_console.py PORT runto ADDR      run to ADDR, then to the end: print the ticks of each part
    ucsim_console.py PORT own OUT.json    the firmware's own counters (struct own at xdata 0x7f00)
    ucsim_console.py PORT until N OUT.json PID NBP
                                          while another client (sonde) runs the firmware: wait
                                          until more than NBP breakpoints are set (sonde's
                                          return sites: a call entered, the start-up code's
                                          clearing of xdata done: before it the counters are
                                          whatever xram held), then poll the counters until
                                          work_calls >= N (written to OUT.json, exit 0); exit 1
                                          when process PID has ended first or after 180 s
    ucsim_console.py PORT code IHX        0 when code memory equals the .ihx, else the differences
    ucsim_console.py PORT breakpoints     the number of breakpoints set in the simulator
    ucsim_console.py PORT mem SPACE LO HI the bytes of rom/xram LO..HI, in hex
    ucsim_console.py PORT quit            end the simulator

Every reply ends with the NUL prompt; a reply that does not come in 60 s is
an error (exit 2)."""
import json
import os
import re
import socket
import struct
import sys
import time


def connect(port):
    end = time.time() + 30
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=60)
            break
        except OSError:
            if time.time() > end:
                sys.exit("ucsim_console: no console on port %d" % port)
            time.sleep(0.05)
    buf = b""
    # the telnet options, then the banner, each ended by the prompt
    while buf.count(b"\0") < 2 or b"uCsim" not in buf:
        d = s.recv(65536)
        if not d:
            sys.exit("ucsim_console: closed")
        buf += d
    return s


def cmd(s, line):
    s.sendall(line.encode() + b"\n")
    buf = b""
    while not buf.endswith(b"\0"):
        d = s.recv(65536)
        if not d:
            sys.exit("ucsim_console: closed during '%s'" % line)
        buf += d
    text = buf[:-1].decode(errors="replace").replace("\r", "")
    first, _, rest = text.partition("\n")
    return rest if first.strip() == line else text


def dump(s, space, lo, hi):
    out = bytearray()
    for ln in cmd(s, "dump /h %s 0x%x 0x%x 16" % (space, lo, hi)).splitlines():
        if not ln.startswith("0x"):
            continue
        w = ln.split()
        a = int(w[0], 16)
        assert a == lo + len(out), (a, lo, len(out))
        want = min(16, hi + 1 - a)
        out += bytes(int(x, 16) for x in w[1:1 + want])
    assert len(out) == hi + 1 - lo
    return bytes(out)


def nbreak(s):
    # one line "N  fetch ..." a breakpoint, the listing's other lines (its
    # disassembly, "0xADDR ...", labels) not counted
    return sum(1 for ln in cmd(s, "info breakpoints").splitlines() if re.match(r"\d+\s", ln))


def own(s):
    b = dump(s, "xram", 0x7F00, 0x7F00 + 22)
    names = ["work_calls", "tick_calls", "isr_calls", "odd", "taken"]
    v = dict(zip(names, struct.unpack("<5H", b[0:10])))
    v["lsum"], = struct.unpack("<i", b[10:14])
    v["fsum"], = struct.unpack("<f", b[14:18])
    v["cfinal"] = b[18]
    v["ifinal"], = struct.unpack("<h", b[19:21])
    v["done"], = struct.unpack("<H", b[21:23])
    return v


def ihx(path):
    mem = {}
    for ln in open(path):
        ln = ln.strip()
        if not ln.startswith(":"):
            continue
        n, a, t = int(ln[1:3], 16), int(ln[3:7], 16), int(ln[7:9], 16)
        if t == 0:
            for i in range(n):
                mem[a + i] = int(ln[9 + 2 * i:11 + 2 * i], 16)
    return mem


def main():
    port, what = int(sys.argv[1]), sys.argv[2]
    s = connect(port)
    if what == "wait":
        return 0
    if what in ("run", "runticks"):
        r = cmd(s, "run")
        if "Program stopped itself" not in r:
            print(r)
            return 1
        if what == "runticks":
            m = re.search(r"Simulated (\d+) ticks", r)
            if not m:
                print(r)
                return 1
            print(m.group(1))
        return 0
    if what == "runto":
        bp = cmd(s, "break %s" % sys.argv[3])
        m = re.search(r"Breakpoint (\d+) at", bp)
        r1 = cmd(s, "run")
        m1 = re.search(r"Simulated (\d+) ticks", r1)
        if not m or "Stop at" not in r1 or not m1:
            print(bp, r1)
            return 1
        cmd(s, "delete %s" % m.group(1))
        r2 = cmd(s, "run")
        m2 = re.search(r"Simulated (\d+) ticks", r2)
        if "Program stopped itself" not in r2 or not m2:
            print(r2)
            return 1
        print(m1.group(1), m2.group(1))
        return 0
    if what == "own":
        json.dump(own(s), open(sys.argv[3], "w"))
        return 0
    if what == "until":
        n, pid, nbp, end = int(sys.argv[3]), int(sys.argv[5]), int(sys.argv[6]), time.time() + 180
        started = False
        while time.time() < end:
            if not started:
                nb = nbreak(s)
                started = nb > nbp
                what = "%d breakpoints" % nb
            if started:
                v = own(s)   # one dump: the counters of one moment (the console answers every ~100 ms)
                if v["work_calls"] >= n:
                    json.dump(v, open(sys.argv[4], "w"))
                    return 0
                what = "work_calls %d" % v["work_calls"]
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                print("process %d ended first (%s)" % (pid, what))
                return 1
        print("after 180 s: %s" % what)
        return 1
    if what == "code":
        mem = ihx(sys.argv[3])
        hi = max(mem)
        got = dump(s, "rom", 0, hi)
        diff = [a for a, v in mem.items() if got[a] != v]
        if diff:
            print("code differs at", ", ".join("0x%04x" % a for a in diff[:10]))
            return 1
        return 0
    if what == "mem":
        print(dump(s, sys.argv[3], int(sys.argv[4], 0), int(sys.argv[5], 0)).hex())
        return 0
    if what == "breakpoints":
        print(nbreak(s))
        return 0
    if what == "quit":
        s.sendall(b"kill\n")
        return 0
    sys.exit("ucsim_console: unknown request " + what)


sys.exit(main())

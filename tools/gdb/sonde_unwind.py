# sonde_unwind.py — gdb unwinder for programs recorded by sonde (issue 27).
#
# While sonde records a function without exit sleds (Clang builds, programs
# attached with `sonde record -p`, binaries patched without a rebuild), the
# slot of its return address holds the address of an exit trampoline of
# libsonde-rt.so (rt_exit_tramp, rt_exit_tramp_full: src/rt/hooks.c) and the
# real return address is in the thread's shadow stack (struct sonde_thread,
# src/common/session.h, reached through the runtime's TLS variable rt_tls).
# This unwinder gives gdb the real caller of such a frame: for a frame whose
# pc is in an exit trampoline it finds the shadow-stack entry whose slot is
# the address the return address was read from and unwinds to pc = its real
# return address, rsp = slot + 8, the other registers as they are (or as the
# trampoline saved them, when it was interrupted inside).  A frame filter
# hides the trampoline frames from `bt` (`bt -no-filters` shows them).
#
# Use:  gdb -iex 'source PREFIX/lib/sonde/sonde_unwind.py' -p PID
# (gdb also loads it by itself as libsonde-rt.so-gdb.py, next to the library,
# where `set auto-load safe-path` allows.)  x86-64 Linux only.  Needs no
# symbols: the trampolines are recognised by their code.  The shadow stack
# is read through rt_tls (gdb needs libthread_db for TLS), or else through
# the session's thread table, searched for the thread's tid.
import struct

import gdb
from gdb.unwinder import Unwinder, register_unwinder

# struct sonde_thread / sonde_frame layout (static-asserted in src/rt/hooks.c)
T_DEPTH, T_STACK, FRAME_SIZE, F_SLOT, F_SITE = 12, 2320, 48, 8, 40
STACK_MAX = 2048        # SONDE_STACK_MAX
RT_TLS_T = 16           # offsetof(struct rt_tls, t)
THREADS_MAX = 4096      # SONDE_MAX_THREADS

# The trampolines' code (None: the call's rip-relative displacement).
def _tmpl(hexs):
    return [None if b == "??" else int(b, 16) for b in hexs.split()]

TRAMP = _tmpl("50 52 48 8d 7c 24 08 ff 15 ?? ?? ?? ?? 49 89 c3 5a 58 41 ff e3")
FULL = _tmpl("48 83 ec 08 50 52 51 56 57 41 50 41 51 41 52 41 53 48 8d 7c 24 48"
             " ff 15 ?? ?? ?? ?? 48 89 44 24 48 41 5b 41 5a 41 59 41 58 5f 5e 59 5a 58 c3")
MAXLEN = len(FULL)

# Per trampoline: bytes below the CFA (slot + 8) that rsp is, at each
# instruction (offset: depth, up to the next offset), where the real return
# address is from which offset, and the registers it pushed: (name, offset of
# the push, offset of the pop, place below the slot).
TRAMP_CFA = [(0, 0), (1, 8), (2, 16), (17, 8), (18, 0)]
FULL_CFA = [(0, 0), (4, 8), (5, 16), (6, 24), (7, 32), (8, 40), (9, 48), (11, 56), (13, 64),
            (15, 72), (17, 80), (35, 72), (37, 64), (39, 56), (41, 48), (42, 40), (43, 32),
            (44, 24), (45, 16), (46, 8)]
TRAMP_SAVED = [("rax", 0, 17, 0), ("rdx", 1, 16, 8)]
FULL_SAVED = [("rax", 4, 45, 8), ("rdx", 5, 44, 16), ("rcx", 6, 43, 24), ("rsi", 7, 42, 32),
              ("rdi", 8, 41, 40), ("r8", 9, 39, 48), ("r9", 11, 37, 56), ("r10", 13, 35, 64),
              ("r11", 15, 33, 72)]
TRAMP_CALLED, FULL_CALLED, FULL_STORED = 13, 28, 33
REGS = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8", "r9", "r10", "r11", "r12",
        "r13", "r14", "r15"]


def _u64(b, off=0):
    return struct.unpack_from("<Q", b, off)[0]


def _read(addr, n):
    return bytes(gdb.selected_inferior().read_memory(addr, n))


def _in_runtime(pc):
    name = gdb.solib_name(pc)
    return name is not None and "libsonde-rt" in name


def _matches(code, tmpl, at):
    if at < 0 or at + len(tmpl) > len(code):
        return False
    return all(t is None or code[at + i] == t for i, t in enumerate(tmpl))


def find_tramp(pc):
    """(kind, start) of the exit trampoline holding pc, or None."""
    if not _in_runtime(pc):
        return None
    lo = pc - (MAXLEN - 1)
    try:
        code = _read(lo, 2 * MAXLEN)
    except gdb.MemoryError:
        return None
    for kind, tmpl in (("tramp", TRAMP), ("full", FULL)):
        for off in range(len(tmpl)):
            if _matches(code, tmpl, pc - off - lo):
                return kind, pc - off
    return None


def _lookup(name):
    sym = gdb.lookup_global_symbol(name) or gdb.lookup_static_symbol(name)
    if sym is None:
        raise gdb.GdbError("no symbol " + name)
    return sym.value()


def _thread_state():
    """Address of this thread's struct sonde_thread, or None."""
    try:  # rt_tls.t, through gdb's TLS support (libthread_db)
        t = int(_lookup("rt_tls")["t"])
        if t:
            return t
    except (gdb.error, gdb.GdbError, gdb.MemoryError, RuntimeError):
        pass
    try:  # the session's thread table: the live thread with this tid
        hdr = _lookup("rt_sess")
        base = int(hdr)
        th = gdb.selected_thread()
        tid = th.ptid[1] or th.ptid[0]
        n = min(int(hdr["nthreads"]), THREADS_MAX)
        offs = hdr["threads_off"]
        ttype = gdb.lookup_type("struct sonde_thread").pointer()
        for i in range(n):
            off = int(offs[i])
            if not off:
                continue
            t = gdb.Value(base + off).cast(ttype)
            if int(t["tid"]) == tid and int(t["state"]) == 1:
                return base + off
    except (gdb.error, gdb.GdbError, gdb.MemoryError, RuntimeError):
        pass
    return None


def shadow_site(slot, past_top=False):
    """The real return address of the frame whose slot is `slot`: the
    topmost shadow-stack entry with that slot (the entry just past the top
    too if past_top: the exit hook has just closed it)."""
    t = _thread_state()
    if t is None:
        return None
    try:
        depth = struct.unpack("<I", _read(t + T_DEPTH, 4))[0]
        if depth > STACK_MAX:
            return None
        n = min(depth + 1, STACK_MAX) if past_top else depth
        if n == 0:
            return None
        stack = _read(t + T_STACK, n * FRAME_SIZE)
    except gdb.MemoryError:
        return None
    for i in range(depth - 1, -1, -1):
        if _u64(stack, i * FRAME_SIZE + F_SLOT) == slot:
            return _u64(stack, i * FRAME_SIZE + F_SITE)
    if past_top and n > depth and _u64(stack, depth * FRAME_SIZE + F_SLOT) == slot:
        return _u64(stack, depth * FRAME_SIZE + F_SITE)
    return None


def _depth(table, off):
    d = 0
    for at, below in table:
        if off >= at:
            d = below
    return d


class _FrameId:
    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


class SondeUnwinder(Unwinder):
    def __init__(self):
        super().__init__("sonde")
        self.busy = False

    def __call__(self, pf):
        if self.busy:
            return None
        self.busy = True
        try:
            return self._unwind(pf)
        except Exception:  # never in gdb's way: its other unwinders try next
            return None
        finally:
            self.busy = False

    def _unwind(self, pf):
        pc = int(pf.read_register("rip"))
        found = find_tramp(pc)
        if found is None:
            return None
        kind, start = found
        off = pc - start
        rsp = int(pf.read_register("rsp"))
        full = kind == "full"
        cfa = rsp + _depth(FULL_CFA if full else TRAMP_CFA, off)
        slot = cfa - 8
        level = pf.level() if hasattr(pf, "level") else -1
        ra = None
        if full and off >= FULL_STORED:  # the hook's answer is back in the slot
            ra = _u64(_read(slot, 8))
        elif not full and off > TRAMP_CALLED:  # in r11 (mov %rax, %r11 is one instruction)
            if off < 16:
                return None
            ra = int(pf.read_register("r11"))
        else:
            called = off == (FULL_CALLED if full else TRAMP_CALLED)
            ra = shadow_site(slot, past_top=called)
            if ra is None and called and level == 0:
                ra = int(pf.read_register("rax"))
        if not ra:
            return None
        ptr = pf.read_register("rsp").type
        u64 = pf.read_register("rax").type
        code = pf.read_register("rip").type
        # gdb 13 wants gdb.Value attributes (later ones take ints too)
        ui = pf.create_unwind_info(_FrameId(gdb.Value(cfa).cast(u64), gdb.Value(start).cast(u64)))
        saved = {}
        for name, pushed, popped, below in (FULL_SAVED if full else TRAMP_SAVED):
            if pushed < off <= popped:
                saved[name] = _u64(_read(slot - below, 8))
        for r in REGS:
            if r in saved:
                ui.add_saved_register(r, gdb.Value(saved[r]).cast(u64))
            else:
                ui.add_saved_register(r, pf.read_register(r))
        ui.add_saved_register("rip", gdb.Value(ra).cast(code))
        ui.add_saved_register("rsp", gdb.Value(cfa).cast(ptr))
        return ui


class _SondeFilter:
    """Hides the exit trampolines' frames from bt: each stands between a
    recorded function and its real caller.  Not the innermost frame (a stop
    inside a trampoline shows where it is)."""

    def __init__(self):
        self.name = "sonde"
        self.priority = 100
        self.enabled = True
        gdb.frame_filters[self.name] = self

    def filter(self, frames):
        for fd in frames:
            try:
                f = fd.inferior_frame()
                if f.level() > 0 and f.unwind_stop_reason() == gdb.FRAME_UNWIND_NO_REASON and find_tramp(f.pc()):
                    continue
            except (gdb.error, gdb.MemoryError, RuntimeError):
                pass
            yield fd


register_unwinder(None, SondeUnwinder(), replace=True)
_SondeFilter()

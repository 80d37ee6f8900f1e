#!/usr/bin/env python3
"""check_layers.py — the folders of src/ depend on each other in one direction,
and no include cycle among the units of src/.

Layers.  LAYERS below lists the folders of src/ lowest first; the folders of
one level are independent of each other.  A file may include a header of its
own folder or of a folder on a lower level, never of a higher level or of a
sibling.  A file's folder is the first path component under src/
(src/arch/x86_64/ is arch, src/probe/agent/ is probe).  The programs built
apart (SEPARATE: the runtime injected into the profiled program, the compiler
wrappers) may use only the folders listed for them, and nothing may use them.
A folder of src/ in neither table fails the check: a new folder is placed in
the order on purpose, here and in docs/ARCHITECTURE.md ("Layers").

Calls.  With --objects BUILD (the build directory), the same order holds for
the calls between compiled objects: every global symbol that an object of
BUILD/obj/src/F/ (or BUILD/rtobj/src/F/, the runtime's objects) needs (nm's
"U") and that another object of the same set defines must be defined in F or
in a folder that F may include.  Objects whose source file is gone (left in
the build directory by an older tree) are ignored.

Cycles.  A unit is a header and the .c file(s) of the same base name in the
same folder (src/probe/engine.h + src/probe/engine.c is the unit
probe/engine; a .c file without a header is a unit of its own, and so is a
header without a .c file).  Every .c/.h file under src/ is scanned for
`#include "..."` lines; the path is looked up, like the compiler does with
-Isrc -Iinclude, next to the including file, then under src/, then under
include/.  There is an edge U -> V when a file of U includes V's header
(U != V).  Headers under include/ (the public API) and system headers are
leaves: they are not units of src/ and cannot close a cycle or break the
order.  Every elementary cycle is reported as a path of unit names, with the
include line behind each step.

One line per check: "ok - ..." or "not ok - ..." (cycles; includes down the
layers; with --objects, calls down the layers), "# " lines naming each
offence.  Exit 0 when every check passes, 1 when one fails, 2 on bad usage.

    python3 tests/check_layers.py [ROOT] [--objects BUILD]
        ROOT holds src/ and include/ (default: this checkout)
"""
import os
import re
import signal
import subprocess
import sys

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
SOURCE_EXT = (".c", ".h")
MAX_CYCLES = 500  # more than that is reported as a count per strongly connected set

# The folders of src/, lowest level first; one level's folders are siblings
# (neither may use the other).  docs/ARCHITECTURE.md "Layers" says what each
# level is for.
LAYERS = [
    ("common",),              # session layout, event encodings, rings, clock, JSON
    ("arch", "sym"),          # per-architecture pieces; ELF symbols, DWARF lines and variables
    ("data", "proc", "instr"),  # the reader of sonde.data; a live process: memory, registers, modules;
                              # functions of programs never built for sonde: plans and stubs
    ("record", "attach"),     # session and recorder; ptrace injection of the agent
    ("analysis", "probe"),    # models of a recording; the dynamic probe engine
    ("export",),              # output formats
    ("cli",),                 # the sonde command
]
# Programs built apart from sonde, with the folders each may use.
SEPARATE = {
    "rt": ("common",),        # libsonde-rt.so and the module object, inside the profiled program
    "cc": (),                 # sonde-cc / sonde-c++ and the assembler filter
}


def strip_comments(text):
    """The text with /* */ and // comments blanked (newlines kept), strings and
    character constants left alone."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def unit_of(rel):
    """The unit name of a file, its path under src/ without the extension."""
    return os.path.splitext(rel)[0]


def scan(root):
    src = os.path.join(root, "src")
    inc = os.path.join(root, "include")
    files = []
    for d, dirs, names in os.walk(src):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(SOURCE_EXT):
                files.append(os.path.relpath(os.path.join(d, name), src))
    units = sorted({unit_of(f) for f in files})
    # edges[u][v] = [(file, line, text), ...]
    edges = {u: {} for u in units}
    includes = []  # (file, line, text, included file), files under src/
    unresolved = []
    for rel in files:
        path = os.path.join(src, rel)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = strip_comments(f.read())
        for m in INCLUDE.finditer(text):
            name = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            target = None
            for base in (os.path.dirname(path), src, inc):
                cand = os.path.normpath(os.path.join(base, name))
                if os.path.isfile(cand):
                    target = cand
                    break
            if target is None:
                unresolved.append("src/%s:%d: %s" % (rel, line, name))
                continue
            trel = os.path.relpath(target, src)
            if trel.startswith(".."):
                continue  # include/ or elsewhere: a leaf
            includes.append((rel, line, name, trel))
            u, v = unit_of(rel), unit_of(trel)
            if u != v:
                edges[u].setdefault(v, []).append(("src/" + rel, line, name))
    return units, edges, includes, unresolved


def sccs(units, edges):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in units:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            pushed = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    pushed = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if pushed:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def cycles_in(comp, edges, limit):
    """The elementary cycles of one strongly connected set, each starting at its
    smallest unit (Johnson's algorithm: every cycle once).  At most limit."""
    found = []
    order = sorted(comp)
    for i, s in enumerate(order):
        allowed = set(order[i:])
        blocked, bmap, path = set(), {}, [s]

        def unblock(u):
            todo = [u]
            while todo:
                x = todo.pop()
                if x in blocked:
                    blocked.discard(x)
                    todo.extend(bmap.pop(x, ()))

        blocked.add(s)
        # stack of (node, successors iterator, found-a-cycle flag)
        work = [[s, iter(sorted(w for w in edges[s] if w in allowed)), False]]
        while work and len(found) < limit:
            frame = work[-1]
            v = frame[0]
            advanced = False
            for w in frame[1]:
                if w == s:
                    found.append(path + [s])
                    frame[2] = True
                elif w not in blocked:
                    path.append(w)
                    blocked.add(w)
                    work.append([w, iter(sorted(x for x in edges[w] if x in allowed)), False])
                    advanced = True
                    break
            if advanced:
                continue
            work.pop()
            if frame[2]:
                unblock(v)
            else:
                for w in edges[v]:
                    if w in allowed:
                        bmap.setdefault(w, set()).add(v)
            path.pop()
            if work and frame[2]:
                work[-1][2] = True
        if len(found) >= limit:
            break
    return found


def folder_of(rel):
    """The folder of a path under src/: its first component ("" for a file
    directly in src/)."""
    return rel.split("/", 1)[0] if "/" in rel else ""


def may_use():
    """For each known folder, the set of folders it may use (itself included)."""
    allowed, below = {}, set()
    for level in LAYERS:
        for f in level:
            allowed[f] = below | {f}
        below = below | set(level)
    for f, uses in SEPARATE.items():
        allowed[f] = set(uses) | {f}
    return allowed


def why_not(fu, fv):
    """Why folder fu may not use folder fv, in a few words."""
    level = {f: i for i, lv in enumerate(LAYERS) for f in lv}
    if fv in SEPARATE:
        return "%s is a program built apart" % fv
    if fu in SEPARATE:
        return "%s, built apart, may use only: %s" % (fu, ", ".join(SEPARATE[fu]) or "nothing of src/")
    if level[fu] == level[fv]:
        return "siblings on level %d" % level[fu]
    return "%s is level %d, %s level %d" % (fu, level[fu], fv, level[fv])


def check_cycles(units, edges, unresolved):
    comps = [c for c in sccs(units, edges) if len(c) > 1]
    if not comps:
        print("ok - no include cycle among the units of src/ (%d units)" % len(units))
        for u in unresolved:
            print("# not found, ignored: %s" % u)
        return 0
    cycles, more = [], []
    for comp in sorted(comps):
        found = cycles_in(comp, edges, MAX_CYCLES - len(cycles) + 1)
        if len(cycles) + len(found) > MAX_CYCLES:
            more.append(comp)
            found = found[:MAX_CYCLES - len(cycles)]
        cycles.extend(found)
    cycles.sort(key=lambda c: (len(c), c))
    paths = [" -> ".join(c) for c in cycles]
    summary = "; ".join(paths)
    if more:
        summary += "; (more cycles not listed among: %s)" % ", ".join(" ".join(c) for c in more)
    print("not ok - include cycles: %d among the units of src/ (%d units): %s" % (len(cycles), len(units), summary))
    for comp in sorted(comps):
        print("# strongly connected: %s" % " ".join(comp))
    for c in cycles:
        print("# cycle: %s" % " -> ".join(c))
        for u, v in zip(c, c[1:]):
            f, line, name = edges[u][v][0]
            extra = len(edges[u][v]) - 1
            print("#   %s -> %s: %s:%d includes \"%s\"%s" % (u, v, f, line, name,
                  " (and %d more)" % extra if extra else ""))
    for u in unresolved:
        print("# not found, ignored: %s" % u)
    return 1


def unknown_folders(folders, allowed):
    return sorted(f for f in folders if f not in allowed)


def check_include_layers(includes, allowed):
    bad, folders = [], set()
    for rel, line, name, trel in includes:
        fu, fv = folder_of(rel), folder_of(trel)
        folders.update((fu, fv))
        if fu in allowed and fv in allowed and fv not in allowed[fu]:
            bad.append("# up: src/%s:%d includes \"%s\" (%s)" % (rel, line, name, why_not(fu, fv)))
    unknown = unknown_folders(folders, allowed)
    if not bad and not unknown:
        print("ok - includes go down the layers (%d includes between files of src/)" % len(includes))
        return 0
    what = []
    if bad:
        what.append("%d include%s up the layers" % (len(bad), "" if len(bad) == 1 else "s"))
    if unknown:
        what.append("folders in no layer (add them to LAYERS in tests/check_layers.py): %s"
                    % ", ".join(f or "src/ itself" for f in unknown))
    print("not ok - includes down the layers: %s" % "; ".join(what))
    for b in bad:
        print(b)
    return 1


def nm_objects(objdir, root):
    """{object (path under objdir): (folder, defined symbols, needed symbols)}
    for the objects of objdir/src/ whose source is still in root/src/."""
    objs = []
    for d, dirs, names in os.walk(os.path.join(objdir, "src")):
        dirs.sort()
        for name in sorted(names):
            if not name.endswith(".o"):
                continue
            path = os.path.join(d, name)
            rel = os.path.relpath(path, os.path.join(objdir, "src"))[:-2]
            if any(os.path.isfile(os.path.join(root, "src", rel + ext)) for ext in (".c", ".S", ".s")):
                objs.append((path, rel))
    out = {}
    if not objs:
        return out
    text = subprocess.run(["nm", "-A", "-g"] + [p for p, _ in objs], check=True,
                          stdout=subprocess.PIPE, universal_newlines=True).stdout
    rel_of = {p: r for p, r in objs}
    for p, r in objs:
        out[r] = (folder_of(r), set(), set())
    for line in text.splitlines():
        path, sep, rest = line.rpartition(":")
        f = rest.split()
        if not sep or len(f) < 2 or path not in rel_of:
            continue
        kind, sym = f[-2], f[-1]
        entry = out[rel_of[path]]
        if kind in ("U", "w", "v"):
            entry[2].add(sym)
        elif kind.isupper():
            entry[1].add(sym)
    return out


def libc_symbols():
    """The functions the C library defines (nm -D of libc.so.6), or none."""
    try:
        path = subprocess.run(["cc", "-print-file-name=libc.so.6"], check=True, stdout=subprocess.PIPE,
                              universal_newlines=True).stdout.strip()
        text = subprocess.run(["nm", "-D", "--defined-only", path], check=True, stdout=subprocess.PIPE,
                              universal_newlines=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return set()
    return {line.split()[-1].split("@")[0] for line in text.splitlines() if line.split()}


def check_call_layers(build, root, allowed):
    try:
        sets = [nm_objects(os.path.join(build, d), root) for d in ("obj", "rtobj")]
    except (OSError, subprocess.CalledProcessError) as e:
        print("skip - calls down the layers: nm failed (%s)" % e)
        return 0
    nobj = sum(len(s) for s in sets)
    if not nobj:
        print("skip - calls down the layers: no object of src/ under %s (build first)" % build)
        return 0
    libc = libc_symbols()
    bad, folders = [], set()
    for objs in sets:
        definers = {}
        for rel, (folder, defined, _) in objs.items():
            for sym in defined:
                definers.setdefault(sym, set()).add(folder)
        for rel, (folder, _, needed) in sorted(objs.items()):
            folders.add(folder)
            if folder not in allowed:
                continue
            for sym in sorted(needed):
                by = definers.get(sym, set())
                if sym in libc:
                    continue  # libc's function, which the runtime interposes (rt/locks.c, rt/syscalls.c): not a call up
                if by and not by & allowed[folder]:
                    fv = sorted(by)[0]
                    if fv in allowed:
                        bad.append("# up: src/%s calls %s of %s/ (%s)" % (rel, sym, fv, why_not(folder, fv)))
    unknown = unknown_folders(folders, allowed)
    if not bad and not unknown:
        print("ok - calls go down the layers (%d objects)" % nobj)
        return 0
    what = []
    if bad:
        what.append("%d call%s up the layers" % (len(bad), "" if len(bad) == 1 else "s"))
    if unknown:
        what.append("folders in no layer: %s" % ", ".join(f or "src/ itself" for f in unknown))
    print("not ok - calls down the layers: %s" % "; ".join(what))
    for b in bad:
        print(b)
    return 1


def main(argv):
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    args, build = [], None
    it = iter(argv[1:])
    for a in it:
        if a in ("-h", "--help"):
            print(__doc__.strip())
            return 2
        if a == "--objects":
            build = next(it, None)
            if build is None:
                print("check_layers.py: --objects needs the build directory", file=sys.stderr)
                return 2
        else:
            args.append(a)
    if len(args) > 1:
        print(__doc__.strip())
        return 2
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(os.path.join(root, "src")):
        print("not ok - layers: no src/ under %s" % root)
        return 2
    units, edges, includes, unresolved = scan(root)
    allowed = may_use()
    rc = check_cycles(units, edges, unresolved)
    rc |= check_include_layers(includes, allowed)
    if build is not None:
        rc |= check_call_layers(build, root, allowed)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""check_includes.py — no include cycle among the units of src/.

A unit is a header and the .c file(s) of the same base name in the same folder
(src/probe/engine.h + src/probe/engine.c is the unit probe/engine; a .c file
without a header is a unit of its own, and so is a header without a .c file).
Every .c/.h file under src/ is scanned for `#include "..."` lines; the path is
looked up, like the compiler does with -Isrc -Iinclude, next to the including
file, then under src/, then under include/.  There is an edge U -> V when a
file of U includes V's header (U != V).  Headers under include/ (the public
API) and system headers are leaves: they are not units of src/ and cannot
close a cycle.

Every elementary cycle is reported as a path of unit names, with the include
line behind each step.  Prints "ok - no include cycle among the units of src/
(N units)" and exits 0, or "not ok - include cycles: ..." and exits 1.

    python3 tests/check_includes.py [ROOT]     ROOT holds src/ and include/
                                               (default: this checkout)
"""
import os
import re
import signal
import sys

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
SOURCE_EXT = (".c", ".h")
MAX_CYCLES = 500  # more than that is reported as a count per strongly connected set


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
            u, v = unit_of(rel), unit_of(trel)
            if u != v:
                edges[u].setdefault(v, []).append(("src/" + rel, line, name))
    return units, edges, unresolved


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


def main(argv):
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print(__doc__.strip())
        return 2
    root = argv[1] if len(argv) == 2 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(os.path.join(root, "src")):
        print("not ok - include cycles: no src/ under %s" % root)
        return 2
    units, edges, unresolved = scan(root)
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


if __name__ == "__main__":
    sys.exit(main(sys.argv))

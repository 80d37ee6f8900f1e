#!/usr/bin/env bash
# src_layers.sh — the folders of src/ depend on each other in one direction
# (tests/check_layers.py: includes, and calls between the built objects), and
# no include cycle among the units of src/.  The checker is first shown to
# fail on violations planted in copies (an include and a call up the layers,
# a folder in no layer, a cycle), then run on this checkout.
source "$ROOT/tests/lib.sh"

command -v python3 > /dev/null || { skip "layers" "no python3"; exit 0; }
checker="$ROOT/tests/check_layers.py"

# --- a cycle through a .c file, then none (small tree, one folder)
mkdir -p cyc/src/common cyc/include/sonde
printf '#include "common/y.h"\n#include "sonde/pub.h"\n' > cyc/src/common/x.h
printf '/* y.h */\n' > cyc/src/common/y.h
printf '#include "common/y.h"\n#include "common/x.h"\n' > cyc/src/common/y.c
printf '#include "common/y.h"\n' > cyc/include/sonde/pub.h
printf '#include "common/x.h"\n' > cyc/src/common/main.c
python3 "$checker" cyc > cyc.out 2>&1
rc=$?
check "checker fails on a cycle (exit 1)" test "$rc" -eq 1
check "checker names the cycle" grep -q '^not ok - include cycles: 1 .*: common/x -> common/y -> common/x$' cyc.out
check "checker names the include behind each step" grep -q 'common/y -> common/x: src/common/y.c:2 includes "common/x.h"' cyc.out
printf '/* #include "common/x.h" in a comment does not count */\n' > cyc/src/common/y.c
python3 "$checker" cyc > nocyc.out 2>&1
rc=$?
check "checker passes without a cycle (exit 0)" test "$rc" -eq 0
check "checker counts the units" grep -q '^ok - no include cycle among the units of src/ (3 units)$' nocyc.out

# --- an include up the layers, planted in a copy of this checkout: process
# access (proc/) including the agent injection above it (attach/); and a
# folder that no layer names
mkdir up
cp -r "$ROOT/src" "$ROOT/include" up/
printf '#include "attach/agent.h"\n' >> up/src/proc/target.c
line=$(wc -l < up/src/proc/target.c)
python3 "$checker" up > up.out 2>&1
rc=$?
check "checker fails on an include up the layers (exit 1)" test "$rc" -eq 1
check "checker names the include up" grep -q "^# up: src/proc/target.c:$line includes \"attach/agent.h\" (proc is level [0-9], attach level [0-9])\$" up.out
check "checker says which check failed" grep -q '^not ok - includes down the layers: 1 include up the layers$' up.out
sed -i '$d' up/src/proc/target.c
mkdir up/src/newpart
printf '#include "common/json.h"\n' > up/src/newpart/x.c
python3 "$checker" up > new.out 2>&1
rc=$?
check "checker fails on a folder in no layer (exit 1)" test "$rc" -eq 1
check "checker names the folder" grep -q '^not ok - includes down the layers: folders in no layer .*: newpart$' new.out

# --- a call up the layers between built objects (includes all fine): an
# object of common/ needs a function defined by an object of cli/
if command -v nm > /dev/null && command -v "${CC:-cc}" > /dev/null; then
	mkdir -p calls/src/common calls/src/cli calls/b/obj/src/common calls/b/obj/src/cli
	printf 'int high(void);\nint low(void) { return high(); }\n' > calls/src/common/low.c
	printf 'int high(void) { return 1; }\n' > calls/src/cli/high.c
	"${CC:-cc}" -c calls/src/common/low.c -o calls/b/obj/src/common/low.o
	"${CC:-cc}" -c calls/src/cli/high.c -o calls/b/obj/src/cli/high.o
	python3 "$checker" calls --objects calls/b > calls.out 2>&1
	rc=$?
	check "checker fails on a call up the layers (exit 1)" test "$rc" -eq 1
	check "checker names the call up" grep -q '^# up: src/common/low calls high of cli/ (common is level 0, cli level [0-9])$' calls.out
	printf 'int low(void);\nint high(void) { return low(); }\n' > calls/src/cli/high.c
	printf 'int low(void) { return 0; }\n' > calls/src/common/low.c
	"${CC:-cc}" -c calls/src/common/low.c -o calls/b/obj/src/common/low.o
	"${CC:-cc}" -c calls/src/cli/high.c -o calls/b/obj/src/cli/high.o
	python3 "$checker" calls --objects calls/b > down.out 2>&1
	rc=$?
	check "checker passes calls down the layers (exit 0)" test "$rc" -eq 0
	check "checker counts the objects" grep -q '^ok - calls go down the layers (2 objects)$' down.out
else
	skip "checker on planted calls" "no nm or cc"
fi

# --- this checkout (its objects: those of $BUILD)
python3 "$checker" "$ROOT" --objects "$BUILD"

# --- every mention of the architecture page in src/, tests/ and docs/ names
# docs/ARCHITECTURE.md (a link beside it in docs/), and a section it cites
# ("Name", or a link's #anchor) is a heading of the page
python3 - "$ROOT" > refs.out 2>&1 <<'PY'
import os, re, sys
root = sys.argv[1]
page = os.path.join(root, "docs", "ARCHITECTURE.md")
heads = set(h.strip() for h in re.findall(r"^#+ (.+)$", open(page, encoding="utf-8").read(), re.M))
anchors = set(re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in heads)
bad, n = [], 0
for top in ("src", "tests", "docs"):
    for d, _, names in os.walk(os.path.join(root, top)):
        for name in names:
            path = os.path.join(d, name)
            rel = os.path.relpath(path, root)
            if rel in ("docs/ARCHITECTURE.md", "tests/e2e/src_layers.sh"):
                continue
            try:
                text = open(path, encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue
            flat = re.sub(r"\n[ \t]*(?:\*|#|//)?[ \t]*", " ", text)  # comment lines joined
            for m in re.finditer(r"ARCHITECTURE\.md(#[\w-]+)?", flat):
                n += 1
                before = flat[max(0, m.start() - 5):m.start()]
                if before != "docs/" and not (rel.startswith("docs/") and before.endswith(("](", "["))):
                    bad.append("%s: '%s' is not docs/ARCHITECTURE.md" % (rel, flat[m.start() - 12:m.end()]))
                if m.group(1) and m.group(1)[1:] not in anchors:
                    bad.append("%s: no heading for %s" % (rel, m.group(0)))
                cite = re.match(r"(?:'s rule)?\s*[,(]\s*\(?\"([^\"]+)\"", flat[m.end():])
                if cite and cite.group(1) not in heads:
                    bad.append("%s: no section \"%s\"" % (rel, cite.group(1)))
print("%d %s" % (n, "; ".join(bad)))
PY
read -r nrefs refbad < refs.out
if [ "${nrefs:-0}" -gt 0 ] && [ -z "${refbad:-}" ]; then
	ok "the $nrefs mentions of docs/ARCHITECTURE.md resolve (path and section)"
else
	notok "mentions of docs/ARCHITECTURE.md resolve" "$(head -c 600 refs.out)"
fi
exit 0

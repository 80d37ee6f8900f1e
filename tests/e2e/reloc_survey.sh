#!/usr/bin/env bash
# reloc_survey.sh — the relocator on real gcc -O2 code (the sonde binary), checked
# against objdump rather than against itself: every site it accepts starts on an
# instruction boundary and takes whole instructions (both ends are instruction
# starts in objdump's listing), and no direct branch objdump sees lands strictly
# inside the displaced bytes; every site refused for a branch target names a
# real target (objdump's) inside them.  Also prints how much is relocatable.
# test-timeout: 900
source "$ROOT/tests/lib.sh"

SURVEY="$BUILD/tests/tools/reloc_survey"
BIN="$BUILD/bin/sonde"
command -v objdump >/dev/null || { skip "reloc survey" "objdump not installed (binutils)"; exit 0; }
[ -x "$SURVEY" ] || { notok "reloc survey" "$SURVEY not built"; exit 0; }

"$SURVEY" "$BIN" --sites > sites.txt 2> survey.err
check "survey runs (exit 0)" test $? -eq 0
objdump -d --no-show-raw-insn "$BIN" > dis.txt || { notok objdump "objdump -d failed"; exit 0; }

python3 - sites.txt dis.txt <<'PY'
import bisect, re, sys
sites, dis = sys.argv[1], sys.argv[2]
starts, targets = set(), set()
line = re.compile(r'^\s*([0-9a-f]+):\s+(\S+)(?:\s+(\S+))?')
for l in open(dis):
    m = line.match(l)
    if not m:
        continue
    a = int(m.group(1), 16)
    starts.add(a)
    mn, op = m.group(2), m.group(3) or ''
    if mn in ('bnd', 'notrack', 'rep', 'repz', 'repnz'):
        rest = l.split(None, 3)
        mn, op = (rest[2], rest[3].split()[0]) if len(rest) > 3 else (mn, '')
    if (mn.startswith('j') or mn.startswith('call') or mn.startswith('loop') or mn == 'xbegin') \
            and re.fullmatch(r'[0-9a-f]+', op):
        targets.add(int(op, 16))
tsorted = sorted(targets)
ok = refused = inside = bad = 0
errors = []
for l in open(sites):
    f = l.split()
    a = int(f[1], 16)
    if f[0] == 'ok':
        n = int(f[2])
        ok += 1
        if a not in starts or a + n not in starts:
            errors.append('site %x+%d: not whole instructions per objdump' % (a, n))
        i = bisect.bisect_right(tsorted, a)
        if i < len(tsorted) and tsorted[i] < a + n:
            errors.append('site %x+%d accepted but objdump has a branch to %x inside' % (a, n, tsorted[i]))
    else:
        refused += 1
        m = re.search(r'branch target 0x([0-9a-f]+)', l)
        if m:
            inside += 1
            t = int(m.group(1), 16)
            if t not in targets or not t > a:
                errors.append('site %x refused for a target %x objdump does not see' % (a, t))
for e in errors[:10]:
    print('  ' + e)
print('  %d sites accepted, %d refused (%d for a branch target inside), %d disagreements with objdump'
      % (ok, refused, inside, len(errors)))
print(('ok' if ok > 1000 and not errors else 'not ok') +
      ' - accepted sites take whole instructions and no branch target per objdump')
print(('ok' if inside > 0 and not any('refused for' in e for e in errors) else 'not ok') +
      ' - refusals for a branch target name a real one')
PY

# the summary, entries only (--max-body 0) to keep the run short
"$SURVEY" "$BIN" --max-body 0 --format=json > survey.json
check "survey summary in JSON" jq_py survey.json \
	"assert d['functions'] > 100 and 0 < d['entries_relocatable'] <= d['functions'] == d['sites'], d"
jq_py survey.json "print('  %d of %d function entries relocatable' % (d['entries_relocatable'], d['functions']))"
"$SURVEY" /nonexistent > /dev/null 2>&1
check "missing file: exit 2" test $? -eq 2

#!/usr/bin/env bash
# probe_plugin.sh — the C plugin API (include/sonde/probe.h, --plugin x.so):
# a plugin built with `cc -shared -fPIC -Iinclude` whose pre-handler counts
# hits, reads the first argument from the registers and a global through the
# memory reader, whose post-handler sees the registers after the displaced
# instruction, and whose report line appears in the table, in the JSON
# document ("report") and, from its fini, on stderr.
source "$ROOT/tests/lib.sh"

gcc -O2 -g -o loop "$PROGS/probe_loop.c" || { notok build "gcc failed"; exit 0; }
cc -shared -fPIC -Wall -Wextra -Werror -I"$ROOT/include" -o plug.so "$PROGS/probe_plugin.c" \
	|| { notok "plugin builds with cc -shared -fPIC -Iinclude" "cc failed"; exit 0; }
ok "plugin builds with cc -shared -fPIC -Iinclude"

# The plugin reads g_count at (probed address + DELTA): DELTA from the ELF
# symbols (link-time addresses; the load bias cancels out).
delta=$(nm loop | python3 -c "import sys; s={f[2]: int(f[0], 16) for f in (l.split() for l in sys.stdin) if len(f) == 3}; print(s['g_count'] - s['work'])")
[ -n "$delta" ] || { notok "symbols" "work / g_count not found by nm"; exit 0; }

./loop > plain.out
"$SONDE" probe --plugin ./plug.so --format=json -o out.json -e "plugin:work:$delta" \
	-- ./loop > probed.out 2> probed.err
rc=$?
check "sonde exits 0" test "$rc" -eq 0
[ "$rc" -eq 0 ] || cat probed.err
check "program output unchanged" cmp -s plain.out probed.out
check "json: probe active, 1000 hits" jq_py out.json \
	"p=d['probes'][0]; assert p['kind']=='plugin' and p['state']=='active' and p['hits']==1000, p"

# Expected values from probe_loop.c: work(i) for i = 0..999, and g_count == i
# when work(i) is entered (it is incremented after the call).
rep=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['probes'][0].get('report',''))" out.json)
echo "report: $rep"
field() { echo "$rep" | tr ' ' '\n' | awk -F= -v k="$1" '$1==k {print $2}'; }
check "pre-handler ran 1000 times" test "$(field pre)" = 1000
check "ctx hits counts this hit" test "$(field hits_ok)" = 1000
check "registers show the probed address in pre" test "$(field pc_ok)" = 1000
check "first argument (rdi) summed: 499500" test "$(field sum_arg)" = 499500
check "global read through the memory reader: sum 499500" test "$(field sum_global)" = 499500
check "memory reader never failed on the global" test "$(field read_fail)" = 0
check "memory reader reports address 0 unreadable" test "$(field null_unreadable)" = 1000
check "post-handler ran 1000 times" test "$(field post)" = 1000
# The post-handler sees rip past the displaced instruction: its length is
# read from the binary with objdump.
len=$(objdump -d loop | awk '/<work>:/ {f=1; next} f && /^ +[0-9a-f]+:/ {n=0; for (i=2;i<=NF;i++) if ($i ~ /^[0-9a-f][0-9a-f]$/) n++; else break; print n; exit}')
check "post: rip = probed address + instruction length ($len)" \
	test "$(field post_len)" = "$len" -a "$(field post_len_varies)" = 0
first=$(objdump -d --no-show-raw-insn loop | awk '/<work>:/ {f=1; next} f && /^ +[0-9a-f]+:/ {print; exit}')
case "$first" in
*"lea "*"0x1(%rdi,%rdi,2),%eax"*)
	check "post: registers show the instruction's effect (eax = 3*edi+1)" test "$(field post_rax_ok)" = 1000 ;;
*) skip "post: registers show the instruction's effect" "work starts with: $first" ;;
esac
check "post: stack pointer as in pre" test "$(field post_rsp_ok)" = 1000
check "no error handler call" test "$(field errors)" = 0
check "report line in the table too (JSON with -o, fini on stderr)" grep -q "probe 1: plugin-report pre=1000 " probed.err

# Human table: the report line is the probe's details.
"$SONDE" probe --plugin ./plug.so -e "plugin:work:$delta" -- ./loop 10 > table.out 2> table.err
check "table shows the plugin's report" grep -q "plugin-report pre=10 post=10 .*sum_arg=45 sum_global=45" table.err

# Out-of-line instruction (RIP-relative, the g_count++ line) with a post-handler:
# the second stop after the slot's instruction; the program still runs right.
L_RIP=$(grep -n MARK_RIP "$PROGS/probe_loop.c" | head -1 | cut -d: -f1)
"$SONDE" probe --plugin ./plug.so --format=json -o ool.json -e "plugin:probe_loop.c:$L_RIP" \
	-- ./loop > ool.out 2> ool.err
check "out-of-line + post: output unchanged" cmp -s plain.out ool.out
check "out-of-line + post: 1000 pre and 1000 post" jq_py ool.json \
	"r=d['probes'][0]['report']; assert ' pre=1000 ' in ' '+r+' ' and ' post=1000 ' in r and d['probes'][0]['hits']==1000, r"

# Errors: a plugin that refuses its ARG, no --plugin, a missing .so.
"$SONDE" probe --plugin ./plug.so -e "plugin:work:notanumber" -- ./loop > /dev/null 2> refuse.err
check "init refusing the probe is an error (exit 2)" test $? -eq 2
check "refusal message" grep -q "refused the probe" refuse.err
"$SONDE" probe -e "plugin:work" -- ./loop > /dev/null 2> noplug.err
check "plugin probe without --plugin refused" test $? -ne 0
check "message says --plugin is needed" grep -q -- "--plugin" noplug.err
"$SONDE" probe --plugin ./nonexistent.so -e "plugin:work" -- ./loop > /dev/null 2> miss.err
check "missing plugin refused" test $? -ne 0
check "missing plugin message" grep -q "cannot load plugin" miss.err
exit 0

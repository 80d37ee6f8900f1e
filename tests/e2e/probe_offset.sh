#!/usr/bin/env bash
# probe_offset.sh — func:F+OFF places the probe at F's address + OFF: at an
# instruction boundary (found with objdump) it counts as many calls as the
# entry probe; inside an instruction or beyond F's size it is refused (exit 2).
source "$ROOT/tests/lib.sh"

gcc -O2 -g -o loop "$PROGS/probe_loop.c" || { notok build "gcc failed"; exit 0; }

# work's instructions and size, read with objdump and nm (not with sonde).
start=$(nm loop | awk '$3 == "work" {print $1}')
size=$((16#$(nm -S loop | awk '$4 == "work" {print $2}')))
mapfile -t offs < <(objdump -d --no-show-raw-insn loop |
	awk -v s="$start" '$0 ~ "<work>:" {f=1; next} f && /^$/ {exit} f && /^ +[0-9a-f]+:/ {sub(":", "", $1); print $1}' |
	while read -r a; do echo $((16#$a - 16#$start)); done)
if [ "${#offs[@]}" -lt 2 ]; then
	skip "offset probe" "work has a single instruction"
	exit 0
fi
second=${offs[1]}

./loop 300 > plain.out
calls=$(awk '{print $2}' plain.out)    # "count N ...": the program's own count of work() calls
"$SONDE" probe --format=json -o out.json -e "func:work+$second" -e func:work -- ./loop 300 > probed.out 2> err
rc=$?
check "func:work+$second exits 0" test "$rc" -eq 0
[ "$rc" -eq 0 ] || cat err
check "program output unchanged" cmp -s plain.out probed.out
check "func:work+$second counts the program's $calls calls" jq_py out.json \
	"p=d['probes']; assert p[0]['hits'] == p[0]['calls'] == $calls == p[1]['calls'], p"
check "func:work+$second is placed at the offset" jq_py out.json \
	"w=d['probes'][0]['where']; assert w.startswith('work+0x%x' % $second), w"

# Inside the first instruction (when it is longer than one byte).
if [ "$second" -gt 1 ]; then
	"$SONDE" probe -e func:work+1 -- ./loop 3 > in.out 2> in.err
	rc=$?
	if [ "$rc" -eq 2 ] && grep -q "^sonde: error: .*func:work+1.*not on an instruction boundary" in.err; then
		ok "func:work+1 inside an instruction refused (exit 2)"
	else
		notok "func:work+1 inside an instruction refused" "exit $rc: $(cat in.err)"
	fi
fi
"$SONDE" probe -e "func:work+$size" -- ./loop 3 > big.out 2> big.err
rc=$?
if [ "$rc" -eq 2 ] && grep -q "^sonde: error: .*offset $size is outside work ($size bytes)" big.err; then
	ok "func:work+$size beyond the function refused (exit 2)"
else
	notok "func:work+$size beyond the function refused" "exit $rc: $(cat big.err)"
fi
"$SONDE" probe -e "func:work+x" -- ./loop 3 > bad.out 2> bad.err
rc=$?
if [ "$rc" -eq 1 ] && grep -q "^sonde: error: .*bad offset" bad.err; then
	ok "func:work+x is a usage error (exit 1)"
else
	notok "func:work+x is a usage error" "exit $rc: $(cat bad.err)"
fi

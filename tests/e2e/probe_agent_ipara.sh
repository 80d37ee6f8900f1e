#!/usr/bin/env bash
# probe_agent_ipara.sh — a probed function's return keeps every register of
# its caller.  tests/progs/ipa_regs.c built with gcc -O2 keeps its loop state
# in call-clobbered registers across calls of two small functions of the same
# file (-fipa-ra: gcc knows they do not write them); func probes on the agent
# (a jump site and an int3 site) replace the return addresses, and the
# agent's exit stub must put all of them back.  The program prints its own
# sums: the same with and without the probes, on the agent and on ptrace, and
# the calls counted are the program's.
source "$ROOT/tests/lib.sh"

gcc -O2 -g -o ipa "$PROGS/ipa_regs.c" || { notok build "gcc failed"; exit 0; }
# The precondition: main saves no callee-saved register, so what it keeps
# across the calls is in call-clobbered ones.
if objdump -d --no-show-raw-insn ipa | awk '/<main>:/ {f=1; next} f && /^$/ {exit} f' |
	grep -Eq 'push +%(rbx|rbp|r12|r13|r14|r15)'; then
	skip "loop state in call-clobbered registers" "this gcc saved callee-saved registers in main"
	exit 0
fi
ok "gcc -O2 keeps main's loop state in call-clobbered registers (no callee-saved register pushed)"

for n in 1000000 20000; do
	./ipa $n > "plain.$n"
done
"$SONDE" probe -e func:tiny -e func:leaf --format=json -o agent.json -- ./ipa 1000000 > agent.out 2> agent.err
check "agent: sonde exits 0" test $? -eq 0
check "agent: program output unchanged (1000000 calls)" cmp -s plain.1000000 agent.out
check "agent: both functions counted 1000000 calls and returns, one int3 site (tiny) and one jump site (leaf)" \
	jq_py agent.json "p=d['probes']; assert d['target']['engine']=='agent' and [(q['calls'],q['returns']) for q in p]==[(1000000,1000000)]*2 and p[0].get('int3_sites')==1 and not p[1].get('int3_sites'), p"
"$SONDE" probe --engine=ptrace -e func:tiny -e func:leaf -o /dev/null -- ./ipa 20000 > ptrace.out 2> ptrace.err
check "ptrace: program output unchanged (20000 calls)" cmp -s plain.20000 ptrace.out
"$SONDE" probe -e time:tiny -e time:leaf -o /dev/null -- ./ipa 1000000 > time.out 2> time.err
check "agent time probes: program output unchanged" cmp -s plain.1000000 time.out

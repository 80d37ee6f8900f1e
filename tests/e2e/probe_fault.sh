#!/usr/bin/env bash
# probe_fault.sh — the error handler (seed 004): a probe whose displaced
# instruction faults.  For an out-of-line store through NULL, an emulated
# `jmp *(%rdi)` through NULL and an out-of-line `ud2`, each reached on the 5th
# iteration: the program dies of the same signal as without sonde, the probe
# is reported failed/removed with exactly the hits before and at the fault,
# the plugin's error handler runs once with the signal, and sonde exits on
# its own.  A program that handles the signal (siglongjmp) sees the same
# signal, code, address and faulting pc as without sonde and runs on.
source "$ROOT/tests/lib.sh"

src="$PROGS/probe_fault.c"
gcc -O2 -g -o fault "$src" || { notok build "gcc failed"; exit 0; }
cc -shared -fPIC -I"$ROOT/include" -o plug.so "$PROGS/probe_plugin.c" || { notok build "plugin"; exit 0; }
L_STORE=$(grep -n '/\* MARK_STORE' "$src" | cut -d: -f1)

# The store line must start with the store itself (a property of the binary).
first=$(objdump -d -l --no-show-raw-insn fault | awk -v m="probe_fault.c:$L_STORE" \
	'index($0, m) && $0 !~ /discriminator/ {f=1; next} f && /^ +[0-9a-f]+:/ {print; exit}')
case "$first" in
*"mov "*",(%rdi)"*) ok "store line starts with the store ($first)" ;;
*) notok "store line starts with the store" "compiler emitted: $first" ;;
esac

# mode and probe location; each location gets a line probe and a plugin probe
for c in "store line:probe_fault.c:$L_STORE" "jmp line:jump_through" "ud2 line:ud2_here"; do
	set -- $c
	mode=$1 loc=$2 plug=plugin:${2#line:}
	# Hits before and at the fault: store and jmp are reached on every
	# iteration, the fault is the 5th; ud2_here only on the 5th.
	exp_hits=5; [ "$mode" = ud2 ] && exp_hits=1
	exp_post=$((exp_hits - 1))   # the post-handler runs after every hit but the faulting one

	# --- the program dies: same signal as without sonde
	./fault "$mode" > plain.out 2>/dev/null; prc=$?
	check "$mode: plain run dies of a signal" test "$prc" -gt 128
	psig=$((prc - 128))
	timeout 30 "$SONDE" probe --plugin ./plug.so --format=json -o "$mode.json" \
		-e "$loc" -e "$plug" -- ./fault "$mode" > probed.out 2> probed.err
	rc=$?
	check "$mode: sonde exits on its own, status 0" test "$rc" -eq 0
	check "$mode: program output up to the fault unchanged" cmp -s plain.out probed.out
	check "$mode: program killed by the same signal ($psig)" jq_py "$mode.json" \
		"t=d['target']; assert t.get('signal')==$psig and 'exit_status' not in t, t"
	for id in 1 2; do
		check "$mode: probe $id failed, removed, reported, $exp_hits hits" jq_py "$mode.json" \
			"p=d['probes'][$id-1]; assert p['state']=='failed' and 'faulted' in p['error'] and 'removed' in p['error'] and 'signal $psig' in p['error'] and p['hits']==$exp_hits, p"
		check "$mode: warning for probe $id on stderr" grep -q "probe $id (.*faulted.*probe removed" probed.err
	done
	check "$mode: error handler ran once with signal $psig, on the instruction" jq_py "$mode.json" \
		"r=' '+d['probes'][1]['report']+' '; assert ' errors=1 ' in r and ' signo=$psig ' in r and ' err_pc_ok=1 ' in r and ' pre=$exp_hits ' in r and ' post=$exp_post ' in r, r"

	# --- the program handles the signal: same notes as without sonde
	./fault "$mode" handle > plain_h.out 2>&1; prc=$?
	check "$mode handle: plain run exits 0 after 4 faults" grep -q "faults 4" plain_h.out
	timeout 30 "$SONDE" probe --plugin ./plug.so --format=json -o "$mode.h.json" \
		-e "$loc" -e "$plug" -- ./fault "$mode" handle > probed_h.out 2> probed_h.err
	rc=$?
	check "$mode handle: sonde exits 0" test "$rc" -eq 0
	check "$mode handle: output (signal, code, address, faulting pc) unchanged" cmp -s plain_h.out probed_h.out
	check "$mode handle: program exit status kept" jq_py "$mode.h.json" \
		"assert d['target'].get('exit_status')==$prc, d['target']"
	check "$mode handle: probes removed at the first fault, $exp_hits hits" jq_py "$mode.h.json" \
		"assert all(p['state']=='failed' and p['hits']==$exp_hits for p in d['probes']), d['probes']"
	check "$mode handle: error handler ran once" jq_py "$mode.h.json" \
		"r=' '+d['probes'][1]['report']+' '; assert ' errors=1 ' in r and ' signo=$psig ' in r, r"
done
exit 0

#!/usr/bin/env bash
# probe_inline.sh — var probes at a line of a function inlined into several
# callers (gcc and clang -O2 -g): every inlined copy is probed (as many sites
# as gdb's breakpoint locations), the inlined function's parameter (a
# register) and its local on the caller's stack (DW_OP_fbreg on the frame base
# of the out-of-line caller) read the values the program prints itself.
source "$ROOT/tests/lib.sh"

src="$PROGS/probe_inline.c"
L=$(grep -n '/\* MARK_INLINE' "$src" | head -1 | cut -d: -f1)

for cc in gcc clang; do
	if ! command -v $cc >/dev/null; then
		skip "$cc: inlined var probes" "$cc not installed"
		continue
	fi
	$cc -O2 -g -o inl.$cc "$src" || { notok "$cc build" "$cc failed"; continue; }
	# The program must really hold inlined copies of scale(), else the test
	# says nothing about inlining.
	ncopies=$(readelf --debug-dump=info inl.$cc | grep -c DW_TAG_inlined_subroutine)
	if [ "$ncopies" -lt 2 ]; then
		skip "$cc: inlined var probes" "$cc did not inline scale() ($ncopies inlined copies in the DWARF)"
		continue
	fi
	ok "$cc: the program has $ncopies inlined copies (DW_TAG_inlined_subroutine)"
	./inl.$cc > plain.$cc.out; plain_rc=$?
	"$SONDE" probe --format=json -o out.$cc.json \
		-e "var:probe_inline.c:$L:x" -e "var:probe_inline.c:$L:cell" -e "line:probe_inline.c:$L" \
		-- ./inl.$cc > probed.$cc.out 2> probed.$cc.err
	rc=$?
	check "$cc: launch exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { cat probed.$cc.err; continue; }
	check "$cc: program output unchanged" cmp -s plain.$cc.out probed.$cc.out
	check "$cc: program exit status kept" jq_py out.$cc.json "assert d['target']['exit_status'] == $plain_rc"
	# Expected values: the program's own "x count N min A max B sum S" lines.
	for var in x cell; do
		read -r n mn mx sm <<<"$(awk -v v=$var '$1 == v && $2 == "count" {print $3, $5, $7, $9}' plain.$cc.out)"
		check "$cc: var $var count/min/max/sum equal the program's ($n $mn $mx $sm)" jq_py out.$cc.json \
			"p=[p for p in d['probes'] if p['spec'].endswith(':$var')][0]; assert (p['count'],p['unavailable'],p['min'],p['max'],p['sum'])==($n,0,$mn,$mx,$sm), p"
	done
	# Whether the local really lives on the caller's frame (the frame-base path)
	# is the compiler's choice: said, not asserted.
	if jq_py out.$cc.json "p=[p for p in d['probes'] if p['spec'].endswith(':cell')][0]; assert 'frame base' in p['where'], p" 2>/dev/null; then
		ok "$cc: cell is read through the out-of-line caller's frame base"
	else
		skip "$cc: cell is read through the out-of-line caller's frame base" "$cc placed it elsewhere"
	fi
	# The line probe hits once per call of scale(): the program's count.
	n=$(grep "^x count" plain.$cc.out | awk '{print $3}')
	check "$cc: line probe hits every inlined copy ($n calls)" jq_py out.$cc.json \
		"p=[p for p in d['probes'] if p['kind']=='line'][0]; assert p['hits']==$n, p"
	if command -v gdb >/dev/null; then
		# gdb's breakpoint locations for the line, against sonde's sites.
		glocs=$(gdb -nx -batch -ex "break probe_inline.c:$L" ./inl.$cc 2>/dev/null | sed -n 's/.*(\([0-9]*\) locations).*/\1/p')
		if [ -n "$glocs" ]; then
			check "$cc: as many sites as gdb's locations ($glocs)" jq_py out.$cc.json \
				"p=[p for p in d['probes'] if p['kind']=='line'][0]; assert p['addresses']==$glocs, p"
		else
			skip "$cc: as many sites as gdb's locations" "gdb reports a single location"
		fi
	else
		skip "$cc: as many sites as gdb's locations" "gdb not installed"
	fi
done

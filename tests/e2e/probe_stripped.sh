#!/usr/bin/env bash
# probe_stripped.sh — func probes on a stripped program: with its debug file
# (objcopy --only-keep-debug) in a build-id tree named by SONDE_DEBUG_DIRS, or
# in a debuginfod client cache ($DEBUGINFOD_CACHE_PATH), the function is found
# by name and its caller named as nm names it on the unstripped copy; without
# the debug file, the caller is "module+0xOFF" with OFF the return address
# objdump shows after the call.  Nothing is fetched from the network.
source "$ROOT/tests/lib.sh"

src="$PROGS/probe_loop.c"
gcc -O2 -g -o full "$src" || { notok build "gcc failed"; exit 0; }
bid=$(readelf -n full | awk '/Build ID/ {print $3}')
[ -n "$bid" ] || { skip "stripped probes" "the linker wrote no build-id"; exit 0; }
mkdir -p "dbg/.build-id/${bid:0:2}" "cache/$bid" &&
objcopy --only-keep-debug full "dbg/.build-id/${bid:0:2}/${bid:2}.debug" &&
cp "dbg/.build-id/${bid:0:2}/${bid:2}.debug" "cache/$bid/debuginfo" &&
strip --strip-all -o loop full &&
strip --strip-all -K work -o loopk full || { notok split "objcopy/strip failed"; exit 0; }
check "loop has no DWARF and no .symtab" bash -c '! readelf -S loop | grep -qE "\.debug_info|\.symtab"'
check "loopk keeps the symbol work only" bash -c \
	'nm loopk | grep -q " work$" && ! nm loopk | grep -q " main$"'

# The caller, from the unstripped copy: the function holding the call to
# work, and the address of the instruction after that call.
call=$(objdump -d --no-show-raw-insn full | awk '/^[0-9a-f]+ <.*>:$/ {fn=$2} /call.*<work>/ {print fn, $1; exit}')
caller=${call%% *}; caller=${caller#<}; caller=${caller%>:}
call_at=${call##* }; call_at=${call_at%:}
ret=$(objdump -d --no-show-raw-insn full | awk -v a="$call_at" '$1 == a":" {f=1; next} f && /^ +[0-9a-f]+:/ {sub(":", "", $1); print $1; exit}')
[ -n "$caller" ] && [ -n "$ret" ] || { notok "caller from objdump" "no call to work found: $call"; exit 0; }

./loop > plain.out; plain_rc=$?
for how in debug_dirs debuginfod_cache; do
	if [ $how = debug_dirs ]; then
		env="SONDE_DEBUG_DIRS=/nonexistent:$PWD/dbg"
	else
		env="DEBUGINFOD_CACHE_PATH=$PWD/cache"
	fi
	env $env "$SONDE" probe --format=json -o $how.json -e func:work -- ./loop > $how.out 2> $how.err
	rc=$?
	check "$how: launch exits 0" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { cat $how.err; continue; }
	check "$how: program output unchanged" cmp -s plain.out $how.out
	check "$how: exit status kept" jq_py $how.json "assert d['target']['exit_status'] == $plain_rc"
	check "$how: work found by name, 1000 calls" jq_py $how.json \
		"p=d['probes'][0]; assert p['calls']==1000 and 'probe_loop.c:' in p['where'], p"
	check "$how: the caller is named $caller (nm of the unstripped copy)" jq_py $how.json \
		"p=d['probes'][0]; assert [(c['name'], c['calls']) for c in p['callers']]==[('$caller', 1000)], p"
done

# Without the debug file: no name to find, a clear error.
DEBUGINFOD_CACHE_PATH=$PWD/nothing "$SONDE" probe -e func:work -- ./loop > nodbg.out 2> nodbg.err
rc=$?
if [ $rc -ge 1 ] && [ $rc -lt 128 ] && grep -q "^sonde: error: .*no function named 'work'" nodbg.err; then
	ok "no debug file: func:work refused with a clear error (exit $rc)"
else
	notok "no debug file: func:work refused with a clear error" "exit $rc: $(head -c 300 nodbg.err)"
fi

# .symtab keeping work only: the caller is the module and the return address.
DEBUGINFOD_CACHE_PATH=$PWD/nothing "$SONDE" probe --format=json -o kept.json -e func:work -- ./loopk > kept.out 2> kept.err
rc=$?
check "symbol kept, no debug file: launch exits 0" test "$rc" -eq 0
check "symbol kept, no debug file: the caller is loopk+0x$ret" jq_py kept.json \
	"p=d['probes'][0]; assert [(c['name'], c['calls']) for c in p['callers']]==[('loopk+0x$ret', 1000)], p"
DEBUGINFOD_CACHE_PATH=$PWD/nothing "$SONDE" probe -e func:work -- ./loopk 2> kept.table > /dev/null
check "symbol kept, no debug file: the table names the caller loopk+0x$ret" grep -q "callers: loopk+0x$ret x1000" kept.table

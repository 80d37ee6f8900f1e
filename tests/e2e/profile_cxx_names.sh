# C++ names (tests/progs/cxx_names.cpp): replay prints a demangled name with
# its own parameter list (never "()()"); callers-callees selects operator()
# and template instances whose names hold spaces, typed with or without the
# spaces.  Expected counts are the program's own.
. "$ROOT/tests/lib.sh"
"$SONDE_CXX_BIN" -O1 -g "$PROGS/cxx_names.cpp" -o cxxn || { notok build "sonde-c++ failed"; exit 1; }
./cxxn 6 > plain.out
"$SONDE" record --trace -- ./cxxn 6 > out.txt 2> rec.err || notok record "$(head -c 300 rec.err)"
check "program output unchanged" cmp -s plain.out out.txt
n_op=$(awk '$1 == "operator()" {print $2}' plain.out)
n_id=$(grep '^pick<int, double> ' plain.out | awk '{print $NF}')
n_c=$(grep '^pick<int, char> ' plain.out | awk '{print $NF}')

"$SONDE" replay > replay.txt 2> replay.err || notok "replay" "$(head -c 300 replay.err)"
if grep -q ')()' replay.txt; then notok "replay: no '()()'" "$(grep -m2 ')()' replay.txt)"; else ok "replay: no '()()'"; fi
check "replay: operator() calls printed as 'shapes::Adder::operator()(int) const;' x$n_op" \
	test "$(grep -c '| *shapes::Adder::operator()(int) const;$' replay.txt)" = "$n_op"
check "replay: a C function keeps its '()' (main() {)" grep -q '| main() {$' replay.txt

cc_calls() { "$SONDE" callers-callees --format=json "$1" 2> cc.err | python3 -c "import json,sys; print(json.load(sys.stdin)['function']['calls'])" 2>/dev/null; }
for sel in 'shapes::Adder::operator()' 'Adder::operator()' 'operator()' 'shapes::Adder::operator()(int) const' \
	'shapes::Adder::operator() (int) const'; do
	got=$(cc_calls "$sel")
	check "callers-callees '$sel': $n_op calls" test "$got" = "$n_op"
done
for sel in 'pick<int, double>' 'pick<int,double>' 'int pick<int, double>(int, double)' 'int pick<int,double>(int,double)'; do
	got=$(cc_calls "$sel")
	check "callers-callees '$sel': $n_id calls" test "$got" = "$n_id"
done
got=$(cc_calls 'pick<int,char>')
check "callers-callees 'pick<int,char>': $n_c calls" test "$got" = "$n_c"
"$SONDE" callers-callees pick > amb.out 2> amb.err
rc=$?
if [ $rc -eq 1 ] && grep -q "^sonde: error: 'pick' is ambiguous (2 functions match)" amb.err &&
   grep -q "pick<int, double>(int, double)" amb.err && grep -q "pick<int, char>(int, char)" amb.err; then
	ok "'pick' (both instances): ambiguous, exit 1, both listed"
else
	notok "'pick' is ambiguous" "exit $rc: $(head -c 400 amb.err)"
fi

# -F / -N globs match the demangled names (the program links libstdc++, whose
# __cxa_demangle the runtime uses), and the mangled ones still.
filt() { # NAME OPTS... : record --trace with the filter, print "calls name" per function
	local d=$1; shift
	"$SONDE" record --trace -o "$d" "$@" -- ./cxxn 6 > /dev/null 2> "$d.err" || { echo "record failed: $(head -c 200 "$d.err")"; return; }
	"$SONDE" report -i "$d" --format=json | python3 -c "
import json, sys
print(sorted((f['name'], f['calls']) for f in json.load(sys.stdin)['functions']))"
}
got=$(filt f1 -F 'shapes::Adder::operator()*')
check "-F 'shapes::Adder::operator()*': only operator(), $n_op calls" \
	test "$got" = "[('shapes::Adder::operator()(int) const', $n_op)]"
got=$(filt f2 -N '*pick<*')
case "$got" in
*pick*|"record failed"*) notok "-N '*pick<*': no pick instance traced" "$got" ;;
*"'main', 1"*"operator()(int) const', $n_op"*) ok "-N '*pick<*': no pick instance traced, main and operator() are" ;;
*) notok "-N '*pick<*': main and operator() traced" "$got" ;;
esac
got=$(filt f3 -F '*pick<int, char>*')
check "-F '*pick<int, char>*': only that instance, $n_c calls" test "$got" = "[('int pick<int, char>(int, char)', $n_c)]"
got=$(filt f4 -F '_ZNK6shapes5AdderclEi')
check "-F with the mangled name still matches" test "$got" = "[('shapes::Adder::operator()(int) const', $n_op)]"

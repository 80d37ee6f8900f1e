# Real programs nobody here wrote, from Debian source packages, built with
# sonde-cc at -O2: zstd compressing 4 MB and SQLite's speedtest1.  Their output
# is unchanged under sonde, and their call counts equal uftrace's function
# for function: sonde instruments the functions of the machine code, not the
# inlined copies of the source.  zstd: `uftrace record --no-libcall` of a -pg
# build, every function compared.  SQLite: `uftrace record -P . --no-libcall`
# of the plain gcc -O2 build that the patch_* tests use, every function uftrace
# can patch (it declines 13 of the 595 speedtest1 runs; of zstd's it would
# decline 26 of 167, hence zstd's -pg build): a -pg build of SQLite would be a
# third build of its amalgamation, 56 s of CPU on a cold run.  Builds are
# cached (SONDE_TEST_CACHE).
# test-timeout: 1500 (the first run builds real programs into the test cache: slow under load)
. "$ROOT/tests/lib.sh"
have_uftrace=1
command -v uftrace >/dev/null || have_uftrace=0
sh "$ROOT/tools/gen-data.sh" data.txt 4

# build NAME VARIANT ARGS...: its sonde-cc build, and the build uftrace
# records (NAME-VARIANT, made with ARGS) (tests/lib.sh's real_build: cached,
# shared with the tests that ask for the same)
build() {
	local name=$1 variant=$2 rc; shift 2
	real_build "$name-sonde" "$name" "$SONDE_CC_BIN"; rc=$?
	if [ $rc = 2 ]; then
		skip "$name from Debian source" "could not fetch it ($(tail -1 fetch-$name-sonde.log))"; return 1
	fi
	[ $rc = 0 ] || { notok "$name builds with sonde-cc" "$(tail -3 build-$name-sonde.log)"; return 1; }
	ok "$name from Debian source builds with sonde-cc"
	[ $have_uftrace = 1 ] || return 0
	real_build "$name-$variant" "$name" "$@" || { notok "$name builds with $*" "$(tail -3 build-$name-$variant.log)"; return 1; }
}

# against_uftrace SONDE_JSON LABEL MIN_FUNCS all|subset COMMAND...: uftrace
# records the program (all: a -pg build; subset: a plain build with -P ., every
# function uftrace can patch) and the counts are compared.  uftrace itself is not always the same
# from run to run (once, under the sanitizer pass's load, it counted speedtest1's
# main twice); when the counts differ, uftrace records a second time and that
# run decides, and the first run's difference is shown as a comment.
against_uftrace() {
	local json=$1 label=$2 min=$3 mode=$4 out; shift 4
	local pflag=(); [ "$mode" = subset ] && pflag=(-P .)
	for try in 1 2; do
		rm -rf uf.data
		uftrace record "${pflag[@]}" --no-libcall -d uf.data "$@" >/dev/null 2>uf.err || { notok "uftrace on $label" "$(tail -2 uf.err)"; return; }
		out=$(python3 "$ROOT/tests/uftrace_compare.py" "$json" uf.data "$label" "$min" "$mode")
		case $out in ok*) break ;; esac
		[ $try = 1 ] && echo "# uftrace run 1 differed, recording again: $out"
	done
	echo "$out"
}

if build zstd pg cc -pg; then
	zs=$cache/zstd-sonde/zstd
	"$zs" -3 -q -c data.txt >plain.zst
	"$SONDE" record -o zstd.data -- "$zs" -3 -q -c data.txt >rec.zst 2>rec.err
	check "zstd: compressed output byte-identical under sonde" cmp -s plain.zst rec.zst
	"$SONDE" report -i zstd.data --format=json >zstd.json
	if [ $have_uftrace = 1 ]; then
		against_uftrace zstd.json "zstd -3" 100 all "$cache/zstd-pg/zstd" -3 -q -c data.txt
	fi
fi

if build sqlite plain cc; then
	st=$cache/sqlite-sonde/speedtest1
	# speedtest1 prints timings; its exit status and the list of tests it ran are what must not change
	"$st" --size 5 --testset main >plain.txt 2>&1; prc=$?
	"$SONDE" record -o sq.data -- "$st" --size 5 --testset main >rec.txt 2>rec.err; rrc=$?
	if [ "$prc" = "$rrc" ]; then ok "speedtest1: same exit status under sonde ($prc)"
	else notok "speedtest1: same exit status under sonde ($prc)" "sonde exited $rrc: $(tail -n 3 rec.err)"; fi
	# "  100 - 50000 INSERTs into table with no index ......  0.052s": number and name
	for f in plain rec; do
		grep -E '^ *[0-9]+ - ' $f.txt | sed -e 's/ *[0-9.]*s$//' -e 's/\.*$//' >$f.tests
	done
	check "speedtest1: the same $(wc -l <plain.tests) tests run under sonde" \
		sh -c "[ $(wc -l <plain.tests) -gt 10 ] && cmp -s plain.tests rec.tests"
	"$SONDE" report -i sq.data --format=json >sq.json
	if [ $have_uftrace = 1 ]; then
		against_uftrace sq.json "SQLite speedtest1 --size 5" 300 subset "$cache/sqlite-plain/speedtest1" --size 5 --testset main
	fi
fi
[ $have_uftrace = 1 ] || skip "call counts equal uftrace's" "uftrace not installed"

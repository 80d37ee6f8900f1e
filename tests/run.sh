#!/usr/bin/env bash
# tests/run.sh — runs every unit test binary and every end-to-end script.
# Each test prints lines "ok - NAME" or "not ok - NAME: why" (and "skip - NAME: why",
# which counts as neither passed nor failed and is listed at the end); a test
# that prints none of these lines fails.
# Ends with "N passed, N failed".  Exit status non-zero if anything failed.
set -u
: "${BUILD:?BUILD must point at the build directory}"
export BUILD SONDE="$BUILD/bin/sonde" SONDE_CC="${SONDE_CC_REAL:-cc}"
root=$(cd "$(dirname "$0")/.." && pwd)
export ROOT="$root"
filter="${TESTS:-}"
pass=0 fail=0 skip=0
failed=() skipped=()
out=$(mktemp -d /tmp/sonde-tests.XXXXXX)
run_one() { # name, command...
	local name=$1; shift
	[ -n "$filter" ] && [[ "$name" != *$filter* ]] && return
	local log="$out/$(echo "$name" | tr '/' '_').log"
	# a script may ask for more time with a line "# test-timeout: SECONDS"
	local limit=${TEST_TIMEOUT:-600} own
	own=$(sed -n 's/^# test-timeout: \([0-9][0-9]*\).*$/\1/p' "${!#}" 2>/dev/null | head -1)
	[ -n "$own" ] && [ -z "${TEST_TIMEOUT:-}" ] && limit=$own
	local scratch="${log%.log}.scratch"
	( cd "$out" && SONDE_TEST_SCRATCH="$scratch" timeout "$limit" "$@" ) >"$log" 2>&1
	local rc=$?
	local p f s
	p=$(grep -c '^ok - ' "$log"); f=$(grep -c '^not ok - ' "$log"); s=$(grep -c '^skip - ' "$log")
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1; echo "not ok - $name: exited with status $rc" >>"$log"
	elif [ $((p + f + s)) -eq 0 ]; then
		f=1; echo "not ok - $name: printed no ok, not ok or skip line" >>"$log"
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	grep -E '^(ok|not ok|skip) - ' "$log" | sed "s|^|[$name] |"
	# the scratch directories of a test that passed go (a whole run left
	# gigabytes of recordings behind); a failed test's stay, named in its log
	if [ "$f" -eq 0 ] && [ -f "$scratch" ]; then
		while IFS= read -r d; do
			case "$d" in */sonde-e2e.*) rm -rf -- "$d" ;; esac
		done < "$scratch"
	elif [ -f "$scratch" ]; then
		sed 's/^/scratch kept: /' "$scratch" >>"$log"
	fi
	if [ "$f" -gt 0 ]; then
		failed+=("$name")
		echo "---- $name log (last 30 lines) ----"; tail -n 30 "$log"; echo "----"
	fi
	while IFS= read -r l; do skipped+=("$name: $l"); done < <(grep '^skip - ' "$log")
}
for t in "$BUILD"/tests/unit/*; do
	[ -x "$t" ] && run_one "unit/$(basename "$t")" "$t"
done
for t in "$root"/tests/e2e/*.sh; do
	[ -f "$t" ] && run_one "e2e/$(basename "$t" .sh)" bash "$t"
done
if [ ${#skipped[@]} -gt 0 ]; then
	echo "skipped (not counted as passed):"; printf '  %s\n' "${skipped[@]}"
fi
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

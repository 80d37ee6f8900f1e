# fuzz_reader.sh — the readers of a recording (src/data, src/analysis,
# src/export and the reading commands) on damaged and crafted recordings:
# they must never crash, hang or run out of memory, and a reader that gives up
# exits 2 with one "sonde: error:" line.  Three parts (docs/FUZZING.md):
#  1. libFuzzer: tests/fuzz/fuzz_reader.c (make fuzz: clang, ASan, UBSan) for
#     FUZZ_TIME seconds (60) from a seed corpus of real recordings made here
#     (profile, --trace, --locks, --locks=events, --locks --trace, a crash,
#     probe --record) and the crafted ones of tests/fuzz/craft.py; any crash,
#     leak, timeout or OOM is "not ok" with its reproducer and first stack
#     lines.  "skip" when clang's libFuzzer runtime is missing.  FUZZ_CORPUS=DIR
#     keeps (and reuses) the corpus; FUZZ_JOBS=N runs N fuzzers.
#  2. the crafted recordings (sibling and child cycles, a 200000-deep tree,
#     times near 2^63, lock ids near 2^32, a deep and a wrapping timeline, a
#     1 GiB record length, unterminated strings, a FIFO where a file should
#     be), every reading command on each;
#  3. without libFuzzer: the real recordings with random bytes flipped (40
#     seeds; with and without their checksums mended, so that the damage
#     reaches the contents) and cut at random points, every reading command
#     with --format=json on each: exit status 0 or 2, never a signal, never
#     more than 10 s, and exit 2 only with a "sonde: error:" line.
# test-timeout: 1500 (libFuzzer 60 s, then 3000 runs of the reading commands: slow under ASan and load)
. "$ROOT/tests/lib.sh"
FUZZ_TIME=${FUZZ_TIME:-60}
FUZZ_JOBS=${FUZZ_JOBS:-1}

# ---- recordings of real runs: the seeds ----
"$SONDE_CC_BIN" -O1 -g -pthread "$ROOT/tests/fuzz/seedprog.c" -o seedprog || { notok build "sonde-cc failed"; exit 1; }
gcc -O2 -g -o loop "$PROGS/probe_loop.c" || { notok build "gcc failed"; exit 1; }
rec() { # DIR, record options and program...
	local d=$1; shift
	"$SONDE" record -o "$d" "$@" >/dev/null 2>"$d.err"
	[ -s "$d/profile.sonde" ] || notok "record $d" "$(tail -3 "$d.err")"
}
mkdir -p recs
rec recs/prof -- ./seedprog
rec recs/trace --trace -- ./seedprog
rec recs/locks --locks -- ./seedprog
rec recs/lockev --locks=events -- ./seedprog
rec recs/locktrace --locks --trace -- ./seedprog
rec recs/crash --trace -- ./seedprog crash
rec recs/crashp -- ./seedprog crash
rec recs/tracecount --trace --timing=auto -- ./loop 20 # REC_COUNTED: a plain build's counted functions
L_VAR=$(grep -n MARK_VAR "$PROGS/probe_loop.c" | head -1 | cut -d: -f1)
"$SONDE" probe -o recs/probe --record -e func:work -e "var:probe_loop.c:$L_VAR:v" -- ./loop 20 >/dev/null 2>probe.err ||
	notok "probe --record" "$(tail -3 probe.err)"
python3 "$ROOT/tests/fuzz/craft.py" crafted "$PWD/seedprog" >/dev/null || notok "crafted recordings" "craft.py failed"
mkfifo fifo_in_place && mkdir -p crafted/fifo_profile && mkfifo crafted/fifo_profile/profile.sonde
mkdir -p crafted/fifo_module && cp recs/prof/profile.sonde crafted/fifo_module/ &&
	python3 - crafted/fifo_module/profile.sonde "$PWD/fifo_in_place" <<'PY'
# the module path of the recording replaced by a FIFO's (same length or shorter), checksum mended
import struct, sys, zlib
path, fifo = sys.argv[1], sys.argv[2].encode()
b = bytearray(open(path, "rb").read())
off = 16
while off + 16 <= len(b):
    t, crc, n = struct.unpack_from("<IIQ", b, off)
    if t == 4:
        b[off + 16 + 56:off + 16 + 56 + 512] = fifo.ljust(512, b"\0")
        struct.pack_into("<I", b, off + 4, zlib.crc32(bytes(b[off + 16:off + 16 + n])) & 0xFFFFFFFF)
    off += 16 + n
open(path, "wb").write(bytes(b))
PY

# every reading command, --format=json where there is one
COMMANDS='report --format=json
tree --format=json
info --format=json
callers-callees --format=json leaf
replay --format=json
locks --format=json
export --format=callgrind -o /dev/null
export --format=folded -o /dev/null
export --format=chrome -o /dev/null
export --format=perfetto -o /dev/null
export --format=pprof -o /dev/null
flamegraph -o /dev/null'
export COMMANDS

# ---- 1. libFuzzer ----
fuzz_part() {
	if ! command -v "${FUZZ_CC:-clang}" >/dev/null; then
		skip "libFuzzer $FUZZ_TIME s" "no clang (apt-get install -y clang libclang-rt-14-dev)"
		return
	fi
	printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >probe_fuzzer.c
	if ! "${FUZZ_CC:-clang}" -fsanitize=fuzzer,address,undefined probe_fuzzer.c -o probe_fuzzer >/dev/null 2>&1; then
		skip "libFuzzer $FUZZ_TIME s" "clang's libFuzzer runtime is missing (apt-get install -y libclang-rt-14-dev)"
		return
	fi
	# BUILD spelled as the developer's own builds spell it (relative to the
	# tree when inside it), so that the objects' dependency files apply
	local bd=$BUILD
	case $bd in "$ROOT"/*) bd=${bd#"$ROOT"/} ;; esac
	if ! make -C "$ROOT" -j2 BUILD="$bd" fuzz >make_fuzz.log 2>&1; then
		notok "build the fuzzer (make fuzz)" "$(grep -m3 -E 'error' make_fuzz.log)"
		return
	fi
	local fz="$BUILD/fuzz/fuzz_reader"
	local corpus=${FUZZ_CORPUS:-$PWD/corpus}
	mkdir -p "$corpus" seeds artifacts
	for d in recs/* crafted/*; do
		[ -f "$d/profile.sonde" ] && [ ! -p "$d/profile.sonde" ] &&
			python3 "$ROOT/tests/fuzz/pack.py" pack "$d" "seeds/$(basename "$d")"
	done
	# inputs that once crashed a reader (tests/fuzz/regress: what each found, by its name)
	cp "$ROOT"/tests/fuzz/regress/* seeds/
	# the 6 MB deep chain would set -max_len: keep the inputs small
	rm -f seeds/deep_chain
	local jobs=()
	[ "$FUZZ_JOBS" -gt 1 ] && jobs=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
	ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16} "$fz" -max_total_time="$FUZZ_TIME" -rss_limit_mb=2048 -timeout=10 \
		-max_len=16384 -close_fd_mask=3 -print_final_stats=1 -dict="$ROOT/tests/fuzz/fuzz_reader.dict" \
		-artifact_prefix="$PWD/artifacts/" "${jobs[@]}" "$corpus" seeds >fuzz.log 2>&1
	local rc=$?
	[ "$FUZZ_JOBS" -gt 1 ] && cat fuzz-*.log >>fuzz.log 2>/dev/null
	local found
	found=$(ls artifacts 2>/dev/null | head -1)
	local runs
	runs=$(grep -h -o 'stat::number_of_executed_units: *[0-9]*' fuzz.log | awk '{s += $2} END {print s + 0}')
	if [ -n "$found" ] || [ $rc -ne 0 ]; then
		notok "libFuzzer $FUZZ_TIME s on the readers" "${found:-exit status $rc}: reproduce with $fz $PWD/artifacts/$found (SONDE_FUZZ_DIR=DIR keeps the recording)"
		grep -m1 -E 'ERROR|SUMMARY|check failed|runtime error' fuzz.log
		grep -E '^ +#[0-9]+ ' fuzz.log | grep -v -E 'in (fuzzer::|__sanitizer|__asan|__interceptor|LLVMFuzzer|main |_start|__libc)' | head -8
	else
		ok "libFuzzer $FUZZ_TIME s on the readers: $runs runs, no crash, leak, timeout or OOM"
	fi
}
fuzz_part

# ---- 2 and 3: the real binary on crafted and damaged recordings ----
python3 - <<'PY'
import concurrent.futures, os, random, shutil, struct, subprocess, zlib
SONDE = os.environ["SONDE"]
CMDS = [c.split() for c in os.environ["COMMANDS"].splitlines() if c.strip()]
FILES = ["profile.sonde", "events.sonde"]

def run_all(d, label, bad):
    """Every reading command on recording d: 0 or 2 (with its error line), in time."""
    for cmd in CMDS:
        try:
            p = subprocess.run([SONDE, cmd[0], "-i", d] + cmd[1:], capture_output=True, timeout=10)
        except subprocess.TimeoutExpired:
            bad.append(f"{label}: '{' '.join(cmd)}' still running after 10 s")
            continue
        err = p.stderr.decode(errors="replace")
        rc = p.returncode
        # callers-callees may not find its function in a damaged recording: a usage error
        if cmd[0] == "callers-callees" and rc == 1 and "\nsonde: error:" in "\n" + err:
            continue
        if rc < 0:
            bad.append(f"{label}: '{' '.join(cmd)}' killed by signal {-rc}: {err[-300:]}")
        elif rc not in (0, 2):
            bad.append(f"{label}: '{' '.join(cmd)}' exit {rc}: {err[:300]}")
        elif rc == 2 and not any(l.startswith("sonde: error:") for l in err.splitlines()):
            bad.append(f"{label}: '{' '.join(cmd)}' exit 2 without a 'sonde: error:' line: {err[:300]}")

def say(bad, name, n):
    if bad:
        print(f"not ok - {name}: {len(bad)} failures; first: " + " | ".join(bad[:3]))
    else:
        print(f"ok - {name} ({n} runs)")

# 2. crafted
bad = []
crafted = sorted(os.listdir("crafted"))
for c in crafted:
    run_all(os.path.join("crafted", c), "crafted/" + c, bad)
say(bad, f"every reading command on {len(crafted)} crafted recordings: exit 0 or 2, never a signal or a hang",
    len(crafted) * len(CMDS))

# 3. random damage of real recordings
def mend(b):
    b = bytearray(b)
    off = 16
    while off + 16 <= len(b):
        t, crc, n = struct.unpack_from("<IIQ", b, off)
        if n > len(b) - off - 16:
            break
        struct.pack_into("<I", b, off + 4, zlib.crc32(bytes(b[off + 16:off + 16 + n])) & 0xFFFFFFFF)
        off += 16 + n
    return bytes(b)

# Each seed damages two of the recordings (all of them in turn), three ways;
# two recordings are checked at a time.
recs = sorted(r for r in os.listdir("recs") if os.path.isdir(os.path.join("recs", r)))
jobs = []
for seed in range(40):
    rnd = random.Random(seed)
    for r in (recs[seed % len(recs)], recs[(seed + len(recs) // 2) % len(recs)]):
        src = os.path.join("recs", r)
        present = [f for f in FILES if os.path.exists(os.path.join(src, f))]
        for variant in ("flip", "flip+mend", "cut"):
            d = f"dmg/{seed}-{r}-{variant}"
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(src, d)
            f = rnd.choice(present)
            b = bytearray(open(os.path.join(d, f), "rb").read())
            if variant == "cut":
                b = b[:rnd.randrange(len(b) + 1)]
            else:
                for _ in range(rnd.randint(1, 12)):
                    i = rnd.randrange(16 if variant == "flip+mend" and len(b) > 16 else 0, len(b))
                    b[i] ^= 1 << rnd.randrange(8) if rnd.random() < 0.5 else rnd.randrange(1, 256)
                if variant == "flip+mend":
                    b = mend(b)
            open(os.path.join(d, f), "wb").write(bytes(b))
            jobs.append((d, f"seed {seed} {r} {variant} ({f})"))

def one(job):
    d, label = job
    bad = []
    run_all(d, label, bad)
    if not bad:
        shutil.rmtree(d)
    return bad

with concurrent.futures.ThreadPoolExecutor(2) as ex:
    results = list(ex.map(one, jobs))
bad = [x for r in results for x in r]
kept = sum(1 for r in results if r)
say(bad, "every reading command on real recordings with 40 seeds of flipped bytes (checksums as found, and mended)"
    " and cuts: exit 0 or 2, never a signal or a hang" + (f"; failing recordings kept in {os.getcwd()}/dmg" if kept else ""),
    len(jobs) * len(CMDS))
PY

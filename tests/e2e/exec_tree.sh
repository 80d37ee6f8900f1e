# Programs exec'd in a recorded tree (issue 40, docs/INSTRUMENTATION.md
# "Programs exec'd in the tree"): Debian's own gzip and xz (never rebuilt)
# run by a shell are patched as the launched program is, each planned once
# per recording; every call count of gzip's and of xz's functions equals a
# recording of that program run directly on the same input (the reference
# is another recording of the program alone, where the count is what the
# program's own calls made: the two runs are the same computation).
# --exec limits which programs of the tree are patched; env -i and shells
# that clear LD_PRELOAD keep the runtime; static and set-uid programs are
# processes without functions; the readers take one process or program;
# --module applies in the exec'd images.
. "$ROOT/tests/lib.sh"
for p in gzip xz; do
	command -v $p >/dev/null || { notok "$p installed" "no $p (apt-get install gzip xz-utils)"; exit 1; }
done
seq 1 120000 > F
cmd='gzip -c F > /dev/null; xz -c -T1 F | wc -c; gzip -c F | wc -c'
sh -c "$cmd" > plain.txt; echo "exit $?" >> plain.txt
"$SONDE" record -o t.data -- sh -c "$cmd" > rec.txt 2> rec.err; echo "exit $?" >> rec.txt
check "the tree's output and exit status unchanged" cmp -s plain.txt rec.txt
"$SONDE" record -o g.data -- gzip -c F > /dev/null 2> g.err
"$SONDE" record -o x.data -- xz -c -T1 F > /dev/null 2> x.err
for d in t g x; do "$SONDE" report -i $d.data --format=json > $d.json; done
"$SONDE" info -i t.data --format=json > ti.json
python3 - "$(command -v gzip)" "$(command -v xz)" <<'PY'
import json, os, sys
def say(good, name, why=""):
    print(("ok - " if good else "not ok - ") + name + ("" if good else ": " + why))
gz, xz = (os.path.realpath(p) for p in sys.argv[1:3])
def calls(f, mod):
    return {x["address"]: x["calls"] for x in json.load(open(f))["functions"] if os.path.realpath(x["module"]) == mod}
t = calls("t.json", gz); g = calls("g.json", gz)
# gzip ran twice in the tree on the same input: every count twice the direct run's
bad = {k: (t.get(k), 2 * g.get(k, 0)) for k in set(t) | set(g) if t.get(k) != 2 * g.get(k, 0)}
say(len(g) > 20 and not bad, f"gzip exec'd twice by sh: its {len(g)} functions called twice as often as in gzip "
    f"recorded alone ({sum(g.values())} calls)", str(sorted(bad.items())[:6]))
t = calls("t.json", xz); x = calls("x.json", xz)
bad = {k: (t.get(k), x.get(k)) for k in set(t) | set(x) if t.get(k) != x.get(k)}
say(len(x) > 20 and not bad, f"xz exec'd by sh: its {len(x)} functions called as often as in xz recorded alone "
    f"({sum(x.values())} calls)", str(sorted(bad.items())[:6]))
info = json.load(open("ti.json"))
pat = [os.path.realpath(m["path"]) for m in info["modules"] if m["how"] == "patched"]
say(pat.count(gz) == 2 and pat.count(xz) == 1, "gzip patched in both its processes, xz in its one", str(pat))
planned = [os.path.realpath(p["path"]) for p in info.get("patched", [])]
say(planned.count(gz) == 1 and planned.count(xz) == 1, "each program planned once for the recording", str(planned))
PY
# --exec: only the programs matching are patched, the shell and the others not
"$SONDE" record --exec 'xz' -o e.data -- sh -c "$cmd" > rece.txt 2> rece.err; echo "exit $?" >> rece.txt
check "--exec xz: output and exit status unchanged" cmp -s plain.txt rece.txt
"$SONDE" report -i e.data --format=json > e.json
"$SONDE" info -i e.data --format=json > ei.json
python3 - "$(command -v xz)" <<'PY'
import json, os, sys
def say(good, name, why=""):
    print(("ok - " if good else "not ok - ") + name + ("" if good else ": " + why))
xz = os.path.realpath(sys.argv[1])
mods = {os.path.realpath(m["path"]) for m in json.load(open("ei.json"))["modules"] if m["how"] == "patched"}
say(mods == {xz}, "--exec xz: xz alone patched (not sh, gzip, wc)", str(mods))
e = {x["address"]: x["calls"] for x in json.load(open("e.json"))["functions"]}
x = {x["address"]: x["calls"] for x in json.load(open("x.json"))["functions"]}
say(e == x, "--exec xz: xz's counts those of xz recorded alone", str(sorted(set(e.items()) ^ set(x.items()))[:6]))
PY
# Environments that drop the runtime: env -i, a shell clearing LD_PRELOAD, a
# shell unsetting sonde's variables: the exec-family calls put sonde's part
# back, and the programs are recorded as the first run's.
drop='env -i PATH=/usr/bin gzip -c F > /dev/null; LD_PRELOAD= xz -c -T1 F | wc -c; unset LD_PRELOAD SONDE_SESSION_FD; gzip -c F | wc -c'
sh -c "$drop" > dplain.txt; echo "exit $?" >> dplain.txt
"$SONDE" record -o d.data -- sh -c "$drop" > drec.txt 2> drec.err; echo "exit $?" >> drec.txt
check "env -i, LD_PRELOAD= and unset: output and exit status unchanged" cmp -s dplain.txt drec.txt
"$SONDE" report -i d.data --format=json > d.json
python3 - "$(command -v gzip)" "$(command -v xz)" <<'PY'
import json, os, sys
def say(good, name, why=""):
    print(("ok - " if good else "not ok - ") + name + ("" if good else ": " + why))
gz, xz = (os.path.realpath(p) for p in sys.argv[1:3])
def calls(f, mod):
    return {x["address"]: x["calls"] for x in json.load(open(f))["functions"] if os.path.realpath(x["module"]) == mod}
t = calls("d.json", gz); g = calls("g.json", gz)
bad = {k: (t.get(k), 2 * g.get(k, 0)) for k in set(t) | set(g) if t.get(k) != 2 * g.get(k, 0)}
say(len(g) > 20 and not bad, "gzip run through env -i and after unset LD_PRELOAD SONDE_SESSION_FD: "
    "every count twice gzip's alone", str(sorted(bad.items())[:6]))
t = calls("d.json", xz); x = calls("x.json", xz)
bad = {k: (t.get(k), x.get(k)) for k in set(t) | set(x) if t.get(k) != x.get(k)}
say(len(x) > 20 and not bad, "xz run with LD_PRELOAD= : every count xz's alone", str(sorted(bad.items())[:6]))
PY
# A static program and a set-uid one exec'd in the tree: processes without
# functions, and sonde info says why
printf '#include <stdio.h>\nint main(void) { puts("static ran"); return 3; }\n' > st.c
gcc -O2 -static st.c -o st || { notok build "gcc -static failed (libc6-dev's libc.a)"; exit 1; }
setuid=
if [ "$(id -u)" = 0 ] && cp "$(command -v gzip)" sgzip && chown nobody sgzip && chmod u+s sgzip; then setuid=1; fi
plainrun='./st; echo "st $?"; [ -x ./sgzip ] && ./sgzip -c < F | wc -c; true'
sh -c "$plainrun" > splain.txt; echo "exit $?" >> splain.txt
"$SONDE" record -o s.data -- sh -c "$plainrun" > srec.txt 2> srec.err; echo "exit $?" >> srec.txt
check "static and set-uid programs: output and exit status unchanged" cmp -s splain.txt srec.txt
"$SONDE" info -i s.data --format=json > si.json
python3 - "$setuid" <<'PY'
import json, sys
def say(good, name, why=""):
    print(("ok - " if good else "not ok - ") + name + ("" if good else ": " + why))
ps = json.load(open("si.json"))["processes"]
why = {p["exe"].rsplit("/", 1)[-1]: p.get("no_functions") for p in ps}
say(why.get("st") == "statically linked", "the static program: a process without functions, sonde info says why", str(why))
if sys.argv[1]:
    say((why.get("sgzip") or "").startswith("set-uid"), "the set-uid program: a process without functions, "
        "sonde info says why", str(why))
else:
    print("skip - the set-uid program: not root, no set-uid copy could be made")
say(all(why[k] is None for k in ("dash",) if k in why), "the shell itself: functions recorded, no reason given", str(why))
PY
# Readers take a subset: --comm, --pid, --processes; sonde info's programs
# and process tree (the recording of the first tree above)
"$SONDE" report -i t.data --comm gzip --format=json > rc.json
"$SONDE" report -i t.data --processes --format=json > rp.json
"$SONDE" export -i t.data --comm 'x*' --format=folded > xz.folded
"$SONDE" flamegraph -i t.data --comm gzip -o gz.svg 2> fl.err
"$SONDE" report -i t.data --comm nosuchprog > nc.out 2> nc.err; echo "$?" > nc.rc
python3 - "$(command -v gzip)" "$(command -v xz)" "$SONDE" <<'PY'
import json, os, subprocess, sys
def say(good, name, why=""):
    print(("ok - " if good else "not ok - ") + name + ("" if good else ": " + why))
gz, xz, sonde = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2]), sys.argv[3]
rc = {x["address"]: x["calls"] for x in json.load(open("rc.json"))["functions"]}
mods = {os.path.realpath(x["module"]) for x in json.load(open("rc.json"))["functions"]}
g = {x["address"]: 2 * x["calls"] for x in json.load(open("g.json"))["functions"]}
say(mods == {gz} and rc == g, "report --comm gzip: gzip's functions alone, each count that of gzip's two runs",
    str((mods, sorted(set(rc.items()) ^ set(g.items()))[:5])))
info = json.load(open("ti.json"))
procs = info["processes"]
xzp = [p for p in procs if os.path.realpath(p["exe"]) == xz]
say(len(xzp) == 1, "one xz process", str(procs))
pid = xzp[0]["pid"]
d = json.loads(subprocess.run([sonde, "report", "-i", "t.data", "--pid", str(pid), "--format=json"],
                              capture_output=True, text=True).stdout)
x = {f["address"]: f["calls"] for f in json.load(open("x.json"))["functions"]}
got = {f["address"]: f["calls"] for f in d["functions"] if os.path.realpath(f["module"]) == xz}
others = {os.path.realpath(f["module"]) for f in d["functions"]} - {xz, os.path.realpath("/bin/sh")}
say(got == x and not others, f"report --pid {pid} (xz's): xz's counts those of xz alone, nothing of the other processes",
    str((others, sorted(set(got.items()) ^ set(x.items()))[:5])))
secs = json.load(open("rp.json"))["processes"]
bad = [(s["pid"], s["program"], {f["module"] for f in s["functions"]}) for s in secs
       if {os.path.realpath(f["module"]) for f in s["functions"]} - {os.path.realpath(s["program"])}]
withprof = {(p["pid"], p["exe"], p["exec_seq"]) for p in procs}
say(len(secs) >= 5 and not bad and all((s["pid"], s["program"], s["exec_seq"]) in withprof for s in secs),
    f"report --processes: {len(secs)} sections, each with its own program's functions only", str(bad or secs[:2]))
folded = open("xz.folded").read().split("\n")
say(len([l for l in folded if l]) > 5 and all(l.split(" ")[0].split(";")[-1].startswith("xz+") or not l for l in folded),
    "export --comm 'x*' (folded): xz's stacks only", str(folded[:3]))
say(os.path.getsize("gz.svg") > 1000 and "gzip+" in open("gz.svg").read() and "dash+" not in open("gz.svg").read(),
    "flamegraph --comm gzip: gzip's frames, not the shell's", open("fl.err").read())
say(open("nc.rc").read().strip() == "1" and "nosuchprog" in open("nc.err").read() and not open("nc.out").read(),
    "report --comm of a program not in the recording: a clear error, exit 1 (usage), nothing on stdout", open("nc.err").read())
progs = {os.path.realpath(p["program"]): p for p in info["programs"]}
say(progs.get(gz, {}).get("processes") == 2 and [os.path.realpath(m) for m in progs[gz]["modules"]] == [gz]
    and progs.get(xz, {}).get("processes") == 1, "sonde info: gzip 2 processes, xz 1, each with its module",
    str(info["programs"]))
pids = {p["pid"] for p in procs}
root = procs[0]
kids = [p for p in procs[1:] if p["ppid"] not in pids]
execd = [p for p in procs if p["execed"]]
order = all(p["start_s"] <= p["end_s"] for p in procs)
say(not kids and order and all(os.path.basename(p["exe"]) == "dash" for p in execd) and len(execd) >= 2 and
    all(p["exit_status"] == 0 for p in procs if not p["execed"] and os.path.realpath(p["exe"]) in (gz, xz)),
    "sonde info's process tree: every process's parent in the tree, the shell's children that exec'd marked, "
    "gzip's and xz's exit 0", str(procs))
PY
# --module in the exec'd images: xz's liblzma, patched in each xz process;
# the counts (xz's and liblzma's) twice those of xz recorded alone with it
"$SONDE" record --module 'liblzma.so*' -o lm.data -- sh -c 'xz -c -T1 F | wc -c; xz -c -T1 F | wc -c' > lm.out 2> lm.err
"$SONDE" record --module 'liblzma.so*' -o lx.data -- xz -c -T1 F > /dev/null 2> lx.err
"$SONDE" report -i lm.data --comm xz --format=json > lm.json
"$SONDE" report -i lx.data --format=json > lx.json
jq_py lm.json "
a = {(f['module'], f['address']): f['calls'] for f in d['functions']}
b = {(f['module'], f['address']): 2 * f['calls'] for f in json.load(open('lx.json'))['functions']}
lz = [k for k in a if 'liblzma' in k[0]]
print(('ok' if a == b and len(lz) > 20 else 'not ok') + f' - --module liblzma.so* in the exec\'d xz: {len(lz)} liblzma functions, '
      'every count of xz and liblzma twice xz alone' + ('' if a == b else ': ' + str(sorted(set(a.items()) ^ set(b.items()))[:5])))"
# the whole report's JSON says each function's processes and programs
jq_py t.json "
import os
gz = os.path.realpath('$(command -v gzip)')
bad = [(f['name'], f['processes'], f['programs']) for f in d['functions']
       if [os.path.realpath(p) for p in f['programs']] != [os.path.realpath(f['module'])]
       or (os.path.realpath(f['module']) == gz and f['processes'] != 2)]
print(('ok' if not bad and d['functions'] else 'not ok') + ' - report JSON: each function names its program, '
      'gzip\'s in its 2 processes' + ('' if not bad else ': ' + str(bad[:4])))"
# make -j2 with --exec cc1 (Debian's gcc, never rebuilt): every compile's cc1
# recorded (as many cc1 processes as compile commands in make's output),
# make, the gcc driver and as not patched, the build's output and exit
# status unchanged.  (Not checked here: one cc1's counts against a cc1 run
# directly: cc1's counts depend on its environment, which make and the
# driver extend; a direct run with only MAKEFLAGS and MAKELEVEL added differs
# by one call in one function.)
mkdir mk && cd mk || exit 1
for i in 1 2 3 4; do printf 'static int g%d(int x) { return x * %d; }\nint f%d(int x) { return g%d(x) + 1; }\n' $i $i $i $i > f$i.c; done
printf 'OBJS = f1.o f2.o f3.o f4.o\nall: $(OBJS)\n%%.o: %%.c\n\tgcc -O2 -c $< -o $@\n' > Makefile
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -j2 > ../mplain.txt 2>&1; echo "exit $?" >> ../mplain.txt
rm -f ./*.o
"$SONDE" record --exec cc1 -o ../mk.data -- env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -j2 > ../mrec.txt 2> ../mrec.err; echo "exit $?" >> ../mrec.txt
cd .. || exit 1
check "make -j2 --exec cc1: the build's output and exit status unchanged" cmp -s mplain.txt mrec.txt
"$SONDE" info -i mk.data --format=json > mi.json
python3 - "$SONDE" "$(gcc -print-prog-name=cc1)" <<'PY'
import json, os, subprocess, sys
def say(good, name, why=""):
    print(("ok - " if good else "not ok - ") + name + ("" if good else ": " + why))
sonde, cc1 = sys.argv[1], os.path.realpath(sys.argv[2])
info = json.load(open("mi.json"))
compiles = [l for l in open("mplain.txt") if l.startswith("gcc ") and " -c " in l]
cc1s = [p for p in info["processes"] if os.path.realpath(p["exe"]) == cc1]
say(len(compiles) == 4 and len(cc1s) == len(compiles), f"{len(cc1s)} cc1 processes for {len(compiles)} compile commands",
    str([p["exe"] for p in info["processes"]]))
progs = {os.path.basename(os.path.realpath(p["program"])): [os.path.realpath(m) for m in p["modules"]] for p in info["programs"]}
say(progs.get("cc1") == [cc1] and all(not v for k, v in progs.items() if k != "cc1") and "make" in progs,
    "make, the gcc driver and as not patched, cc1 alone", str(progs))
PY

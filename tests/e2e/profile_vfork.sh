#!/usr/bin/env bash
# profile_vfork.sh — a vfork child runs on its parent's memory until it
# _exits: the calls it makes must not land in the parent's thread (they did:
# issue 15), and the parent's own calls and tree stay exact.
. "$ROOT/tests/lib.sh"
"$SONDE_CC_BIN" -O1 -g "$PROGS/vfork_child.c" -o vf || { notok build "sonde-cc failed"; exit 1; }
./vf > plain.txt
plain_rc=$?
"$SONDE" record -- ./vf > out.txt 2> rec.err
rc=$?
check "output unchanged" cmp -s plain.txt out.txt
check "exit status unchanged (5)" test "$rc" -eq 5 -a "$plain_rc" -eq 5
check "the child ran and exited 7" grep -q "child status 7" out.txt
python3 - <<'PY'
import sys, os; sys.path.insert(0, os.environ["ROOT"] + "/tests")
from profile_check import *
r = report()
say(r.get("parent_work", {}).get("calls") == 5, "parent_work: the parent's 5 calls", str(r.get("parent_work")))
say(r.get("spawn", {}).get("calls") == 1, "spawn: 1 call", str(r.get("spawn")))
say(not r.get("child_work", {}).get("calls"), "child_work: the vfork child's calls are not the parent's", str(r.get("child_work")))
done()
PY

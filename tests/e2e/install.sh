#!/usr/bin/env bash
# install.sh — `make install` as a user or a distribution would run it: the
# installed tree (PREFIX, and DESTDIR staging) holds the tools, the runtime
# pieces, the header, sonde.pc, man pages and completions; from another
# directory with a clean environment, the installed sonde-cc builds seed002 and
# the installed sonde records and reports its own call counts, through the
# installed runtime; the man pages render without warnings; the completions
# load and complete; the tree still works after being moved; `make uninstall`
# leaves no file behind.
source "$ROOT/tests/lib.sh"

# A sub-make of `make check` must not inherit its flags (BUILD=..., -j).
unset MAKEFLAGS MFLAGS MAKELEVEL
mk() { make -C "$ROOT" BUILD="$BUILD" "$@" >>make.log 2>&1; }
P=$T/usr
calls_want='{"main": 1, "A": 1, "B": 1, "C": 3, "E": 3, "F": 3, "G": 3}'
clean_env=(env -i PATH=/usr/bin:/bin HOME="$T")

# seed002's own call counts in `report --format=json` of DIR (run in DIR).
check_calls() { # name dir
	( cd "$2" && "${clean_env[@]}" "$BIN/sonde" report --format=json > report.json 2> report.err ) ||
		{ notok "$1" "report failed: $(head -3 "$2/report.err")"; return; }
	python3 - "$2/report.json" "$calls_want" "$1" <<'PY'
import json, sys
r = {f["name"]: f for f in json.load(open(sys.argv[1]))["functions"]}
want = json.loads(sys.argv[2])
got = {n: r[n]["calls"] if n in r else None for n in want}
print(("ok - %s" if got == want else "not ok - %s: got %s") % ((sys.argv[3],) if got == want else (sys.argv[3], got)))
PY
}

# Build seed002 with the installed sonde-cc, record it, report (from a fresh
# directory, clean environment).
build_and_record() { # label
	local w=$T/work-$1
	mkdir -p "$w"
	( cd "$w" && "${clean_env[@]}" "$BIN/sonde-cc" -O2 -g "$PROGS/seed002.c" -o seed002 ) > "$w/cc.log" 2>&1 &&
		ok "$1: installed sonde-cc builds seed002" || { notok "$1: installed sonde-cc builds seed002" "$(head -5 "$w/cc.log")"; return; }
	( cd "$w" && "${clean_env[@]}" "$BIN/sonde" record -- ./seed002 2 ) > "$w/rec.out" 2> "$w/rec.err" &&
		grep -q "seed002 done" "$w/rec.out" && ok "$1: installed sonde records seed002" ||
		{ notok "$1: installed sonde records seed002" "$(tail -3 "$w/rec.err")"; return; }
	check_calls "$1: report gives seed002's own call counts" "$w"
}

# ---- install into PREFIX
if ! mk install PREFIX="$P"; then
	notok "make install PREFIX=$P" "$(tail -5 make.log)"
	exit 0
fi
ok "make install PREFIX=..."
BIN=$P/bin
missing=""
for f in bin/sonde bin/sonde-cc bin/sonde-c++ bin/sonde-config lib/sonde/libsonde-rt.so lib/sonde/sonde-module.o \
	lib/sonde/as/as lib/sonde/sonde_unwind.py lib/sonde/libsonde-rt.so-gdb.py lib/pkgconfig/sonde.pc include/sonde/probe.h share/man/man1/sonde.1 share/man/man1/sonde-cc.1 \
	share/man/man1/sonde-c++.1 share/man/man1/sonde-config.1 share/bash-completion/completions/sonde \
	share/zsh/site-functions/_sonde share/doc/sonde/README.md share/doc/sonde/docs/cli.md; do
	[ -e "$P/$f" ] || missing="$missing $f"
done
cmds=$("$BIN/sonde" --help | awk '/^commands:/{c=1; next} c && /^  [a-z]/{print $1}')
for c in $cmds; do
	[ -f "$P/share/man/man1/sonde-$c.1" ] || missing="$missing share/man/man1/sonde-$c.1"
done
check "the Debian-like layout holds every piece (and a page per command: $(echo $cmds | wc -w))" test -z "$missing"
[ -n "$missing" ] && echo "# missing:$missing"
leaks=$(grep -lF "$BUILD" "$P"/bin/sonde-config "$P"/lib/pkgconfig/sonde.pc "$P"/share/man/man1/*.1 \
	"$P"/share/bash-completion/completions/sonde "$P"/share/zsh/site-functions/_sonde 2>/dev/null)
check "no installed text file names the build tree" test -z "$leaks"

# ---- version: one string everywhere
v=$("${clean_env[@]}" "$BIN/sonde" --version)
check "sonde --version prints 'sonde VERSION' ($v)" grep -qE '^sonde [0-9A-Za-z][0-9A-Za-z.+~_-]*$' <<<"$v"
check "sonde -V prints the same" test "$("${clean_env[@]}" "$BIN/sonde" -V)" = "$v"
check "sonde-config --version is the same" test "sonde $("${clean_env[@]}" "$BIN/sonde-config" --version)" = "$v"
pcv=$(PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --modversion sonde 2>&1)
check "sonde.pc Version is the same" test "sonde $pcv" = "$v"

# ---- the installed tools use the installed pieces
modobj=$(cd "$P/lib/sonde" && pwd -P)/sonde-module.o
drv=$(cd "$T" && "${clean_env[@]}" "$BIN/sonde-cc" -### "$PROGS/seed002.c" -o x 2>&1)
check "sonde-cc links the installed module object and runs the installed assembler filter" \
	bash -c 'grep -qF -- "$1/../lib/sonde/sonde-module.o" <<<"$2" && grep -qF -- "$1/../lib/sonde/as/as" <<<"$2"' _ \
	"$(cd "$BIN" && pwd -P)" "$drv"
pre=$(cd "$T" && "${clean_env[@]}" "$BIN/sonde" record -o env.data -- /bin/sh -c 'echo "LD_PRELOAD=$LD_PRELOAD"' 2>/dev/null)
check "sonde record preloads the installed runtime" test "$pre" = "LD_PRELOAD=$(cd "$P/lib/sonde" && pwd -P)/libsonde-rt.so"
check "sonde-config --libs names the installed module object" test "$("${clean_env[@]}" "$BIN/sonde-config" --libs)" = "$modobj"
ln -s "$BIN/sonde-config" "$T/sc-link"
check "sonde-config works through a symlink" test "$("${clean_env[@]}" "$T/sc-link" --libs)" = "$modobj"
pcl=$(PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --libs sonde 2>&1 | sed 's/ *$//')
check "pkg-config --libs sonde names the installed module object ($pcl)" test "$(readlink -f "$pcl")" = "$modobj"

build_and_record installed

# the plugin header compiles with the flags of sonde.pc alone
plug=$(printf '#include <sonde/probe.h>\nint x = SONDE_PROBE_ABI;\n' |
	PKG_CONFIG_PATH=$P/lib/pkgconfig bash -c 'cc $(pkg-config --cflags sonde) -fsyntax-only -x c - 2>&1')
check "include/sonde/probe.h compiles with pkg-config --cflags sonde" test -z "$plug"

# a build that cannot use sonde-cc: the flags from pkg-config
w=$T/work-pc
mkdir -p "$w"
if command -v pkg-config > /dev/null; then
	( cd "$w" && "${clean_env[@]}" PKG_CONFIG_PATH="$P/lib/pkgconfig" bash -c \
		'cc $(pkg-config --cflags sonde) -O2 -g "$1" -o seed002 $(pkg-config --libs sonde)' _ "$PROGS/seed002.c" &&
		"${clean_env[@]}" "$BIN/sonde" record -- ./seed002 2 ) > "$w/log" 2>&1
	[ -x "$w/seed002" ] && check_calls "pkg-config flags: a cc build records seed002's call counts" "$w" ||
		notok "pkg-config flags: a cc build records seed002's call counts" "$(tail -3 "$w/log")"
else
	skip "pkg-config flags" "no pkg-config"
fi

# ---- man pages: every page renders without a warning; each command page
# lists every option of that command's --help
if command -v man > /dev/null && command -v groff > /dev/null; then
	bad=""
	for page in "$P"/share/man/man1/*.1; do
		w1=$(MANWIDTH=80 man -l "$page" 2>&1 > /dev/null)
		w2=$(groff -man -ww -z "$page" 2>&1)
		[ -z "$w1$w2" ] || { bad="$bad $(basename "$page")"; echo "# $page: $w1 $w2" | head -5; }
	done
	check "man -l and groff -ww render every page without a warning" test -z "$bad"
	miss=""
	for c in $cmds; do
		txt=$(MANWIDTH=200 man -l "$P/share/man/man1/sonde-$c.1" 2>/dev/null)
		for o in $("$BIN/sonde" "$c" --help | grep -oE -- '--[a-z][a-z-]*'); do
			grep -qF -- "$o" <<<"$txt" || miss="$miss $c:$o"
		done
	done
	check "each command's page lists every option of its --help" test -z "$miss"
	[ -n "$miss" ] && echo "# missing options:$miss"
	check "sonde.1 lists every command" bash -c 'for c in $2; do grep -q -- "^ *$c" <<<"$1" || exit 1; done' _ \
		"$(MANWIDTH=200 man -l "$P/share/man/man1/sonde.1" 2>/dev/null)" "$cmds"
	check "MANPATH finds the installed pages (man sonde-record)" \
		bash -c 'MANPATH="$1" MANWIDTH=80 man sonde-record 2>/dev/null | grep -q -- "--trace"' _ "$P/share/man"
else
	skip "man pages render" "man or groff missing (Debian: man-db, groff)"
fi

# ---- bash completion
bc=$P/share/bash-completion/completions/sonde
check "bash completion loads (complete -p sonde)" \
	bash -c 'source "$1" && complete -p sonde | grep -q -- "-F _sonde sonde"' _ "$bc"
comp() { # words... : COMPREPLY for completing the last word
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _sonde; printf "%s\n" "${COMPREPLY[@]}"' _ "$bc" "$@"
}
mkdir -p "$T/comp/run1.data" && touch "$T/comp/run1.txt"
check "bash completes commands (sonde repo -> report)" test "$(comp sonde repo)" = "report"
check "bash completes every command (sonde '')" test "$(comp sonde '' | grep -v '^-' | sort)" = "$(sort <<<"$cmds")"
check "bash completes a command's options (report --so -> --sort=)" test "$(comp sonde report --so)" = "--sort="
check "bash completes only the command's own options (record --tr -> --trace)" test "$(comp sonde record --tr)" = "--trace"
check "bash completes -i with directories" test "$(cd "$T" && comp sonde report -i comp/run)" = "comp/run1.data"
check "bash completes the program after record --" bash -c 'grep -qx ls <<<"$1"' _ "$(comp sonde record -- ls)"

# ---- zsh completion
zc=$P/share/zsh/site-functions/_sonde
if command -v zsh > /dev/null; then
	check "zsh completion parses (zsh -n)" zsh -n "$zc"
	got=$(zsh -fc 'fpath=("$1" $fpath); autoload -Uz compinit; compinit -u -d "$2"; print -r -- $_comps[sonde]' _ \
		"$(dirname "$zc")" "$T/zcompdump" 2>&1)
	check "compinit binds sonde to _sonde from share/zsh/site-functions ($got)" test "$got" = "_sonde"
else
	skip "zsh completion" "no zsh (Debian: zsh)"
fi

# ---- DESTDIR staging: files under DESTDIR, paths without it
S=$T/stage
if mk install PREFIX=/usr DESTDIR="$S"; then
	check "make install DESTDIR=... PREFIX=/usr stages under DESTDIR/usr" test -x "$S/usr/bin/sonde" -a -f "$S/usr/lib/sonde/libsonde-rt.so"
	check "the staged tree names neither DESTDIR nor the build tree" \
		bash -c '! grep -rlF -e "$1" -e "$2" "$3/usr/lib/pkgconfig" "$3/usr/bin/sonde-config" "$3/usr/share/man"' _ "$S" "$BUILD" "$S"
	check "the staged tree runs where it is (relocatable)" test "$("${clean_env[@]}" "$S/usr/bin/sonde" --version)" = "$v"
	mk uninstall PREFIX=/usr DESTDIR="$S"
	left=$(find "$S" ! -type d)
	check "make uninstall DESTDIR=... removes every staged file" test -z "$left"
else
	notok "make install DESTDIR=..." "$(tail -5 make.log)"
fi

# ---- move the installed tree: everything still works from the new prefix
M=$T/moved/opt
mkdir -p "$T/moved"
mv "$P" "$M"
BIN=$M/bin
build_and_record moved
check "after the move, sonde-config names the moved module object" \
	test "$("${clean_env[@]}" "$BIN/sonde-config" --libs)" = "$(cd "$M/lib/sonde" && pwd -P)/sonde-module.o"

# ---- uninstall from the moved prefix
if mk uninstall PREFIX="$M"; then
	left=$(find "$M" ! -type d)
	check "make uninstall leaves no file in the prefix" test -z "$left"
	[ -n "$left" ] && echo "# left: $left" | head -5
	check "make uninstall removes sonde's own directories" test ! -e "$M/lib/sonde" -a ! -e "$M/share/doc/sonde" -a ! -e "$M/include/sonde"
else
	notok "make uninstall" "$(tail -5 make.log)"
fi
rm -rf "$T"
exit 0

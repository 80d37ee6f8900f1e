/* test_sym.c — unit tests of src/sym (ELF symbols, DWARF lines, demangling,
 * the object cache, variables on separate debug info).
 * At start-up it writes a small C program, a C++ program and a shared
 * library into a mkdtemp directory and compiles them with cc / c++ -g -O0
 * (PIE, non-PIE, shared, stripped + .gnu_debuglink, no -g); expected names
 * and lines come from the source text written here (lines are found by
 * searching for the text), expected addresses from `nm`, and both are
 * checked against what sym_lookup / sym_find / sym_line_addrs return.
 */
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sym/cache.h"
#include "sym/sym.h"
#include "sym/vars.h"
#include "unit/unit.h"

static char dir[64];

static const char c_src[] =
	"#include <stdio.h>\n"
	"struct cache_s { long a; long b; long c; };\n"
	"struct cache_s cache = { 1, 2, 3 };\n"
	"int hot_lock = 0;\n"
	"int work(int n) {\n"
	"\tint s = 0;\n"
	"\tfor (int i = 0; i < n; i++) { /* FOR_LINE */\n"
	"\t\ts += i * hot_lock; /* LOOP_BODY */\n"
	"\t}\n"
	"\t/* NO_CODE */\n"
	"\treturn s;\n"
	"}\n"
	"static inline __attribute__((always_inline)) int twice(int v) {\n"
	"\treturn v * 2 + hot_lock; /* INLINE_BODY */\n"
	"}\n"
	"int use_twice(int a, int b) { return twice(a) + twice(b); }\n"
	"static int helper(int x) { return x + 1; }\n"
	"int brace_below(int x)\n"
	"{\n"
	"\treturn x - 1;\n"
	"}\n"
	"int main(int argc, char **argv) {\n"
	"\t(void)argv;\n"
	"\treturn work(argc) + use_twice(argc, 2) + helper(argc) + brace_below(argc) + (int)cache.b;\n"
	"}\n";

static const char cxx_src[] =
	"namespace ns {\n"
	"class Klass {\n"
	"public:\n"
	"\tint method(int x);\n"
	"};\n"
	"int Klass::method(int x) { return x * 2; }\n"
	"}\n"
	"int main() { ns::Klass k; return k.method(3); }\n";

static const char lib_src[] =
	"int lib_lock;\n"
	"int lib_func(int x) {\n"
	"\treturn x + lib_lock;\n"
	"}\n";

/* ---- helpers ---- */

static int line_of(const char *src, const char *needle)
{
	const char *p = strstr(src, needle);
	if (!p)
		return -1;
	int line = 1;
	for (const char *q = src; q < p; q++)
		line += *q == '\n';
	return line;
}

static const char *path_in(const char *name)
{
	static char buf[8][256];
	static int k;
	char *b = buf[k++ & 7];
	snprintf(b, 256, "%s/%s", dir, name);
	return b;
}

static bool write_file(const char *name, const char *text)
{
	FILE *f = fopen(path_in(name), "w");
	if (!f)
		return false;
	fputs(text, f);
	return fclose(f) == 0;
}

static bool sh(const char *fmt, const char *a)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), fmt, dir, a);
	return system(cmd) == 0;
}

/* Address of `name` in `file` as nm prints it, or 0. */
static uint64_t nm_addr(const char *file, const char *name)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "nm --defined-only '%s'", path_in(file));
	FILE *p = popen(cmd, "r");
	if (!p)
		return 0;
	char line[1024];
	uint64_t r = 0;
	while (fgets(line, sizeof(line), p)) {
		char n[900], t;
		unsigned long long a;
		if (sscanf(line, "%llx %c %899s", &a, &t, n) == 3 && strcmp(n, name) == 0)
			r = a;
	}
	pclose(p);
	return r;
}

static bool ends_with(const char *s, const char *suffix)
{
	if (!s)
		return false;
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

struct found {
	int n;
	struct sym_info first;
	char names[8][128];
};

static void on_found(void *arg, const struct sym_info *info)
{
	struct found *f = arg;
	if (f->n == 0)
		f->first = *info;
	if (f->n < 8)
		snprintf(f->names[f->n], sizeof(f->names[0]), "%s", info->name);
	f->n++;
}

/* Turns the .symtab of `name` into an unused section (SHT_NULL is not
 * accepted by every tool; SHT_NOTE with flags 0 keeps the layout). */
static bool drop_symtab(const char *name)
{
	elf_version(EV_CURRENT);
	int fd = open(path_in(name), O_RDWR);
	if (fd < 0)
		return false;
	Elf *e = elf_begin(fd, ELF_C_RDWR, NULL);
	bool ok = false;
	size_t shstrndx;
	if (e && elf_getshdrstrndx(e, &shstrndx) == 0) {
		elf_flagelf(e, ELF_C_SET, ELF_F_LAYOUT);
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(e, scn)) != NULL) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
				continue;
			sh.sh_type = SHT_PROGBITS;
			sh.sh_link = 0;
			sh.sh_info = 0;
			ok = gelf_update_shdr(scn, &sh) != 0;
			elf_flagscn(scn, ELF_C_SET, ELF_F_DIRTY);
		}
		ok = ok && elf_update(e, ELF_C_WRITE) >= 0;
	}
	if (e)
		elf_end(e);
	close(fd);
	return ok;
}

static bool built;

static void setup(void)
{
	strcpy(dir, "/tmp/sonde-test-sym.XXXXXX");
	if (!mkdtemp(dir))
		return;
	if (!write_file("prog.c", c_src) || !write_file("prog.cc", cxx_src) ||
	    !write_file("lib.c", lib_src) || !write_file("notelf.txt", "hello, not ELF\n"))
		return;
	built = sh("cd %s && cc -g -O0 -fPIE -pie -o prog prog.c", "") &&
	        sh("cd %s && cc -g -O0 -fno-pie -no-pie -o prog.nopie prog.c", "") &&
	        sh("cd %s && cc -O0 -o prog.nodebug prog.c", "") &&
	        sh("cd %s && c++ -g -O0 -o cxx prog.cc", "") &&
	        sh("cd %s && cc -g -O0 -fPIC -shared -o libt.so lib.c", "") &&
	        sh("cd %s && cc -g -O0 -fPIC -shared -fdebug-prefix-map=%s=. -o librel.so lib.c", dir) &&
	        sh("cd %s && objcopy --only-keep-debug prog prog.debug && "
	           "strip -o prog.stripped prog && "
	           "objcopy --add-gnu-debuglink=prog.debug prog.stripped", "") &&
	        sh("cd %s && strip -o prog.bare prog", "") &&
	        sh("cd %s && cp prog prog.nosymtab", "") && drop_symtab("prog.nosymtab");
}

static struct sym_module *open_ok(const char *name)
{
	const char *err = NULL;
	CHECK(built);
	struct sym_module *m = sym_open(path_in(name), &err);
	if (!m)
		printf("  sym_open(%s): %s\n", name, err ? err : "?");
	CHECK(m != NULL);
	return m;
}

/* Checks function `name` (raw) of module `file`: nm and sym_find agree on
 * its address, and lookups at and inside it give name/file/line. */
static void check_func(struct sym_module *m, const char *file, const char *raw,
                       const char *demangled, const char *srcfile, int line)
{
	uint64_t a = nm_addr(file, raw);
	CHECK(a != 0);
	struct found f = {0};
	CHECK_EQ_U(sym_find(m, raw, on_found, &f), 1);
	CHECK_EQ_U(f.first.start, a);
	CHECK(strcmp(f.first.name, demangled) == 0);
	CHECK(f.first.mangled && strcmp(f.first.mangled, raw) == 0);
	struct sym_info si;
	for (uint64_t off = 0; off < 4; off += 3) {
		CHECK(sym_lookup(m, a + off, &si) == 0);
		if (strcmp(si.name, demangled) != 0)
			printf("  name: %s, want %s\n", si.name, demangled);
		CHECK(strcmp(si.name, demangled) == 0);
		CHECK_EQ_U(si.start, a);
		CHECK(si.size > off);
		CHECK(ends_with(si.file, srcfile));
		if (si.line != line)
			printf("  %s: line %d, want %d\n", raw, si.line, line);
		CHECK_EQ_U(si.line, line);
	}
	/* last byte still inside, one past the end is not this function */
	CHECK(sym_lookup(m, a + si.size - 1, &si) == 0 && si.start == a);
	if (sym_lookup(m, a + si.size, &si) == 0)
		CHECK(si.start != a);
}

/* ---- tests ---- */

static void c_lookup(void)
{
	struct sym_module *m = open_ok("prog");
	check_func(m, "prog", "work", "work", "/prog.c", line_of(c_src, "int work("));
	check_func(m, "prog", "helper", "helper", "prog.c", line_of(c_src, "static int helper("));
	check_func(m, "prog", "main", "main", "prog.c", line_of(c_src, "int main("));
	/* the function's line is the one with its name, not its '{' */
	check_func(m, "prog", "brace_below", "brace_below", "prog.c", line_of(c_src, "int brace_below("));
	sym_close(m);
}

static void cxx_demangle(void)
{
	struct sym_module *m = open_ok("cxx");
	const char *raw = "_ZN2ns5Klass6methodEi";
	check_func(m, "cxx", raw, "ns::Klass::method(int)", "prog.cc",
	           line_of(cxx_src, "int Klass::method("));
	/* exact match on the demangled name, with and without parameters */
	struct found f = {0};
	CHECK_EQ_U(sym_find(m, "ns::Klass::method(int)", on_found, &f), 1);
	CHECK_EQ_U(f.first.start, nm_addr("cxx", raw));
	memset(&f, 0, sizeof(f));
	CHECK_EQ_U(sym_find(m, "ns::Klass::method", on_found, &f), 1);
	CHECK_EQ_U(f.first.start, nm_addr("cxx", raw));
	sym_close(m);

	char *d = sym_demangle(raw);
	CHECK(d && strcmp(d, "ns::Klass::method(int)") == 0);
	free(d);
	d = sym_demangle("_ZN2ns5Klass6methodEi@@V1");
	CHECK(d && strcmp(d, "ns::Klass::method(int)@@V1") == 0);
	free(d);
	CHECK(sym_demangle("main") == NULL);
	CHECK(sym_demangle("i") == NULL);     /* a type, not a mangled symbol */
	CHECK(sym_demangle("_Zgarbage") == NULL);
	CHECK(sym_demangle(NULL) == NULL);
}

/* Where a demangled name's parameter list starts (counted by hand). */
static void param_lists(void)
{
	static const struct { const char *name; int at; } cases[] = {
		{ "main", -1 },
		{ "ns::f(int)", 5 },
		{ "shapes::Adder::operator()(int) const", 25 },
		{ "S::operator<(S const&) const", 12 },
		{ "S::operator<<=(int)", 14 },
		{ "S::operator->() const", 13 },
		{ "S::operator[](unsigned long)", 13 },
		{ "S::operator new(unsigned long)", 15 },
		{ "S::operator bool() const", 16 },
		{ "int pick<int, char>(int, char)", 19 },
		{ "(anonymous namespace)::g(int)", 24 },
		{ "void h<void (*)(int)>(void (*)(int))", 21 },
		{ "main::{lambda(int)#1}::operator()(int) const", 33 },
		{ "std::vector<int, std::allocator<int> >::push_back(int const&)", 49 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *p = sym_param_list(cases[i].name);
		int at = p ? (int)(p - cases[i].name) : -1;
		if (at != cases[i].at)
			printf("  %s: %d, expected %d\n", cases[i].name, at, cases[i].at);
		CHECK(at == cases[i].at);
	}
}

static void data_names(void)
{
	struct sym_module *m = open_ok("prog");
	char buf[64];
	uint64_t hl = nm_addr("prog", "hot_lock"), ca = nm_addr("prog", "cache");
	CHECK(hl && ca);
	CHECK(sym_data_name(m, hl, buf, sizeof(buf)) == 0 && strcmp(buf, "hot_lock") == 0);
	CHECK(sym_data_name(m, hl + 2, buf, sizeof(buf)) == 0 && strcmp(buf, "hot_lock+2") == 0);
	CHECK(sym_data_name(m, ca, buf, sizeof(buf)) == 0 && strcmp(buf, "cache") == 0);
	CHECK(sym_data_name(m, ca + 8, buf, sizeof(buf)) == 0 && strcmp(buf, "cache+8") == 0);
	CHECK(sym_data_name(m, ca + 23, buf, sizeof(buf)) == 0 && strcmp(buf, "cache+23") == 0);
	/* past the struct, and a code address: not data */
	if (sym_data_name(m, ca + 24, buf, sizeof(buf)) == 0)
		CHECK(strncmp(buf, "cache", 5) != 0);
	CHECK(sym_data_name(m, nm_addr("prog", "work"), buf, sizeof(buf)) == -1);
	/* truncation is safe */
	CHECK(sym_data_name(m, ca + 8, buf, 4) == 0 && strcmp(buf, "cac") == 0);
	sym_close(m);
}

static void line_addrs(void)
{
	struct sym_module *m = open_ok("prog");
	uint64_t work = nm_addr("prog", "work");
	struct sym_info wi;
	CHECK(sym_lookup(m, work, &wi) == 0);

	int body = line_of(c_src, "LOOP_BODY");
	uint64_t a[16];
	const char *names[3] = { "prog.c", "./prog.c", path_in("prog.c") };
	for (int k = 0; k < 3; k++) {
		int n = sym_line_addrs(m, names[k], body, a, 16);
		CHECK(n == 1);
		CHECK(a[0] >= work && a[0] < work + wi.size);
		const char *file;
		int line;
		CHECK(sym_addr_line(m, a[0], &file, &line) == 0);
		CHECK(ends_with(file, "/prog.c"));
		CHECK_EQ_U(line, body);
	}
	/* the for line has several rows (init, test, step): one address per
	 * function, the lowest, which maps back to that line */
	int forl = line_of(c_src, "FOR_LINE");
	int n = sym_line_addrs(m, "prog.c", forl, a, 16);
	CHECK(n == 1);
	const char *file;
	int line;
	CHECK(sym_addr_line(m, a[0], &file, &line) == 0 && line == forl);
	CHECK(sym_addr_line(m, a[0] - 1, &file, &line) == 0 && line != forl);

	/* a line inlined twice: one address per inlined copy */
	uint64_t ut = nm_addr("prog", "use_twice");
	struct sym_info ui;
	CHECK(sym_lookup(m, ut, &ui) == 0);
	int inl = line_of(c_src, "INLINE_BODY");
	n = sym_line_addrs(m, "prog.c", inl, a, 16);
	if (n != 2)
		printf("  inline line: %d addresses\n", n);
	CHECK(n == 2);
	for (int i = 0; i < n; i++) {
		CHECK(a[i] >= ut && a[i] < ut + ui.size);
		CHECK(sym_addr_line(m, a[i], &file, &line) == 0 && line == inl);
	}
	/* max smaller than the count: count returned, only max written */
	a[0] = 0;
	a[1] = 12345;
	CHECK(sym_line_addrs(m, "prog.c", inl, a, 1) == 2 && a[0] != 0 && a[1] == 12345);

	CHECK(sym_line_addrs(m, "prog.c", line_of(c_src, "NO_CODE"), a, 16) == 0);
	CHECK(sym_line_addrs(m, "nosuch.c", body, a, 16) == -1);
	CHECK(sym_line_addrs(m, "rog.c", body, a, 16) == -1);   /* not a path suffix */
	CHECK(sym_addr_line(m, 0, &file, &line) == -1);
	sym_close(m);
}

static void pie_nopie_shared(void)
{
	/* Both executables and the shared object are queried with link-time
	 * addresses, exactly as nm prints them. */
	struct sym_module *m = open_ok("prog.nopie");
	check_func(m, "prog.nopie", "work", "work", "prog.c", line_of(c_src, "int work("));
	CHECK(nm_addr("prog.nopie", "work") >= 0x400000);
	CHECK(nm_addr("prog", "work") < 0x400000);
	char buf[64];
	CHECK(sym_data_name(m, nm_addr("prog.nopie", "cache") + 8, buf, sizeof(buf)) == 0 &&
	      strcmp(buf, "cache+8") == 0);
	sym_close(m);

	m = open_ok("libt.so");
	check_func(m, "libt.so", "lib_func", "lib_func", "lib.c", line_of(lib_src, "int lib_func("));
	CHECK(sym_data_name(m, nm_addr("libt.so", "lib_lock"), buf, sizeof(buf)) == 0 &&
	      strcmp(buf, "lib_lock") == 0);
	int l = line_of(lib_src, "return x + lib_lock");
	uint64_t a[4];
	CHECK(sym_line_addrs(m, "lib.c", l, a, 4) == 1);
	const char *file;
	int line;
	CHECK(sym_addr_line(m, a[0], &file, &line) == 0 && line == l);
	sym_close(m);

	/* relative file names in DWARF (-fdebug-prefix-map=DIR=.) still match
	 * a basename and the absolute path */
	m = open_ok("librel.so");
	CHECK(sym_line_addrs(m, "lib.c", l, a, 4) == 1);
	CHECK(sym_line_addrs(m, path_in("lib.c"), l, a, 4) == 1);
	CHECK(sym_line_addrs(m, "/elsewhere/other.c", l, a, 4) == -1);
	CHECK(sym_addr_line(m, a[0], &file, &line) == 0 && line == l && file[0] != '/');
	sym_close(m);
}

static void errors(void)
{
	const char *err = NULL;
	CHECK(built);
	CHECK(sym_open(path_in("notelf.txt"), &err) == NULL);
	CHECK(err && *err);
	err = NULL;
	CHECK(sym_open(path_in("does-not-exist"), &err) == NULL);
	CHECK(err && strstr(err, "No such file"));
	err = NULL;
	CHECK(sym_open(dir, &err) == NULL);  /* a directory */
	CHECK(err && *err);
	CHECK(sym_open(NULL, &err) == NULL);
	CHECK(sym_open(path_in("notelf.txt"), NULL) == NULL);
	sym_close(NULL);
}

static void find_glob(void)
{
	struct sym_module *m = open_ok("prog");
	struct found f = {0};
	/* exact beats glob: "work" does not also report use_twice etc. */
	CHECK_EQ_U(sym_find(m, "work", on_found, &f), 1);
	memset(&f, 0, sizeof(f));
	CHECK_EQ_U(sym_find(m, "wor*", on_found, &f), 1);
	CHECK(strcmp(f.names[0], "work") == 0);
	CHECK_EQ_U(f.first.start, nm_addr("prog", "work"));
	memset(&f, 0, sizeof(f));
	CHECK_EQ_U(sym_find(m, "[hb]*el*", on_found, &f), 2);   /* helper, brace_below */
	bool helper = false, brace = false;
	for (int i = 0; i < f.n && i < 8; i++) {
		helper |= strcmp(f.names[i], "helper") == 0;
		brace |= strcmp(f.names[i], "brace_below") == 0;
	}
	CHECK(helper && brace);
	CHECK_EQ_U(sym_find(m, "no_such_function*", NULL, NULL), 0);
	CHECK(sym_find(m, "*twice", NULL, NULL) == 1);  /* twice is only inlined */
	sym_close(m);

	m = open_ok("cxx");
	memset(&f, 0, sizeof(f));
	CHECK_EQ_U(sym_find(m, "ns::Klass::*", on_found, &f), 1);
	CHECK(strcmp(f.names[0], "ns::Klass::method(int)") == 0);
	CHECK_EQ_U(sym_find(m, "*::method", NULL, NULL), 1);  /* glob on the name without parameters */
	CHECK_EQ_U(sym_find(m, "_ZN2ns*", NULL, NULL), 1);    /* glob on the raw name */
	sym_close(m);
}

static void stripped_and_nodebug(void)
{
	/* stripped, with .gnu_debuglink to prog.debug next to it: symbols and
	 * lines come from the debug file */
	struct sym_module *m = open_ok("prog.stripped");
	check_func(m, "prog.debug", "work", "work", "prog.c", line_of(c_src, "int work("));
	check_func(m, "prog.debug", "helper", "helper", "prog.c", line_of(c_src, "static int helper("));
	uint64_t a[4];
	CHECK(sym_line_addrs(m, "prog.c", line_of(c_src, "LOOP_BODY"), a, 4) == 1);
	sym_close(m);

	/* stripped, no debug info anywhere: static functions are unknown and
	 * named by address, never misattributed to a neighbour */
	m = open_ok("prog.bare");
	uint64_t helper = nm_addr("prog", "helper");
	struct sym_info si;
	CHECK(sym_lookup(m, helper, &si) == -1);
	char want[32];
	snprintf(want, sizeof(want), "0x%" PRIx64, helper);
	CHECK(strcmp(si.name, want) == 0);
	const char *again = si.name;
	CHECK(sym_lookup(m, helper, &si) == -1 && si.name == again);  /* interned */
	CHECK(si.file == NULL && si.line == 0 && si.mangled == NULL);
	CHECK(sym_line_addrs(m, "prog.c", 5, a, 4) == -1);
	const char *file;
	int line;
	CHECK(sym_addr_line(m, helper, &file, &line) == -1 && file == NULL);
	sym_close(m);

	/* DWARF but no .symtab: functions come from DW_TAG_subprogram */
	m = open_ok("prog.nosymtab");
	for (int k = 0; k < 2; k++) {
		const char *fn = k ? "work" : "helper";
		uint64_t fa = nm_addr("prog", fn);
		int fl = line_of(c_src, k ? "int work(" : "static int helper(");
		for (int rep = 0; rep < 2; rep++) {  /* second time from the cache */
			CHECK(sym_lookup(m, fa + 1, &si) == 0);
			CHECK(strcmp(si.name, fn) == 0 && si.start == fa && si.size > 1);
			CHECK(ends_with(si.file, "/prog.c") && si.line == fl);
		}
		CHECK(sym_lookup(m, fa + si.size, &si) != 0 || si.start != fa);
	}
	sym_close(m);

	/* symbols but no DWARF: names, no lines */
	m = open_ok("prog.nodebug");
	uint64_t w = nm_addr("prog.nodebug", "work");
	CHECK(sym_lookup(m, w + 1, &si) == 0);
	CHECK(strcmp(si.name, "work") == 0 && si.start == w && si.file == NULL && si.line == 0);
	CHECK(sym_line_addrs(m, "prog.c", 5, a, 4) == -1);
	sym_close(m);
}

static void object_cache(void)
{
	CHECK(built);
	struct sym_cache *c = sym_cache_new();
	CHECK(c);
	const char *err = NULL;
	/* one object per path */
	struct sym_module *m = sym_cache_get(c, path_in("prog"), &err);
	CHECK(m != NULL);
	CHECK(sym_cache_get(c, path_in("prog"), NULL) == m);
	struct sym_info si;
	CHECK(sym_lookup(m, nm_addr("prog", "work"), &si) == 0 && strcmp(si.name, "work") == 0);

	/* a failure is cached with its reason: the file turned into an ELF
	 * file afterwards is not reopened by this cache, only by a new one */
	CHECK(write_file("later", "not ELF yet\n"));
	CHECK(sym_cache_get(c, path_in("later"), &err) == NULL);
	CHECK(err && strcmp(err, "not an ELF file") == 0);
	CHECK(sh("cd %s && cp prog later", ""));
	err = NULL;
	CHECK(sym_cache_get(c, path_in("later"), &err) == NULL);
	CHECK(err && strcmp(err, "not an ELF file") == 0);
	struct sym_cache *c2 = sym_cache_new();
	CHECK(sym_cache_get(c2, path_in("later"), NULL) != NULL);
	sym_cache_free(c2);

	/* never a FIFO (opening it would block: alarm ends a hang), a
	 * directory or a missing file */
	alarm(20);
	CHECK(mkfifo(path_in("fifo"), 0600) == 0);
	err = NULL;
	CHECK(sym_cache_get(c, path_in("fifo"), &err) == NULL);
	CHECK(err && strcmp(err, "not a regular file") == 0);
	err = NULL;
	CHECK(sym_cache_get(c, dir, &err) == NULL);
	CHECK(err && strcmp(err, "not a regular file") == 0);
	err = NULL;
	CHECK(sym_cache_get(c, path_in("does-not-exist"), &err) == NULL);
	CHECK(err && strstr(err, "No such file"));
	CHECK(sym_cache_get(c, NULL, &err) == NULL && err && *err);
	alarm(0);

	/* many objects: the table grows, every one is found again */
	for (int i = 0; i < 100; i++) {
		char name[32];
		snprintf(name, sizeof(name), "missing-%d", i);
		CHECK(sym_cache_get(c, path_in(name), NULL) == NULL);
	}
	CHECK(sym_cache_get(c, path_in("prog"), NULL) == m);
	sym_cache_free(c);
	sym_cache_free(NULL);
}

/* Variables come from the DWARF sym_open found, in the separate debug file
 * too: local `s` of work() (c_src) at the loop body's address. */
static void vars_separate_debug(void)
{
	struct sym_module *m = open_ok("prog.stripped");
	const char *err = NULL;
	struct vars *v = sym_vars(m, &err);
	if (!v)
		printf("  sym_vars(prog.stripped): %s\n", err ? err : "?");
	CHECK(v != NULL);
	CHECK(sym_vars(m, NULL) == v);  /* built once */
	uint64_t pc;
	CHECK(sym_line_addrs(m, "prog.c", line_of(c_src, "LOOP_BODY"), &pc, 1) == 1);
	struct var_ref *r = NULL;
	char e[256] = "";
	CHECK(vars_compile(v, pc, "s", &r, e, sizeof(e)) == 0);
	CHECK(strncmp(vars_describe(r), "int s: ", 7) == 0);
	vars_free(r);
	CHECK(vars_compile(v, pc, "hot_lock", &r, e, sizeof(e)) == 0);  /* a global */
	vars_free(r);
	CHECK(vars_compile(v, pc, "no_such_var", &r, e, sizeof(e)) == -1 && strstr(e, "no_such_var"));
	sym_close(m);

	/* no DWARF anywhere: no variables, said so */
	m = open_ok("prog.bare");
	err = NULL;
	CHECK(sym_vars(m, &err) == NULL && err && strstr(err, "DWARF"));
	sym_close(m);
}

static void many_lookups(void)
{
	/* 100k lookups spread over libc's text: every hit must contain the
	 * address; timing is printed, never judged. */
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	if (access(libc, R_OK) != 0)
		return;
	struct timespec t0, t1, t2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	const char *err;
	struct sym_module *m = sym_open(libc, &err);
	CHECK(m);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	struct sym_info si;
	struct found f = {0};
	CHECK(sym_find(m, "malloc", on_found, &f) == 1);
	uint64_t base = f.first.start & ~0xfffffull;
	int hits = 0;
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t a = base + x % 0x100000;
		if (sym_lookup(m, a, &si) == 0) {
			hits++;
			CHECK(a >= si.start && a < si.start + si.size);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t2);
	printf("  libc: open %.1f ms, 100k lookups %.1f ms, %d hits\n",
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
	       (t2.tv_sec - t1.tv_sec) * 1e3 + (t2.tv_nsec - t1.tv_nsec) / 1e6, hits);
	CHECK(hits > 0);
	sym_close(m);
}

/* sym_func_ret: each function's return type from DWARF, as declared and
 * as AX holds it. */
static void func_rets(void)
{
	static const char src[] =
		"#include <stdbool.h>\n#include <sys/types.h>\nstruct s { int a, b, c; };\n"
		"enum e { E0, E1 };\ntypedef const char *name_t;\n"
		"int r_int(int x) { return -x; }\nsigned char r_sch(int x) { return (signed char)x; }\n"
		"unsigned short r_ush(int x) { return (unsigned short)x; }\nssize_t r_ssize(int x) { return x; }\n"
		"bool r_bool(int x) { return x > 0; }\nenum e r_enum(int x) { return x ? E1 : E0; }\n"
		"name_t r_name(int x) { return x ? \"a\" : 0; }\nvoid r_void(int x) { (void)x; }\n"
		"struct s r_struct(int x) { struct s v = { x, x, x }; return v; }\ndouble r_dbl(int x) { return x; }\n";
	if (!write_file("rets.c", src) || !sh("cd %s && cc -g -O1 -shared -fPIC -o rets.so rets.c", "")) {
		CHECK(!"rets.so builds");
		return;
	}
	struct sym_module *m = open_ok("rets.so");
	struct { const char *fn, *name; int rc; unsigned size; int sgn, ptr, vd, en, bl; } want[] = {
		{ "r_int", "int", 0, 4, 1, 0, 0, 0, 0 },
		{ "r_sch", "signed char", 0, 1, 1, 0, 0, 0, 0 },
		{ "r_ush", "short unsigned int", 0, 2, 0, 0, 0, 0, 0 },
		{ "r_ssize", "ssize_t", 0, 8, 1, 0, 0, 0, 0 },
		{ "r_bool", "_Bool", 0, 1, 0, 0, 0, 0, 1 },
		{ "r_enum", "enum e", 0, 4, 0, 0, 0, 1, 0 },
		{ "r_name", "name_t", 0, 8, 0, 1, 0, 0, 0 },
		{ "r_void", "void", 0, 0, 0, 0, 1, 0, 0 },
		{ "r_struct", NULL, -1, 0, 0, 0, 0, 0, 0 },
		{ "r_dbl", NULL, -1, 0, 0, 0, 0, 0, 0 },
	};
	for (size_t i = 0; m && i < sizeof want / sizeof want[0]; i++) {
		struct sym_ret r;
		uint64_t a = nm_addr("rets.so", want[i].fn);
		int rc = a ? sym_func_ret(m, a, &r) : -2;
		int good = rc == want[i].rc &&
		           (rc || (!strcmp(r.name, want[i].name) && r.size == want[i].size && r.is_signed == want[i].sgn &&
		                   r.is_ptr == want[i].ptr && r.is_void == want[i].vd && r.is_enum == want[i].en &&
		                   r.is_bool == want[i].bl));
		if (!good)
			printf("  %s: rc %d name '%s' size %u signed %d ptr %d void %d enum %d bool %d\n", want[i].fn, rc,
			       rc ? "" : r.name, r.size, r.is_signed, r.is_ptr, r.is_void, r.is_enum, r.is_bool);
		CHECK(good);
	}
	/* no DWARF for an address: -1 */
	struct sym_ret r;
	CHECK(m && sym_func_ret(m, 0x10, &r) == -1);
	sym_close(m);
}

int main(void)
{
	setup();
	RUN(c_lookup);
	RUN(cxx_demangle);
	RUN(param_lists);
	RUN(data_names);
	RUN(line_addrs);
	RUN(func_rets);
	RUN(pie_nopie_shared);
	RUN(errors);
	RUN(find_glob);
	RUN(stripped_and_nodebug);
	RUN(object_cache);
	RUN(vars_separate_debug);
	RUN(many_lookups);
	if (dir[0])
		sh("rm -rf '%s'%s", "");
	UNIT_END();
}

/* test_cdb.c — unit tests of src/sym/cdb.c (SDCC's .cdb debug files) on
 * real sdcc output: tests/progs/mcs51_fw.c is built with Debian's sdcc
 * --debug in the small and the large memory model into a mkdtemp
 * directory.  The expected values come from the other files the same
 * build writes: symbol addresses from the linker's map (fw.map), the first
 * address of each source line from the assembler's listing (fw.rst), the
 * last instruction of each function from the code itself (fw.ihx: ret is
 * 0x22, reti 0x32), types and spaces from the source's declarations. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sym/cdb.h"
#include "unit/unit.h"

static char dir[64];
static const char *model[2] = { "small", "large" };
static uint8_t code[2][65536];

static void path(char *buf, size_t n, int m, const char *ext)
{
	snprintf(buf, n, "%s/%s/mcs51_fw.%s", dir, model[m], ext);
}

/* The linker map's address of _name ("C:   0000006D  _tick"), or -1. */
static long map_addr(int m, const char *name)
{
	char p[128], line[512], want[80];
	path(p, sizeof p, m, "map");
	FILE *f = fopen(p, "r");
	long a = -1;
	snprintf(want, sizeof want, "_%s", name);
	while (f && fgets(line, sizeof line, f)) {
		char nm[100];
		unsigned long v;
		const char *p = line + strspn(line, " ");
		if (p[0] && p[1] == ':')
			p += 2;   /* "C:" an area's letter, on some lines only */
		if (sscanf(p, " %lx %99s", &v, nm) == 2 && !strcmp(nm, want)) {
			a = (long)v;
			break;
		}
	}
	if (f)
		fclose(f);
	return a;
}

/* The first instruction address the listing gives after ";\tPATH/mcs51_fw.c:LINE:" */
static long rst_line(int m, int lineno)
{
	char p[128], line[512], want[64];
	path(p, sizeof p, m, "rst");
	FILE *f = fopen(p, "r");
	snprintf(want, sizeof want, "mcs51_fw.c:%d:", lineno);   /* after the path sdcc was given */
	long a = -1;
	int armed = 0;
	while (f && fgets(line, sizeof line, f) && a < 0) {
		if (strstr(line, want)) {
			armed = 1;
			continue;
		}
		unsigned long v;
		unsigned b;
		/* "      00007A 90 7F 02         [24]  501 	mov ..." */
		if (armed && sscanf(line, " %6lx %2x", &v, &b) == 2 && line[6] != ' ' && strchr(line, '['))
			a = (long)v;
	}
	if (f)
		fclose(f);
	return a;
}

/* The source line holding text (in tests/progs/mcs51_fw.c). */
static int src_line(const char *text)
{
	char p[512], line[512];
	snprintf(p, sizeof p, "%s/tests/progs/mcs51_fw.c", getenv("ROOT") ? getenv("ROOT") : ".");
	FILE *f = fopen(p, "r");
	int n = 0, found = 0;
	while (f && fgets(line, sizeof line, f)) {
		n++;
		if (strstr(line, text)) {
			found = n;
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
}

static int hexv(const char *s, int k)
{
	unsigned v;
	char b[9];
	memcpy(b, s, (size_t)k);
	b[k] = 0;
	return sscanf(b, "%x", &v) == 1 ? (int)v : -1;
}

static int load_ihx(int m)
{
	char p[128], line[600];
	path(p, sizeof p, m, "ihx");
	FILE *f = fopen(p, "r");
	int recs = 0;
	while (f && fgets(line, sizeof line, f)) {
		if (line[0] != ':')
			continue;
		int n = hexv(line + 1, 2), a = hexv(line + 3, 4), t = hexv(line + 7, 2);
		if (t != 0 || n < 0 || a < 0)
			continue;
		for (int i = 0; i < n && a + i < 65536; i++)
			code[m][a + i] = (uint8_t)hexv(line + 9 + 2 * i, 2);
		recs++;
	}
	if (f)
		fclose(f);
	return recs;
}

static struct cdb *open_model(int m)
{
	char p[128], err[256];
	path(p, sizeof p, m, "cdb");
	struct cdb *c = cdb_open(p, err, sizeof err);
	if (!c)
		printf("  %s\n", err);
	return c;
}

static void check_funcs(int m)
{
	struct cdb *c = open_model(m);
	CHECK(c);
	CHECK(load_ihx(m) > 0);
	const char *names[] = { "tick", "timer0_isr", "work", "main" };
	for (int i = 0; i < 4; i++) {
		const struct cdb_func *f = cdb_func_named(c, names[i]);
		CHECK(f && f->has_lo && f->has_hi);
		long a = map_addr(m, names[i]);
		CHECK(a >= 0);
		CHECK_EQ_U(f->lo, (unsigned long)a);
		CHECK(f->hi > f->lo && f->hi < 65536);
		/* the last instruction: reti for the interrupt handler, ret else */
		CHECK_EQ_U(code[m][f->hi], i == 1 ? 0x32 : 0x22);
		CHECK_EQ_U(f->isr, i == 1);
		if (i == 1)
			CHECK_EQ_U(f->intno, 1);
		CHECK(cdb_func_at(c, f->lo) == f && cdb_func_at(c, f->hi) == f);
		CHECK(cdb_func_at(c, (f->lo + f->hi) / 2) == f);
	}
	CHECK(cdb_func_named(c, "no_such") == NULL);
	cdb_free(c);
}

static void check_lines(int m)
{
	struct cdb *c = open_model(m);
	CHECK(c);
	const char *texts[] = { "own.tick_calls++;", "own.isr_calls++;", "own.odd++;", "c_data = (unsigned char)",
	                        "own.done = 0x5a5a;", "sif = 's';" };
	for (int i = 0; i < 6; i++) {
		int line = src_line(texts[i]);
		CHECK(line > 0);
		long want = rst_line(m, line);
		CHECK(want >= 0);
		uint32_t a[4];
		int k = cdb_line_addrs(c, "mcs51_fw.c", line, a, 4);
		CHECK_EQ_U(k, 1);
		CHECK_EQ_U(a[0], (unsigned long)want);
		/* a path with directories names the same file */
		CHECK_EQ_U(cdb_line_addrs(c, "tests/progs/mcs51_fw.c", line, a, 4), 1);
		const char *f;
		int l;
		CHECK(cdb_addr_line(c, (uint32_t)want, &f, &l) == 0);
		CHECK(!strcmp(f, "mcs51_fw.c"));
		CHECK_EQ_U(l, line);
	}
	uint32_t a[2];
	CHECK(cdb_line_addrs(c, "other.c", 10, a, 2) == -1);
	CHECK(cdb_line_addrs(c, "mcs51_fw.c", 1, a, 2) == 0);   /* a comment */
	cdb_free(c);
}

static void check_var(struct cdb *c, int m, const char *name, int space, int base, int size, int is_unsigned)
{
	const struct cdb_var *v = cdb_var_named(c, NULL, name);
	if (!v)
		printf("  no variable %s\n", name);
	CHECK(v);
	CHECK_EQ_U(v->space, space);
	CHECK_EQ_U(v->type.base, base);
	CHECK_EQ_U(v->type.size, size);
	CHECK_EQ_U(v->type.is_unsigned, is_unsigned);
	CHECK(v->has_addr);
	long a = map_addr(m, name);
	CHECK(a >= 0);
	CHECK_EQ_U(v->addr, (unsigned long)a);
}

static void check_vars(int m)
{
	struct cdb *c = open_model(m);
	CHECK(c);
	check_var(c, m, "c_data", CDB_DATA, CDB_T_CHAR, 1, 1);
	check_var(c, m, "i_idata", CDB_IDATA, CDB_T_INT, 2, 0);
	check_var(c, m, "l_xdata", CDB_XDATA, CDB_T_LONG, 4, 0);
	check_var(c, m, "f_data", CDB_DATA, CDB_T_FLOAT, 4, 0);
	check_var(c, m, "l_idata", CDB_IDATA, CDB_T_LONG, 4, 0);
	check_var(c, m, "f_xdata", CDB_XDATA, CDB_T_FLOAT, 4, 0);
	check_var(c, m, "c_xdata", CDB_XDATA, CDB_T_CHAR, 1, 1);
	check_var(c, m, "own", CDB_XDATA, CDB_T_STRUCT, 23, 0);
	/* ticks: volatile unsigned int, in the model's default space */
	check_var(c, m, "ticks", m ? CDB_XDATA : CDB_DATA, CDB_T_INT, 2, 1);
	/* work's argument: in the model's default space (not reentrant), or
	 * r6/r7-like registers; main's loop counter in registers */
	const struct cdb_var *x = cdb_var_named(c, "work", "x");
	CHECK(x && x->func && !strcmp(x->func, "work"));
	CHECK_EQ_U(x->type.base, CDB_T_INT);
	CHECK(x->space == (m ? CDB_XDATA : CDB_DATA) || x->space == CDB_REG);
	if (x->space != CDB_REG)
		CHECK(x->has_addr);
	const struct cdb_var *i = cdb_var_named(c, "main", "i");
	CHECK(i);
	if (m == 0) {
		/* small model: main's loop counter in two registers */
		CHECK(i->space == CDB_REG && i->nregs == 2);
		CHECK(i->regs[0][0] == 'r' && i->regs[1][0] == 'r');
	} else {
		CHECK(i->space == CDB_XDATA);   /* large model: in xdata */
	}
	/* a local of another function is not visible from main */
	CHECK(cdb_var_named(c, "main", "r") == NULL);
	CHECK(cdb_var_named(c, "work", "r") != NULL);
	CHECK_EQ_U(c->bad, 0);
	cdb_free(c);
}

static void test_small_funcs(void) { check_funcs(0); }
static void test_large_funcs(void) { check_funcs(1); }
static void test_small_lines(void) { check_lines(0); }
static void test_large_lines(void) { check_lines(1); }
static void test_small_vars(void) { check_vars(0); }
static void test_large_vars(void) { check_vars(1); }

static void test_beside(void)
{
	char p[128], b[160];
	path(p, sizeof p, 0, "ihx");
	CHECK(cdb_beside(p, b, sizeof b) == 0);
	CHECK(strstr(b, "small/mcs51_fw.cdb"));
	CHECK(cdb_beside("/nonexistent/fw.ihx", b, sizeof b) == -1);
	CHECK(cdb_beside(p, b, 8) == -1);   /* too small a buffer */
}

/* Damaged files: an error, or the bad records counted and skipped. */
static void test_bad(void)
{
	char p[128], err[256];
	snprintf(p, sizeof p, "%s/bad.cdb", dir);
	FILE *f = fopen(p, "w");
	CHECK(f);
	fputs("hello\nnot a record\n", f);
	fclose(f);
	CHECK(cdb_open(p, err, sizeof err) == NULL && strstr(err, "no SDCC debug records"));
	CHECK(cdb_open(dir, err, sizeof err) == NULL);
	CHECK(cdb_open("/nonexistent.cdb", err, sizeof err) == NULL);
	f = fopen(p, "w");
	CHECK(f);
	fputs("M:fw\nF:G$f$0_0$0({2}DF,SV:S),C,0,0,0,0,0\n"
	      "S:G$v$0_0$0({99999999999}SC:U),E,0,0\n"       /* size out of range */
	      "S:G$w$0_0$0({2}SI:S),Q,0,0\n"                  /* no such space */
	      "S:G$u$0_0$0({1}SC:U),E,0,0\n"
	      "L:G$f$0$0:10\nL:XG$f$0$0:20\n"
	      "L:G$u$0_0$0:123456\n"                          /* a data address beyond 64 KiB */
	      "L:C$x.c$5$0_0$1:FFFFFFFFF\n"                   /* a code address beyond 24 bits */
	      "L:C$x.c$4$0_0$1:12\n", f);
	for (int i = 0; i < 10000; i++)
		fputc('S', f);                                    /* a line longer than any record */
	fputs("\n", f);
	fclose(f);
	struct cdb *c = cdb_open(p, err, sizeof err);
	CHECK(c);
	CHECK_EQ_U(c->nfuncs, 1);
	CHECK_EQ_U(c->funcs[0].lo, 0x10);
	CHECK_EQ_U(c->funcs[0].hi, 0x20);
	CHECK_EQ_U(c->nvars, 1);
	CHECK(!c->vars[0].has_addr);
	CHECK_EQ_U(c->nlines, 1);
	CHECK_EQ_U(c->bad, 5);
	cdb_free(c);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/sonde-cdb-XXXXXX");
	if (!mkdtemp(dir)) {
		printf("not ok - mkdtemp\n");
		return 1;
	}
	const char *root = getenv("ROOT") ? getenv("ROOT") : ".";
	for (int m = 0; m < 2; m++) {
		char cmd[1024];
		snprintf(cmd, sizeof cmd, "mkdir -p %s/%s && sdcc --debug -mmcs51 --model-%s -o %s/%s/ %s/tests/progs/mcs51_fw.c",
		         dir, model[m], model[m], dir, model[m], root);
		if (system(cmd) != 0) {
			printf("not ok - sdcc --model-%s (Debian package sdcc)\n", model[m]);
			return 1;
		}
	}
	RUN(test_small_funcs);
	RUN(test_large_funcs);
	RUN(test_small_lines);
	RUN(test_large_lines);
	RUN(test_small_vars);
	RUN(test_large_vars);
	RUN(test_beside);
	RUN(test_bad);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd)) {
	}
	UNIT_END();
}

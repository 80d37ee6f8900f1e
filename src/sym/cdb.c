/* cdb.c — the reader of SDCC's .cdb debug files (cdb.h): one pass over
 * the file's lines gathers the F: (functions), S: (symbols) and L: (linker:
 * addresses of symbols, function ends, C lines) records, then the
 * addresses are given to the functions and variables they name.  The
 * record grammar is the one of SDCC's "CDB File Format" (sdcc-doc): a
 * name is SCOPE$NAME$LEVEL_BLOCK$... where SCOPE is G (global),
 * F<module> (file-static) or L<module>.<function> (a local; older SDCC:
 * L<function>); a type is ({SIZE}DECL,...,SPEC:S|U).  Nothing in the file is
 * trusted: a line longer than CDB_LINE_MAX, a number out of range or a
 * record that does not parse is counted in cdb.bad and skipped. */
#include "sym/cdb.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CDB_LINE_MAX 8192
#define CDB_FILE_MAX (64u << 20)   /* a firmware's .cdb is kilobytes; bound what we read */
#define CDB_COUNT_MAX 1000000      /* records of one kind */
#define CDB_CODE_MAX 0xffffffu     /* code addresses (banked code: 24 bits) */
#define CDB_DATA_MAX 0xffffu

static const char *keep(struct cdb *c, const char *s, size_t len)
{
	if (c->nnames == c->capnames) {
		int cap = c->capnames ? c->capnames * 2 : 256;
		char **v = realloc(c->names, (size_t)cap * sizeof *v);
		if (!v)
			return NULL;
		c->names = v;
		c->capnames = cap;
	}
	char *d = malloc(len + 1);
	if (!d)
		return NULL;
	memcpy(d, s, len);
	d[len] = 0;
	c->names[c->nnames++] = d;
	return d;
}

static int grow(void **v, int n, int *cap, size_t sz)
{
	if (n < *cap)
		return 0;
	if (n >= CDB_COUNT_MAX)
		return -1;
	int nc = *cap ? *cap * 2 : 64;
	void *w = realloc(*v, (size_t)nc * sz);
	if (!w)
		return -1;
	*v = w;
	*cap = nc;
	return 0;
}

/* A number of at most max (base 10 or 16) from s[0..len): 0, or -1. */
static int num(const char *s, size_t len, int base, unsigned long max, unsigned long *out)
{
	if (!len || len > 16)
		return -1;
	char b[20];
	memcpy(b, s, len);
	b[len] = 0;
	char *end;
	errno = 0;
	unsigned long v = strtoul(b, &end, base);
	if (errno || *end || v > max || b[0] == '-' || b[0] == '+')
		return -1;
	*out = v;
	return 0;
}

static int space_of(char ch)
{
	switch (ch) {
	case 'A': return CDB_XSTACK;
	case 'B': return CDB_STACK;
	case 'C': case 'D': return CDB_CODE;
	case 'E': return CDB_DATA;
	case 'F': return CDB_XDATA;
	case 'G': return CDB_IDATA;
	case 'H': return CDB_BIT;
	case 'I': return CDB_SFR;
	case 'J': return CDB_SBIT;
	case 'P': return CDB_PDATA;
	case 'R': return CDB_REG;
	case 'Z': return CDB_NONE;
	default: return -1;
	}
}

const char *cdb_space_name(int space)
{
	static const char *const n[] = { "none", "xstack", "stack", "code", "data", "xdata", "idata", "bit", "sfr",
	                                 "sbit", "pdata", "reg" };
	return space >= 0 && space < (int)(sizeof n / sizeof n[0]) ? n[space] : "?";
}

/* The type "({2}DX,SC:U)" at s (s[0] == '('): its end (after ')') or NULL. */
static const char *parse_type(const char *s, struct cdb_type *t)
{
	memset(t, 0, sizeof *t);
	if (s[0] != '(' || s[1] != '{')
		return NULL;
	const char *p = s + 2, *q = strchr(p, '}');
	unsigned long v;
	if (!q || num(p, (size_t)(q - p), 10, 0xffffff, &v))
		return NULL;
	t->size = (int)v;
	p = q + 1;
	t->base = CDB_T_OTHER;
	for (;;) {
		size_t l = strcspn(p, ",)");
		if (!p[l] || l < 2)
			return NULL;
		if (p[0] == 'D') {
			switch (p[1]) {
			case 'F': t->is_func = 1; break;
			case 'A': t->array = 1; if (l > 2 && !num(p + 2, strcspn(p + 2, "d,)"), 10, 0xffffff, &v)) t->array = (int)v; break;
			case 'G': t->ptr_generic = 1; t->ptr = CDB_NONE; break;
			case 'C': t->ptr = CDB_CODE; break;
			case 'X': t->ptr = CDB_XDATA; break;
			case 'D': t->ptr = CDB_DATA; break;
			case 'I': t->ptr = CDB_IDATA; break;
			case 'P': t->ptr = CDB_PDATA; break;
			default: break;  /* other pointers (eeprom, ...) */
			}
			if (p[1] != 'F' && p[1] != 'A' && !t->ptr_generic && !t->ptr)
				t->ptr_generic = 1;
		} else if (p[0] == 'S') {
			switch (p[1]) {
			case 'C': t->base = CDB_T_CHAR; break;
			case 'S': t->base = CDB_T_SHORT; break;
			case 'I': t->base = CDB_T_INT; break;
			case 'L': t->base = CDB_T_LONG; break;
			case 'Q': t->base = CDB_T_LONGLONG; break;
			case 'F': t->base = CDB_T_FLOAT; break;
			case 'V': t->base = CDB_T_VOID; break;
			case 'T': t->base = CDB_T_STRUCT; break;
			case 'X': case 'B': t->base = CDB_T_BIT; break;
			default: t->base = CDB_T_OTHER; break;
			}
			const char *colon = memchr(p, ':', l);
			if (colon && colon + 1 < p + l)
				t->is_unsigned = colon[1] == 'U';
		} else {
			return NULL;
		}
		p += l;
		if (*p == ')')
			return p + 1;
		p++;
	}
}

/* SCOPE$NAME$LEVEL_BLOCK... at s, up to the '(' of a type or the end e:
 * the scope (kind 'G', 'F' with module, 'L' with module and function) and
 * the name.  0, or -1. */
struct cname {
	char kind;
	const char *mod; size_t modl;     /* F / L: the module (or NULL) */
	const char *fn; size_t fnl;       /* L: the function */
	const char *name; size_t namel;
	int level, block;
};

static int parse_name(const char *s, const char *e, struct cname *n)
{
	memset(n, 0, sizeof *n);
	const char *d1 = memchr(s, '$', (size_t)(e - s));
	if (!d1 || d1 == s)
		return -1;
	n->kind = s[0];
	if (n->kind == 'F') {
		n->mod = s + 1;
		n->modl = (size_t)(d1 - s - 1);
	} else if (n->kind == 'L') {
		const char *dot = memchr(s + 1, '.', (size_t)(d1 - s - 1));
		if (dot) {
			n->mod = s + 1;
			n->modl = (size_t)(dot - s - 1);
			n->fn = dot + 1;
			n->fnl = (size_t)(d1 - dot - 1);
		} else {
			n->fn = s + 1;
			n->fnl = (size_t)(d1 - s - 1);
		}
		if (!n->fnl)
			return -1;
	} else if (n->kind != 'G' || d1 != s + 1) {
		return -1;
	}
	const char *d2 = memchr(d1 + 1, '$', (size_t)(e - d1 - 1));
	if (!d2 || d2 == d1 + 1)
		return -1;
	n->name = d1 + 1;
	n->namel = (size_t)(d2 - d1 - 1);
	unsigned long lv, bl;
	const char *u = d2 + 1;
	size_t ll = strcspn(u, "_$(:");
	if (u + ll > e || num(u, ll, 10, 1000000, &lv))
		return -1;
	n->level = (int)lv;
	if (u[ll] == '_') {
		const char *b = u + ll + 1;
		size_t bll = strcspn(b, "$(:");
		if (b + bll > e || num(b, bll, 10, 1000000, &bl))
			return -1;
		n->block = (int)bl;
	}
	return 0;
}

static int same(const char *a, const char *b, size_t bl)
{
	return a && strlen(a) == bl && !memcmp(a, b, bl);
}

/* F:NAME(TYPE),SPACE,ONSTACK,STACK,ISR,INTNO,BANK */
static int rec_func(struct cdb *c, const char *s, int *cap)
{
	const char *par = strchr(s, '(');
	struct cname n;
	struct cdb_func f = { 0 };
	if (!par || parse_name(s, par, &n) || n.kind == 'L')
		return -1;
	const char *p = parse_type(par, &f.ret);
	unsigned long isr = 0, intno = 0, bank = 0;
	/* ,C,0,0,ISR,INTNO,BANK */
	if (!p || p[0] != ',' || !p[1] || p[2] != ',')
		return -1;
	p += 3;
	for (int k = 0; k < 2 && p; k++)
		p = (p = strchr(p, ',')) ? p + 1 : NULL;   /* onstack, stack */
	if (p) {
		size_t l = strcspn(p, ",");
		if (num(p, l, 10, 1, &isr))
			return -1;
		p += l;
		if (*p == ',') {
			l = strcspn(++p, ",");
			if (num(p, l, 10, 255, &intno))
				return -1;
			p += l;
			if (*p == ',' && num(p + 1, strlen(p + 1), 10, 3, &bank))
				return -1;
		}
	}
	if (grow((void **)&c->funcs, c->nfuncs, cap, sizeof f))
		return -2;
	f.name = keep(c, n.name, n.namel);
	f.module = n.kind == 'F' ? keep(c, n.mod, n.modl) : NULL;
	if (!f.name || (n.kind == 'F' && !f.module))
		return -2;
	f.isr = (int)isr;
	f.intno = (int)intno;
	f.bank = (int)bank;
	c->funcs[c->nfuncs++] = f;
	return 0;
}

/* S:NAME(TYPE),SPACE,ONSTACK,STACK[,[REGS]] */
static int rec_sym(struct cdb *c, const char *s, int *cap)
{
	const char *par = strchr(s, '(');
	struct cname n;
	struct cdb_var v = { 0 };
	if (!par || parse_name(s, par, &n))
		return -1;
	const char *p = parse_type(par, &v.type);
	if (!p || p[0] != ',' || !p[1])
		return -1;
	if (v.type.is_func)
		return 0;   /* the symbol of a function: its F: record says more */
	if ((v.space = space_of(p[1])) < 0 || p[2] != ',')
		return -1;
	p += 3;
	unsigned long onst, st;
	size_t l = strcspn(p, ",");
	if (num(p, l, 10, 1, &onst) || p[l] != ',')
		return -1;
	p += l + 1;
	l = strcspn(p, ",");
	/* the stack offset may be negative (arguments below the frame) */
	int neg = p[0] == '-';
	if (num(p + neg, l - (size_t)neg, 10, 0xffff, &st))
		return -1;
	p += l;
	v.on_stack = (int)onst;
	v.stack = neg ? -(int)st : (int)st;
	if (*p == ',' && p[1] == '[') {
		p += 2;
		while (*p && *p != ']') {
			l = strcspn(p, ",]");
			if (!l || l > 4 || v.nregs == 4)
				return -1;
			memcpy(v.regs[v.nregs], p, l);
			v.regs[v.nregs++][l] = 0;
			p += l;
			if (*p == ',')
				p++;
		}
		if (*p != ']')
			return -1;
	}
	if (grow((void **)&c->vars, c->nvars, cap, sizeof v))
		return -2;
	v.name = keep(c, n.name, n.namel);
	if (!v.name)
		return -2;
	if (n.mod && !(v.module = keep(c, n.mod, n.modl)))
		return -2;
	if (n.kind == 'L' && !(v.func = keep(c, n.fn, n.fnl)))
		return -2;
	v.level = n.level;
	v.block = n.block;
	c->vars[c->nvars++] = v;
	return 0;
}

static struct cdb_func *func_of(struct cdb *c, const struct cname *n)
{
	for (int i = 0; i < c->nfuncs; i++) {
		struct cdb_func *f = &c->funcs[i];
		if (same(f->name, n->name, n->namel) &&
		    (n->kind == 'G' ? !f->module : n->kind == 'F' && same(f->module, n->mod, n->modl)))
			return f;
	}
	return NULL;
}

/* L:C$FILE$LINE$LEVEL_BLOCK$...:ADDR, L:[X]G$NAME...:ADDR, L:LMOD.FN$NAME...:ADDR, L:A$... (skipped) */
static int rec_link(struct cdb *c, const char *s, int *capl)
{
	const char *colon = strrchr(s, ':');
	unsigned long addr;
	if (!colon || num(colon + 1, strlen(colon + 1), 16, CDB_CODE_MAX, &addr))
		return -1;
	if (s[0] == 'A' && s[1] == '$')
		return 0;   /* assembler lines */
	if (s[0] == 'C' && s[1] == '$') {
		const char *f = s + 2, *d = memchr(f, '$', (size_t)(colon - f));
		unsigned long line;
		if (!d || d == f)
			return -1;
		size_t ll = strcspn(d + 1, "$:");
		if (num(d + 1, ll, 10, 10000000, &line) || !line)
			return -1;
		if (grow((void **)&c->lines, c->nlines, capl, sizeof *c->lines))
			return -2;
		const char *fn = NULL;
		/* the same file name is kept once: the lines of one file are together */
		for (int i = c->nlines - 1; i >= 0 && i >= c->nlines - 64 && !fn; i--)
			if (same(c->lines[i].file, f, (size_t)(d - f)))
				fn = c->lines[i].file;
		if (!fn && !(fn = keep(c, f, (size_t)(d - f))))
			return -2;
		c->lines[c->nlines++] = (struct cdb_line){ fn, (int)line, (uint32_t)addr };
		return 0;
	}
	int end = s[0] == 'X';
	struct cname n;
	if (parse_name(s + end, colon, &n))
		return -1;
	struct cdb_func *f = n.kind != 'L' ? func_of(c, &n) : NULL;
	if (f) {
		if (end) {
			f->hi = (uint32_t)addr;
			f->has_hi = 1;
		} else {
			f->lo = (uint32_t)addr;
			f->has_lo = 1;
		}
		return 0;
	}
	if (end)
		return 0;   /* the end of a function we have no F: record of */
	for (int i = 0; i < c->nvars; i++) {
		struct cdb_var *v = &c->vars[i];
		int scope = n.kind == 'G' ? !v->module && !v->func
		          : n.kind == 'F' ? !v->func && same(v->module, n.mod, n.modl)
		          : same(v->func, n.fn, n.fnl) && (!n.mod || same(v->module, n.mod, n.modl));
		if (scope && same(v->name, n.name, n.namel) && v->level == n.level && v->block == n.block) {
			if (v->space != CDB_CODE && addr > CDB_DATA_MAX)
				return -1;
			v->addr = (uint32_t)addr;
			v->has_addr = 1;
			return 0;
		}
	}
	return 0;   /* the address of something we keep nothing of (an SFR bit's alias...) */
}

static int func_cmp(const void *a, const void *b)
{
	const struct cdb_func *x = a, *y = b;
	if (x->has_lo != y->has_lo)
		return x->has_lo ? -1 : 1;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int line_cmp(const void *a, const void *b)
{
	const struct cdb_line *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

void cdb_free(struct cdb *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->nnames; i++)
		free(c->names[i]);
	free(c->names);
	free(c->funcs);
	free(c->vars);
	free(c->lines);
	free(c);
}

struct cdb *cdb_open(const char *path, char *err, size_t n)
{
	FILE *fp = fopen(path, "r");
	struct stat st;
	if (!fp || fstat(fileno(fp), &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, n, "%s: %s", path, !fp ? strerror(errno) : "not a regular file");
		if (fp)
			fclose(fp);
		return NULL;
	}
	if ((uint64_t)st.st_size > CDB_FILE_MAX) {
		snprintf(err, n, "%s: %lld bytes, more than a debug file of SDCC holds (%u MiB at most)", path,
		         (long long)st.st_size, CDB_FILE_MAX >> 20);
		fclose(fp);
		return NULL;
	}
	struct cdb *c = calloc(1, sizeof *c);
	char *buf = malloc(CDB_LINE_MAX + 2);
	/* F: and S: records first, then L: records (which name them): the
	 * file is read twice, each line bounded. */
	int capf = 0, capv = 0, capl = 0, records = 0, oom = !c || !buf;
	for (int pass = 0; pass < 2 && !oom; pass++) {
		rewind(fp);
		while (fgets(buf, CDB_LINE_MAX + 2, fp)) {
			size_t l = strlen(buf);
			if (l && buf[l - 1] != '\n' && !feof(fp)) {
				int ch;   /* too long: the rest of it skipped */
				while ((ch = fgetc(fp)) != EOF && ch != '\n')
					;
				c->bad += pass;
				continue;
			}
			while (l && (buf[l - 1] == '\n' || buf[l - 1] == '\r'))
				buf[--l] = 0;
			if (l < 3 || buf[1] != ':')
				continue;
			int rc = 0, mine = 1;
			if (pass == 0 && buf[0] == 'F')
				rc = rec_func(c, buf + 2, &capf);
			else if (pass == 0 && buf[0] == 'S')
				rc = rec_sym(c, buf + 2, &capv);
			else if (pass == 1 && buf[0] == 'L')
				rc = rec_link(c, buf + 2, &capl);
			else
				mine = 0;
			if (rc == -2) {
				oom = 1;
				break;
			}
			if (mine) {
				records++;
				c->bad += rc < 0;
			}
			/* M: (module) and T: (struct types) records are not read */
		}
	}
	fclose(fp);
	free(buf);
	if (oom) {
		snprintf(err, n, "%s: out of memory", path);
		cdb_free(c);
		return NULL;
	}
	if (!records || records == c->bad) {
		snprintf(err, n, "%s: no SDCC debug records (F:, S:, L:) in it", path);
		cdb_free(c);
		return NULL;
	}
	qsort(c->funcs, (size_t)c->nfuncs, sizeof *c->funcs, func_cmp);
	qsort(c->lines, (size_t)c->nlines, sizeof *c->lines, line_cmp);
	/* A function without its end record (or an end below its start) ends
	 * where the next one starts. */
	for (int i = 0; i < c->nfuncs; i++) {
		struct cdb_func *f = &c->funcs[i];
		if (f->has_lo && (!f->has_hi || f->hi < f->lo)) {
			f->hi = i + 1 < c->nfuncs && c->funcs[i + 1].has_lo && c->funcs[i + 1].lo > f->lo
			        ? c->funcs[i + 1].lo - 1 : f->lo;
			f->has_hi = 1;
		}
		for (int k = 0; k < c->nlines && f->has_lo; k++)
			if (c->lines[k].addr >= f->lo && c->lines[k].addr <= f->hi) {
				f->line = c->lines[k].line;
				break;
			}
	}
	return c;
}

int cdb_beside(const char *path, char *buf, size_t n)
{
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(path, '.');
	size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - path) : strlen(path);
	if (stem + 5 > n)
		return -1;
	memcpy(buf, path, stem);
	memcpy(buf + stem, ".cdb", 5);
	struct stat st;
	return stat(buf, &st) == 0 && S_ISREG(st.st_mode) ? 0 : -1;
}

const struct cdb_func *cdb_func_at(const struct cdb *c, uint32_t addr)
{
	for (int i = 0; i < c->nfuncs; i++) {
		const struct cdb_func *f = &c->funcs[i];
		if (f->has_lo && addr >= f->lo && addr <= f->hi)
			return f;
	}
	return NULL;
}

const struct cdb_func *cdb_func_named(const struct cdb *c, const char *name)
{
	const char *dot = strchr(name, '.');
	for (int i = 0; i < c->nfuncs; i++) {
		const struct cdb_func *f = &c->funcs[i];
		if (!strcmp(f->name, name))
			return f;
		if (dot && f->module && same(f->module, name, (size_t)(dot - name)) && !strcmp(f->name, dot + 1))
			return f;
	}
	return NULL;
}

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

int cdb_line_addrs(const struct cdb *c, const char *file, int line, uint32_t *addrs, int max)
{
	int known = 0, count = 0;
	const struct cdb_func *last = NULL;
	const char *want = base(file);
	/* lines are sorted by address: the first record of each function is
	 * its lowest address */
	for (int i = 0; i < c->nlines; i++) {
		const struct cdb_line *l = &c->lines[i];
		if (strcmp(base(l->file), want))
			continue;
		known = 1;
		if (l->line != line)
			continue;
		const struct cdb_func *f = cdb_func_at(c, l->addr);
		if (count && f == last)
			continue;
		last = f;
		if (count < max)
			addrs[count] = l->addr;
		count++;
	}
	return known ? count : -1;
}

int cdb_addr_line(const struct cdb *c, uint32_t addr, const char **file, int *line)
{
	const struct cdb_func *f = cdb_func_at(c, addr);
	int best = -1;
	for (int i = 0; i < c->nlines && c->lines[i].addr <= addr; i++)
		if (!f || c->lines[i].addr >= f->lo)
			best = i;
	if (best < 0)
		return -1;
	*file = c->lines[best].file;
	*line = c->lines[best].line;
	return 0;
}

const struct cdb_var *cdb_var_named(const struct cdb *c, const char *func, const char *name)
{
	const struct cdb_var *g = NULL;
	for (int i = 0; i < c->nvars; i++) {
		const struct cdb_var *v = &c->vars[i];
		if (strcmp(v->name, name))
			continue;
		if (v->func && func && !strcmp(v->func, func))
			return v;
		if (!v->func && !g)
			g = v;
	}
	return g;
}

/* lines.c — DWARF source positions for the sym module, through libdw:
 * address -> compile unit (a table of CU address ranges built once, on first
 * use), address -> file:line (sym_addr_line), a function's declared
 * file:line for sym_lookup (a per-CU index of subprogram DIEs, built the
 * first time a CU is asked), FILE:LINE -> breakpoint addresses
 * (sym_line_addrs: is_stmt rows of that line, the lowest address per
 * function instance, inlined copies included), and the DWARF subprogram
 * covering an address that no ELF symbol names.  libdw parses a CU's line
 * table the first time it is asked for it and keeps it; nothing here walks
 * every CU's lines except sym_line_addrs.
 */
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "sym/sym_int.h"

/* ---- address -> compile unit ---- */

struct cuvec {
	struct sym_cu_range *v;
	size_t n, cap;
};

static int cu_push(struct cuvec *cv, uint64_t lo, uint64_t hi, size_t cu)
{
	if (hi <= lo)
		return 0;
	if (cv->n == cv->cap) {
		size_t cap = cv->cap ? cv->cap * 2 : 64;
		struct sym_cu_range *v = realloc(cv->v, cap * sizeof(*v));
		if (!v)
			return -1;
		cv->v = v;
		cv->cap = cap;
	}
	cv->v[cv->n].lo = lo;
	cv->v[cv->n].hi = hi;
	cv->v[cv->n].cu = cu;
	cv->n++;
	return 0;
}

static int cu_cmp(const void *a, const void *b)
{
	const struct sym_cu_range *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static int add_cu(struct sym_module *m, Dwarf_Off off, size_t *cap)
{
	if (m->ncuv == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct sym_cu *v = realloc(m->cuv, nc * sizeof(*v));
		if (!v)
			return -1;
		m->cuv = v;
		*cap = nc;
	}
	memset(&m->cuv[m->ncuv], 0, sizeof(m->cuv[0]));
	m->cuv[m->ncuv].off = off;
	m->ncuv++;
	return 0;
}

static void build_cus(struct sym_module *m)
{
	m->cus_built = true;
	struct cuvec cv = {0};
	size_t cucap = 0;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t ut;
	while (dwarf_get_units(m->dw, cu, &cu, NULL, &ut, &cudie, NULL) == 0) {
		if (ut != DW_UT_compile && ut != DW_UT_skeleton)
			continue;
		if (add_cu(m, dwarf_dieoffset(&cudie), &cucap) < 0)
			goto oom;
		size_t idx = m->ncuv - 1;
		Dwarf_Addr base, lo, hi;
		ptrdiff_t o = 0;
		int got = 0;
		while ((o = dwarf_ranges(&cudie, o, &base, &lo, &hi)) > 0) {
			if (lo == 0)
				continue; /* discarded code */
			if (cu_push(&cv, lo, hi, idx) < 0)
				goto oom;
			got++;
		}
		if (got)
			continue;
		/* No usable ranges on the CU: its line-table sequences. */
		Dwarf_Lines *lines;
		size_t n;
		if (dwarf_getsrclines(&cudie, &lines, &n) != 0)
			continue;
		bool start = true;
		Dwarf_Addr seq = 0;
		for (size_t i = 0; i < n; i++) {
			Dwarf_Line *l = dwarf_onesrcline(lines, i);
			Dwarf_Addr a;
			bool end = false;
			if (!l || dwarf_lineaddr(l, &a) != 0)
				continue;
			dwarf_lineendsequence(l, &end);
			if (start) {
				seq = a;
				start = false;
			}
			if (end) {
				if (seq != 0 && cu_push(&cv, seq, a, idx) < 0)
					goto oom;
				start = true;
			}
		}
	}
	if (cv.n)
		qsort(cv.v, cv.n, sizeof(*cv.v), cu_cmp);
	m->cus = cv.v;
	m->ncus = cv.n;
	return;
oom:
	free(cv.v);
}

/* Index in m->cuv of the CU whose code covers vaddr, or -1. */
static ptrdiff_t cu_index(struct sym_module *m, uint64_t vaddr)
{
	if (!m->dw)
		return -1;
	if (!m->cus_built)
		build_cus(m);
	size_t lo = 0, hi = m->ncus;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->cus[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo-1 is the last range starting at or below vaddr; look back a
	 * little in case an enclosing range starts earlier. */
	for (size_t k = 0; k < 8 && lo > k; k++) {
		const struct sym_cu_range *r = &m->cus[lo - 1 - k];
		if (vaddr < r->hi)
			return (ptrdiff_t)r->cu;
	}
	return -1;
}

int sym__cu_die(struct sym_module *m, uint64_t vaddr, Dwarf_Die *cudie)
{
	ptrdiff_t i = cu_index(m, vaddr);
	if (i < 0)
		return -1;
	return dwarf_offdie(m->dw, m->cuv[i].off, cudie) ? 0 : -1;
}

void sym__free_lines(struct sym_module *m)
{
	for (size_t i = 0; i < m->ncuv; i++)
		free(m->cuv[i].fns);
	free(m->cuv);
	m->cuv = NULL;
	m->ncuv = 0;
	free(m->cus);
	m->cus = NULL;
	m->ncus = 0;
}

/* ---- per-CU index of function definitions (entry pc -> decl file:line) ---- */

struct fnvec {
	struct sym_fnpos *v;
	size_t n, cap;
};

static int fn_cmp(const void *a, const void *b)
{
	const struct sym_fnpos *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void collect_fns(Dwarf_Die *parent, struct fnvec *fv, int depth)
{
	Dwarf_Die die;
	if (depth > 16 || dwarf_child(parent, &die) != 0)
		return;
	do {
		int tag = dwarf_tag(&die);
		switch (tag) {
		case DW_TAG_subprogram: {
			Dwarf_Addr pc;
			int line = 0;
			const char *file;
			if (dwarf_entrypc(&die, &pc) == 0 && pc != 0 &&
			    dwarf_decl_line(&die, &line) == 0 && line > 0 &&
			    (file = dwarf_decl_file(&die)) != NULL) {
				if (fv->n == fv->cap) {
					size_t cap = fv->cap ? fv->cap * 2 : 64;
					struct sym_fnpos *v = realloc(fv->v, cap * sizeof(*v));
					if (!v)
						return;
					fv->v = v;
					fv->cap = cap;
				}
				fv->v[fv->n].addr = pc;
				fv->v[fv->n].file = file;
				fv->v[fv->n].line = line;
				fv->n++;
			}
			if (dwarf_haschildren(&die) > 0)
				collect_fns(&die, fv, depth + 1); /* GNU C nested functions */
			break;
		}
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_module:
			collect_fns(&die, fv, depth + 1);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&die, &die) == 0);
}

static const struct sym_fnpos *cu_fn(struct sym_module *m, size_t cu, uint64_t addr)
{
	struct sym_cu *c = &m->cuv[cu];
	if (!c->fns_built) {
		c->fns_built = true;
		Dwarf_Die cudie;
		if (dwarf_offdie(m->dw, c->off, &cudie)) {
			struct fnvec fv = {0};
			collect_fns(&cudie, &fv, 0);
			if (fv.n)
				qsort(fv.v, fv.n, sizeof(*fv.v), fn_cmp);
			c->fns = fv.v;
			c->nfns = fv.n;
		}
	}
	size_t lo = 0, hi = c->nfns;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->fns[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nfns && c->fns[lo].addr == addr ? &c->fns[lo] : NULL;
}

/* ---- address -> line ---- */

int sym_addr_line(struct sym_module *m, uint64_t vaddr, const char **file, int *line)
{
	if (file)
		*file = NULL;
	if (line)
		*line = 0;
	Dwarf_Die cudie;
	if (!m || sym__cu_die(m, vaddr, &cudie) < 0)
		return -1;
	Dwarf_Line *l = dwarf_getsrc_die(&cudie, vaddr);
	int ln = 0;
	if (!l || dwarf_lineno(l, &ln) != 0 || ln <= 0)
		return -1;
	const char *f = dwarf_linesrc(l, NULL, NULL);
	if (!f)
		return -1;
	if (file)
		*file = f;
	if (line)
		*line = ln;
	return 0;
}

/* A function's source position: the declaration of the DWARF subprogram
 * whose entry is `addr` (the line with the function's name); else the first
 * line-table row at exactly addr (not a later statement sharing the
 * address); else whatever row covers addr. */
int sym__func_line(struct sym_module *m, uint64_t addr, const char **file, int *line)
{
	ptrdiff_t cu = cu_index(m, addr);
	if (cu < 0)
		return -1;
	const struct sym_fnpos *fp = cu_fn(m, (size_t)cu, addr);
	if (fp) {
		*file = fp->file;
		*line = fp->line;
		return 0;
	}
	Dwarf_Die cudie;
	if (!dwarf_offdie(m->dw, m->cuv[cu].off, &cudie))
		return -1;
	Dwarf_Lines *lines;
	size_t n;
	if (dwarf_getsrclines(&cudie, &lines, &n) == 0 && n > 0) {
		size_t lo = 0, hi = n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			Dwarf_Addr a = 0;
			dwarf_lineaddr(dwarf_onesrcline(lines, mid), &a);
			if (a < addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t i = lo; i < n; i++) {
			Dwarf_Line *l = dwarf_onesrcline(lines, i);
			Dwarf_Addr a = 0;
			bool end = false;
			int ln = 0;
			if (!l || dwarf_lineaddr(l, &a) != 0 || a != addr)
				break;
			dwarf_lineendsequence(l, &end);
			if (end || dwarf_lineno(l, &ln) != 0 || ln <= 0)
				continue;
			const char *f = dwarf_linesrc(l, NULL, NULL);
			if (!f)
				continue;
			*file = f;
			*line = ln;
			return 0;
		}
	}
	return sym_addr_line(m, addr, file, line);
}

/* ---- DWARF-only functions ---- */

static const char *die_string(Dwarf_Die *die, unsigned int at)
{
	Dwarf_Attribute a;
	if (!dwarf_attr_integrate(die, at, &a))
		return NULL;
	return dwarf_formstring(&a);
}

int sym__dwarf_func(struct sym_module *m, uint64_t vaddr, struct sym_ent *out)
{
	Dwarf_Die cudie;
	if (sym__cu_die(m, vaddr, &cudie) < 0)
		return -1;
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes(&cudie, vaddr, &scopes);
	int rc = -1;
	for (int i = 0; i < n; i++) {
		if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
			continue;
		Dwarf_Die *fn = &scopes[i];
		const char *name = die_string(fn, DW_AT_linkage_name);
		if (!name)
			name = die_string(fn, DW_AT_MIPS_linkage_name);
		if (!name)
			name = die_string(fn, DW_AT_name);
		if (!name)
			break;
		Dwarf_Addr base, lo, hi;
		ptrdiff_t o = 0;
		while ((o = dwarf_ranges(fn, o, &base, &lo, &hi)) > 0) {
			if (vaddr < lo || vaddr >= hi)
				continue;
			memset(out, 0, sizeof(*out));
			out->addr = lo;
			out->end = hi;
			out->size = hi - lo;
			out->sized = 1;
			out->raw = name;
			out->dem = sym_demangle(name);
			out->have_dem = 1;
			out->have_line = 1;
			sym__func_line(m, lo, &out->file, &out->line);
			rc = 0;
			break;
		}
		break;
	}
	free(scopes);
	return rc;
}

/* ---- FILE:LINE -> addresses ---- */

/* Is `b` a suffix of `a` that starts at a path component? */
static bool path_suffix(const char *a, const char *b)
{
	size_t n = strlen(a), k = strlen(b);
	return k < n && a[n - k - 1] == '/' && strcmp(a + n - k, b) == 0;
}

/* name is a path from the line table; q a basename, path suffix or path.
 * A relative name (built with -fdebug-prefix-map=...=.) also matches an
 * absolute query that ends with it. */
static bool file_matches(const char *name, const char *q)
{
	if (!name)
		return false;
	if (strcmp(name, q) == 0 || path_suffix(name, q))
		return true;
	while (name[0] == '.' && name[1] == '/')
		name += 2;
	if (name[0] == '/' || !name[0])
		return false;
	return strcmp(name, q) == 0 || path_suffix(q, name);
}

struct cand {
	uint64_t  addr;
	Dwarf_Off cu;
	uint64_t  key;   /* function instance */
};

static int cand_key_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Innermost function instance (subprogram or inlined copy) around addr,
 * as a key: its DIE offset; else the address itself. */
static uint64_t instance_key(Dwarf_Die *cudie, uint64_t addr)
{
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes(cudie, addr, &scopes);
	uint64_t key = 0;
	for (int i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
			/* offsets are never 0 for a function DIE; keep clear of
			 * raw addresses by setting the top bit */
			key = (uint64_t)dwarf_dieoffset(&scopes[i]) | (1ull << 63);
			break;
		}
	}
	free(scopes);
	return key ? key : addr;
}

static int in_module_text(const void *ctx, uint64_t a)
{
	return sym__in_text(ctx, a);
}

int sym_line_addrs(struct sym_module *m, const char *file, int line,
                   uint64_t *addrs, int max)
{
	if (!m || !file || !m->dw)
		return -1;
	return sym__line_addrs_dw(m->dw, in_module_text, m, file, line, addrs, max);
}

int sym__line_addrs_dw(Dwarf *dw, int (*in_text)(const void *ctx, uint64_t a), const void *ctx, const char *file,
                       int line, uint64_t *addrs, int max)
{
	if (!dw || !file)
		return -1;
	while (file[0] == '.' && file[1] == '/')
		file += 2;
	if (!*file)
		return -1;
	bool known = false;
	struct cand *c = NULL;
	size_t nc = 0, cap = 0;
	int result = -1;

	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t ut;
	while (dwarf_get_units(dw, cu, &cu, NULL, &ut, &cudie, NULL) == 0) {
		if (ut != DW_UT_compile && ut != DW_UT_skeleton)
			continue;
		Dwarf_Files *files;
		size_t nf;
		if (dwarf_getsrcfiles(&cudie, &files, &nf) != 0)
			continue;
		bool here = false;
		for (size_t i = 0; i < nf && !here; i++)
			here = file_matches(dwarf_filesrc(files, i, NULL, NULL), file);
		if (!here)
			continue;
		known = true;
		Dwarf_Lines *lines;
		size_t n;
		if (dwarf_getsrclines(&cudie, &lines, &n) != 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			Dwarf_Line *l = dwarf_onesrcline(lines, i);
			int ln = 0;
			bool stmt = false, end = false;
			Dwarf_Addr a = 0;
			if (!l || dwarf_lineno(l, &ln) != 0 || ln != line)
				continue;
			dwarf_linebeginstatement(l, &stmt);
			dwarf_lineendsequence(l, &end);
			if (!stmt || end || dwarf_lineaddr(l, &a) != 0 || !in_text(ctx, a))
				continue;
			if (!file_matches(dwarf_linesrc(l, NULL, NULL), file))
				continue;
			if (nc == cap) {
				cap = cap ? cap * 2 : 16;
				struct cand *nv = realloc(c, cap * sizeof(*nv));
				if (!nv)
					goto out;
				c = nv;
			}
			c[nc].addr = a;
			c[nc].cu = dwarf_dieoffset(&cudie);
			c[nc].key = 0;
			nc++;
		}
	}
	if (!known)
		goto out;

	/* One address per function instance: the lowest. */
	for (size_t i = 0; i < nc; i++) {
		Dwarf_Die d;
		if (dwarf_offdie(dw, c[i].cu, &d))
			c[i].key = instance_key(&d, c[i].addr);
		else
			c[i].key = c[i].addr;
	}
	if (nc)
		qsort(c, nc, sizeof(*c), cand_key_cmp);
	uint64_t *res = nc ? malloc(nc * sizeof(*res)) : NULL;
	size_t nr = 0;
	if (nc && !res)
		goto out;
	for (size_t i = 0; i < nc; i++)
		if (i == 0 || c[i].key != c[i - 1].key)
			res[nr++] = c[i].addr;
	if (nr)
		qsort(res, nr, sizeof(*res), u64_cmp);
	size_t nu = 0;
	for (size_t i = 0; i < nr; i++)
		if (nu == 0 || res[i] != res[nu - 1])
			res[nu++] = res[i];
	for (size_t i = 0; i < nu && (int)i < max && addrs; i++)
		addrs[i] = res[i];
	free(res);
	result = (int)nu;
out:
	free(c);
	return result;
}

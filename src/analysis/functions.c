/* functions.c — one function index per distinct (module file, address),
 * names and lines resolved through src/sym once per function. */
#include "analysis/functions.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym/cache.h"
#include "sym/sym.h"

struct priv {
	struct sym_cache *syms;     /* the objects, opened once per path */
	char **paths;               /* distinct module paths: a function is (path, address) */
	int npaths;
	char **owned;               /* strings we allocated */
	int nowned;
};

static char *own(struct priv *p, char *s)
{
	p->owned = realloc(p->owned, sizeof(char *) * (p->nowned + 1));
	p->owned[p->nowned++] = s;
	return s;
}

static int path_index(struct priv *p, const char *path)
{
	for (int i = 0; i < p->npaths; i++)
		if (!strcmp(p->paths[i], path))
			return i;
	p->paths = realloc(p->paths, sizeof(char *) * (p->npaths + 1));
	p->paths[p->npaths] = strdup(path);
	return p->npaths++;
}

/* Simple open-addressing map from (path index, vaddr) to function index. */
struct key { uint64_t vaddr; int path; uint32_t fn; };

static uint64_t hash(uint64_t v, int p)
{
	uint64_t h = v * 0x9e3779b97f4a7c15ull ^ (uint64_t)p * 0xc2b2ae3d27d4eb4full;
	return h ^ (h >> 29);
}

/* The functions a recording counted without timing them: each module
 * slot's "module.<slot>.untimed" ranges of numbers (cli/record_patch.c);
 * and those timed for part of it (record --timing=auto switched them):
 * "module.<slot>.switched".  What does not parse, or lies outside the
 * module, is ignored. */
static void mark_timing(const struct recording *r, struct fn_table *ft, const char *what)
{
	int sw = strcmp(what, "switched") == 0;
	for (uint32_t s = 0; s < r->nmodule_slots; s++) {
		if (!r->modules[s] || !ft->map[s])
			continue;
		char key[64];
		snprintf(key, sizeof key, "module.%u.%s", s, what);
		const char *v = rd_meta(r, key);
		uint32_t nf = r->modules[s]->r.nfuncs;
		while (v && *v) {
			char *e;
			unsigned long a = strtoul(v, &e, 10), b = a;
			if (e == v)
				break;
			if (*e == '-') {
				const char *q = e + 1;
				b = strtoul(q, &e, 10);
				if (e == q)
					break;
			}
			for (unsigned long i = a; i <= b && i < nf; i++) {
				struct fn_info *f = &ft->fns[ft->map[s][i]];
				if (sw)
					f->switched = 1;
				else
					f->untimed = 1;
			}
			v = *e == ',' ? e + 1 : "";
		}
	}
}

int fn_table_build(const struct recording *r, struct fn_table *ft)
{
	memset(ft, 0, sizeof *ft);
	struct priv *p = calloc(1, sizeof *p);
	ft->priv = p;
	p->syms = sym_cache_new();
	uint64_t total = 1;
	for (uint32_t s = 0; s < r->nmodule_slots; s++)
		if (r->modules[s])
			total += r->modules[s]->r.nfuncs + 1;
	ft->fns = calloc(total, sizeof *ft->fns);
	ft->fns[0] = (struct fn_info){ .name = "<root>", .module = "" };
	ft->n = 1;
	uint64_t cap = 16;
	while (cap < total * 2)
		cap <<= 1;
	struct key *tab = calloc(cap, sizeof *tab);
	ft->nslots = r->nmodule_slots;
	ft->map = calloc(r->nmodule_slots ? r->nmodule_slots : 1, sizeof *ft->map);
	for (uint32_t s = 0; s < r->nmodule_slots; s++) {
		const struct rd_module *m = r->modules[s];
		if (!m)
			continue;
		int pi = path_index(p, m->r.path);
		struct sym_module *sm = sym_cache_get(p->syms, m->r.path, NULL);
		ft->map[s] = calloc(m->r.nfuncs + 1, sizeof(uint32_t));
		for (uint32_t i = 0; i <= m->r.nfuncs; i++) {
			uint64_t va = i < m->r.nfuncs ? m->funcs[i] : ~0ull; /* ~0: the unnumbered bucket */
			uint64_t h = hash(va, pi) & (cap - 1);
			while (tab[h].fn && !(tab[h].vaddr == va && tab[h].path == pi))
				h = (h + 1) & (cap - 1);
			if (!tab[h].fn) {
				uint32_t f = ft->n++;
				tab[h] = (struct key){ va, pi, f };
				struct fn_info *fi = &ft->fns[f];
				fi->module = p->paths[pi];
				if (i == m->r.nfuncs) {
					char buf[600];
					const char *b = strrchr(m->r.path, '/');
					snprintf(buf, sizeof buf, "<unnumbered functions of %s>", b ? b + 1 : m->r.path);
					fi->name = own(p, strdup(buf));
				} else {
					fi->vaddr = va;
					struct sym_info si;
					if (sm && sym_lookup(sm, va, &si) == 0 && si.name) {
						fi->name = si.name;
						fi->mangled = si.mangled;
						fi->file = si.file;
						fi->line = si.line;
					} else {
						/* no symbol names it: module+offset, as perf names such code */
						char buf[600];
						const char *b = strrchr(m->r.path, '/');
						snprintf(buf, sizeof buf, "%s+0x%llx", b ? b + 1 : m->r.path, (unsigned long long)va);
						fi->name = own(p, strdup(buf));
					}
				}
			}
			ft->map[s][i] = tab[h].fn;
		}
	}
	free(tab);
	mark_timing(r, ft, "untimed");
	mark_timing(r, ft, "switched");
	for (uint32_t i = 0; i < ft->n; i++) /* timed in one process, counted in another: partly timed */
		if (ft->fns[i].switched)
			ft->fns[i].untimed = 0;
	return 0;
}

void fn_table_free(struct fn_table *ft)
{
	struct priv *p = ft->priv;
	if (p) {
		for (int i = 0; i < p->npaths; i++)
			free(p->paths[i]);
		sym_cache_free(p->syms);
		for (int i = 0; i < p->nowned; i++)
			free(p->owned[i]);
		free(p->owned);
		free(p->paths);
		free(p);
	}
	for (uint32_t s = 0; s < ft->nslots; s++)
		free(ft->map[s]);
	free(ft->map);
	free(ft->fns);
	memset(ft, 0, sizeof *ft);
}

static int ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* s[0..n) without the spaces that do not separate two words: "map<int, int>"
 * and "map<int,int>", "f(int const &)" and "f(int const&)" compare equal,
 * "unsigned int" keeps its space.  malloc'd. */
static char *squeeze(const char *s, size_t n)
{
	char *o = malloc(n + 1);
	size_t k = 0;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ' && !(k && ident_char(o[k - 1]) && i + 1 < n && ident_char(s[i + 1])))
			continue;
		o[k++] = s[i];
	}
	o[k] = 0;
	return o;
}

/* b[0..bl) ends with the name w[0..wl), after a scope ("ns::"), a return
 * type ("int ") or nothing. */
static int ends_with_name(const char *b, size_t bl, const char *w, size_t wl)
{
	return bl >= wl && !strncmp(b + bl - wl, w, wl) &&
	       (bl == wl || b[bl - wl - 1] == ':' || b[bl - wl - 1] == ' ');
}

/* Matching by name (C++ names as demangled): exact first, spaces between
 * symbols not counting; else a glob, or the name without its parameter list
 * and with any ns:: qualifier ("parse" matches "ns::parse(int)",
 * "S::operator()" matches "S::operator()(int) const"). */
static int find_by_name(const struct fn_table *ft, const char *name, uint32_t *idx, int max)
{
	int n = 0;
	char *want = squeeze(name, strlen(name));
	if (!want)
		return 0;
	for (uint32_t i = 1; i < ft->n; i++) {
		const char *s = ft->fns[i].name;
		int eq = !strcmp(s, name);
		if (!eq && strchr(s, ' ')) {
			char *q = squeeze(s, strlen(s));
			eq = q && !strcmp(q, want);
			free(q);
		}
		if (eq) {
			if (n < max)
				idx[n] = i;
			n++;
		}
	}
	if (n) {
		free(want);
		return n;
	}
	size_t len = strlen(want);
	for (uint32_t i = 1; i < ft->n; i++) {
		const char *s = ft->fns[i].name;
		const char *paren = sym_param_list(s);
		int match = fnmatch(name, s, 0) == 0;
		if (!match && paren) {
			char *b = squeeze(s, (size_t)(paren - s));
			size_t bl = b ? strlen(b) : 0;
			match = b && ends_with_name(b, bl, want, len);
			/* a function template's name without its arguments: "pick" */
			if (b && !match && bl && b[bl - 1] == '>') {
				size_t k = bl - 1;
				for (int d = 0; k > 0; k--) {
					d += b[k] == '>' ? 1 : b[k] == '<' ? -1 : 0;
					if (!d)
						break;
				}
				match = k > 0 && ends_with_name(b, k, want, len);
			}
			free(b);
		}
		if (match) {
			if (n < max)
				idx[n] = i;
			n++;
		}
	}
	free(want);
	return n;
}

/* FILE names f's source file (the path, or its last components) or its module. */
static int file_is(const struct fn_info *f, const char *file)
{
	size_t fl = strlen(file);
	const char *paths[2] = { f->file, f->module };
	for (int k = 0; k < 2; k++) {
		const char *p = paths[k];
		if (!p)
			continue;
		size_t pl = strlen(p);
		if (pl >= fl && !strcmp(p + pl - fl, file) && (pl == fl || p[pl - fl - 1] == '/'))
			return 1;
	}
	return 0;
}

int fn_find(const struct fn_table *ft, const char *name, uint32_t *idx, int max)
{
	/* 0xADDR: the function at that link-time address (one per module). */
	if (name[0] == '0' && (name[1] == 'x' || name[1] == 'X') && name[2]) {
		char *end;
		unsigned long long a = strtoull(name + 2, &end, 16);
		if (!*end) {
			int n = 0;
			for (uint32_t i = 1; i < ft->n; i++)
				if (ft->fns[i].vaddr == a) {
					if (n < max)
						idx[n] = i;
					n++;
				}
			return n;
		}
	}
	int n = find_by_name(ft, name, idx, max);
	const char *at = strrchr(name, '@');
	if (n || !at || at == name || !at[1])
		return n;
	/* NAME@FILE: the functions NAME matches, kept when FILE is theirs. */
	size_t nl = (size_t)(at - name);
	char *base = malloc(nl + 1);
	uint32_t *all = malloc(sizeof *all * (ft->n ? ft->n : 1));
	if (!base || !all) {
		free(base);
		free(all);
		return 0;
	}
	memcpy(base, name, nl);
	base[nl] = 0;
	int k = find_by_name(ft, base, all, (int)ft->n);
	for (int i = 0; i < k; i++)
		if (file_is(&ft->fns[all[i]], at + 1)) {
			if (n < max)
				idx[n] = all[i];
			n++;
		}
	free(base);
	free(all);
	return n;
}

const char *fn_module_base(const struct fn_info *f)
{
	const char *b = strrchr(f->module, '/');
	return b ? b + 1 : f->module;
}

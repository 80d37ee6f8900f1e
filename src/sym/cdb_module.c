/* cdb_module.c — a firmware that is not ELF (SDCC's .ihx for the 8051) as a
 * sym_module: its functions, with their source file and first line, from
 * the .cdb beside it (cdb.h), so that every reader names the functions of a
 * `sonde record --target ucsim:` recording as it names an ELF program's.
 * No DWARF, no variables, no code bytes: sym_lookup and sym_functions only. */
#include "sym/cdb.h"
#include "sym/sym_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_addr(const void *a, const void *b)
{
	const struct sym_ent *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int sym__cdb_load(struct sym_module *m, const char *path)
{
	char cdbpath[4096], err[300];
	if (cdb_beside(path, cdbpath, sizeof cdbpath))
		return -1;
	struct cdb *c = cdb_open(cdbpath, err, sizeof err);
	if (!c)
		return -1;
	int rc = -1;
	m->funcs = calloc((size_t)(c->nfuncs ? c->nfuncs : 1), sizeof *m->funcs);
	m->text = calloc(1, sizeof *m->text);
	if (!m->funcs || !m->text)
		goto out;
	m->text[0] = (struct sym_range){ 0, 0x10000 };   /* the 8051's code memory */
	m->ntext = 1;
	for (int i = 0; i < c->nfuncs; i++) {
		const struct cdb_func *f = &c->funcs[i];
		if (!f->name || !f->has_lo || (f->has_hi && f->hi < f->lo))
			continue;
		struct sym_ent *e = &m->funcs[m->nfuncs];
		memset(e, 0, sizeof *e);
		const char *file = NULL;
		int line = 0;
		if (cdb_addr_line(c, f->lo, &file, &line))
			file = NULL, line = f->line;
		e->addr = f->lo;
		e->end = f->has_hi ? (uint64_t)f->hi + 1 : (uint64_t)f->lo + 1;
		e->size = e->end - e->addr;
		e->sized = f->has_hi;
		e->raw = sym__strdup(m, f->name);
		e->have_dem = 1;
		e->file = file ? sym__strdup(m, file) : NULL;
		e->line = file ? line : 0;
		e->have_line = 1;
		if (!e->raw)
			goto out;
		m->nfuncs++;
	}
	qsort(m->funcs, m->nfuncs, sizeof *m->funcs, by_addr);
	m->full_symtab = true;
	rc = 0;
out:
	cdb_free(c);
	return rc;
}

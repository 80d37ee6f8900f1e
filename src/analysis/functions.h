/* functions.h — the functions of a recording: every (module, number) of the
 * recording mapped to one function, identified across processes by module
 * file and address, with its name, file and line resolved once. */
#ifndef SONDE_ANALYSIS_FUNCTIONS_H
#define SONDE_ANALYSIS_FUNCTIONS_H

#include <stdint.h>

#include "data/reader.h"

#define FN_ROOT 0u   /* function index 0: "<root>", the caller of outermost functions */

struct fn_info {
	const char *name;        /* demangled */
	const char *mangled;     /* symbol as the ELF file spells it (NULL if unknown) */
	const char *module;      /* module path */
	const char *file;        /* may be NULL */
	int line;
	uint64_t vaddr;          /* link-time address (0 for unnumbered / root) */
	int untimed;             /* counted, not timed (record --timing: the recording's module.N.untimed) */
	int switched;            /* timed for part of the recording, counted for the rest (--timing=auto:
	                          * module.N.switched): its times are those of its timed calls */
};

struct fn_table {
	struct fn_info *fns;
	uint32_t n;
	uint32_t **map;          /* map[module slot][number or nfuncs (unnumbered)] -> function index */
	uint32_t nslots;
	void *priv;
};

/* Build the table; symbol files that cannot be read give hex names. */
int fn_table_build(const struct recording *r, struct fn_table *ft);
void fn_table_free(struct fn_table *ft);
/* The function index of a recorded function id (FN_ROOT for an unknown
 * module).  Inline: every export calls it once per event. */
static inline uint32_t fn_of(const struct fn_table *ft, const struct recording *r, uint32_t func)
{
	uint32_t mod = SONDE_FUNC_MOD(func), num = SONDE_FUNC_NUM(func);
	if (mod >= ft->nslots || !ft->map[mod])
		return FN_ROOT;
	uint32_t n = r->modules[mod]->r.nfuncs;
	return ft->map[mod][num < n ? num : n];
}

/* Functions matching NAME (exact name first; else glob / C++ base name),
 * NAME@FILE (FILE: the source file, its last path components, or the
 * module), or 0xADDR (link-time address).  Returns the count; idx filled
 * with up to max indices. */
int fn_find(const struct fn_table *ft, const char *name, uint32_t *idx, int max);

/* "name (file:line)" / module basename helpers */
const char *fn_module_base(const struct fn_info *f);

#endif

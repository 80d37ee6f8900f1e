/* cache.h — the one cache of opened objects: every ELF file that reports,
 * lock analysis and probes name is opened once per path (sym_open: its
 * symbols, lines, inlines and variables, separate debug info followed) and
 * looked up by path afterwards.  A file that cannot be opened is cached too,
 * with the reason, so it is tried once and every caller gets the same answer.
 */
#ifndef SONDE_SYM_CACHE_H
#define SONDE_SYM_CACHE_H

#include "sym/sym.h"

struct sym_cache;

/* NULL when out of memory. */
struct sym_cache *sym_cache_new(void);

/* Closes every object: names, files and variables handed out by them die. */
void sym_cache_free(struct sym_cache *c);

/* The object at `path`, opened on first use.  NULL when it cannot be read
 * (not a regular file, not ELF, ...); *err (when err is not NULL) then says
 * why, in a string that lives as long as the cache. */
struct sym_module *sym_cache_get(struct sym_cache *c, const char *path, const char **err);

#endif

/* modules.h — the ELF modules mapped in the target (modules.c), with their
 * symbols and variables (through the object cache, sym/cache.h), and struct
 * loc_addr: a run-time address, its module and its function (what resolve.h
 * makes of a location). */
#ifndef SONDE_PROC_MODULES_H
#define SONDE_PROC_MODULES_H

#include <stdint.h>
#include <sys/types.h>

#include "sym/sym.h"

struct vars;
struct sym_cache;

struct module {
	char *path;
	uint64_t lo, hi;        /* run-time range of its mappings */
	uint64_t bias;          /* run-time address - link-time address */
	int is_main;
	struct sym_cache *syms; /* the modules' cache (struct modules), opened on first use */
};

struct modules {
	struct module *m;
	int n;
	struct sym_cache *syms; /* every module's object, by path */
};

int modules_load(struct modules *ms, pid_t pid);
void modules_free(struct modules *ms);
struct module *modules_at(struct modules *ms, uint64_t addr);
struct sym_module *module_sym(struct module *m);
struct vars *module_vars(struct module *m);

struct loc_addr {
	uint64_t addr;          /* run-time */
	struct module *mod;
	struct sym_info fn;     /* containing function (start/size link-time) */
};

#endif

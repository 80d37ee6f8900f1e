/* sym_int.h — internals of the sym module shared by symtab.c (ELF symbols,
 * open/close, lookup), lines.c (DWARF line tables) and vars.c (variables on
 * the same Dwarf): the layout of a struct sym_module, its symbol records,
 * and the few helpers one file calls in another.  Not a public header: only
 * src/sym/ includes it.
 */
#ifndef SONDE_SYM_SYM_INT_H
#define SONDE_SYM_SYM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <gelf.h>

#include "sym/sym.h"

/* One ELF symbol (function or data object). */
struct sym_ent {
	uint64_t    addr;
	uint64_t    size;      /* st_size, or the inferred extent when st_size is 0 */
	uint64_t    end;       /* addr + size (containment test) */
	const char *raw;       /* points into the ELF string table */
	char       *dem;       /* demangled name (malloc'd) or NULL if not mangled */
	const char *file;      /* function: source file of the first line (lazy) */
	int         line;
	uint8_t     rank;      /* alias preference, lower is better */
	uint8_t     have_dem;  /* dem computed */
	uint8_t     have_line; /* file/line computed */
	uint8_t     sized;     /* st_size was non-zero */
};

/* A function's declared position, from its DWARF subprogram DIE. */
struct sym_fnpos {
	uint64_t    addr;      /* entry pc */
	const char *file;
	int         line;
};

/* One compile unit; its function index is built on first use. */
struct sym_cu {
	Dwarf_Off         off; /* offset of the CU DIE */
	struct sym_fnpos *fns; /* sorted by addr */
	size_t            nfns;
	bool              fns_built;
};

/* One address range of one compile unit, for address -> CU. */
struct sym_cu_range {
	uint64_t lo, hi;       /* [lo, hi) */
	size_t   cu;           /* index in sym_module.cuv */
};

/* One executable section's address range (to reject tombstoned line rows). */
struct sym_range {
	uint64_t lo, hi;
};

struct sym_arena;

struct sym_module {
	int    fd, dbg_fd;
	Elf   *elf;            /* the file asked for */
	Elf   *dbg_elf;        /* separate debug file, or NULL */
	Dwarf *dw;             /* DWARF of elf or dbg_elf, or NULL */

	struct sym_ent *funcs;  size_t nfuncs;   /* sorted by addr, then rank */
	struct sym_ent *datas;  size_t ndatas;
	bool full_symtab;       /* a .symtab was read (not only .dynsym) */

	struct sym_range *text; size_t ntext;    /* executable sections */

	struct sym_cu *cuv; size_t ncuv;         /* built lazily */
	struct sym_cu_range *cus; size_t ncus;   /* sorted by lo */
	bool cus_built;

	/* functions known only from DWARF (no ELF symbol), sorted by addr */
	struct sym_ent *dfuncs; size_t ndfuncs, dfcap;

	/* "0x1234" names handed out for unknown addresses, by address */
	struct sym_hex { uint64_t addr; const char *s; } *hex;
	size_t nhex, hexcap;                     /* open addressing, cap power of 2 */

	struct sym_arena *arena;                 /* strings handed out */

	struct vars *vars;                       /* sym_vars, built lazily on dw */
};

/* lines.c */
int  sym__cu_die(struct sym_module *m, uint64_t vaddr, Dwarf_Die *cudie);
void sym__free_lines(struct sym_module *m);
bool sym__in_text(const struct sym_module *m, uint64_t vaddr);
/* sym_line_addrs on any DWARF: in_text(ctx, a) says which addresses are code
 * (kmod.c's relocated .ko has no sym_module). */
int  sym__line_addrs_dw(Dwarf *dw, int (*in_text)(const void *ctx, uint64_t a), const void *ctx, const char *file,
                        int line, uint64_t *addrs, int max);
/* Source position of a function's first instruction (first line-table row
 * at `addr`).  Returns 0 and sets the file and line, or -1. */
int  sym__func_line(struct sym_module *m, uint64_t addr, const char **file, int *line);
/* The function containing vaddr according to DWARF (DW_TAG_subprogram),
 * for addresses no ELF symbol covers.  Fills addr/end/size/raw/dem/file/line.
 * Returns 0 or -1. */
int  sym__dwarf_func(struct sym_module *m, uint64_t vaddr, struct sym_ent *out);

/* vars.c */
void sym__free_vars(struct sym_module *m);
/* The variables of dw (its .debug_frame as CFI, and cfi_eh, then owned, or
 * NULL): for kmod.c's relocated .ko, which has no sym_module.  NULL: out
 * of memory. */
struct vars *sym__vars_new(Dwarf *dw, Elf *elf, Dwarf_CFI *cfi_eh);
void sym__vars_free(struct vars *v);

/* cdb_module.c: m's functions from the SDCC .cdb beside path (a firmware
 * that is not ELF).  0, or -1 when there is none. */
int sym__cdb_load(struct sym_module *m, const char *path);

/* symtab.c */
const char *sym__strdup(struct sym_module *m, const char *s);

#endif

/* cdb.h — SDCC's debug information (the .cdb file `sdcc --debug` writes
 * beside the .ihx), read beside the ELF/DWARF reader for firmware that has
 * no ELF: the 8051's (docs/REMOTE.md, "The 8051").  What is read (cdb.c):
 *   F: and L:G$/L:XG$ (L:F/L:XF for static ones) records — functions and
 *      their code ranges, interrupt handlers with their vector and bank;
 *   L:C$ records — source lines to code addresses;
 *   S: and L: records — global, file-static and local variables with their
 *      memory space, their address (linker), or their registers, or their
 *      stack offset, and their type (char, short, int, long, float, void,
 *      structs by size, bits, pointers with the space they point into).
 * Everything read from the file is bounded: lines, counts, addresses
 * (code 0..0xffffff, data spaces 0..0xffff), sizes; a record that does not
 * parse is counted and skipped (cdb.bad), never trusted. */
#ifndef SONDE_SYM_CDB_H
#define SONDE_SYM_CDB_H

#include <stddef.h>
#include <stdint.h>

/* Memory spaces, named as in SDCC's records (the letter after the type). */
enum cdb_space {
	CDB_NONE = 0,
	CDB_XSTACK,     /* A: external stack (reentrant functions, --stack-auto in xdata) */
	CDB_STACK,      /* B: internal stack (reentrant functions): stack offset */
	CDB_CODE,       /* C, D: code memory */
	CDB_DATA,       /* E: internal RAM, direct addressing (0x00..0x7f) */
	CDB_XDATA,      /* F: external RAM */
	CDB_IDATA,      /* G: internal RAM, indirect addressing (0x00..0xff) */
	CDB_BIT,        /* H: bit-addressable space */
	CDB_SFR,        /* I: special function registers */
	CDB_SBIT,       /* J: SFR bits */
	CDB_PDATA,      /* P: paged external RAM */
	CDB_REG,        /* R: registers (r0..r7, a, b, dpl, dph) */
};

/* A C type as SDCC describes it ("({4}SL:S)", "({2}DX,SC:U)"). */
enum cdb_base { CDB_T_VOID, CDB_T_CHAR, CDB_T_SHORT, CDB_T_INT, CDB_T_LONG, CDB_T_LONGLONG,
                CDB_T_FLOAT, CDB_T_STRUCT, CDB_T_BIT, CDB_T_OTHER };
struct cdb_type {
	int size;           /* bytes of the whole object ({N}) */
	int base;           /* CDB_T_* of the last specifier */
	int is_unsigned;
	int is_func;        /* DF: a function's type (its return type follows) */
	int ptr;            /* pointer: 0 none, else the space it points into (CDB_* ; CDB_NONE with
	                     * ptr_generic for a 3-byte generic pointer) */
	int ptr_generic;
	int array;          /* DA<n>: elements, 0 none */
};

struct cdb_func {
	const char *name;
	const char *module;    /* the module (source file without .c) of a static function, else NULL */
	uint32_t lo, hi;       /* entry, and the address of its last instruction (ret / reti) */
	int has_lo, has_hi;
	int isr, intno, bank;  /* an interrupt handler (__interrupt(intno)), its register bank */
	int line;              /* first source line, 0 unknown */
	struct cdb_type ret;
};

struct cdb_var {
	const char *name;
	const char *func;      /* a local's function, NULL for a global or file-static one */
	const char *module;    /* a file-static's or a local's module, else NULL */
	int level, block;      /* lexical level and block of a local */
	int space;             /* CDB_* */
	struct cdb_type type;
	uint32_t addr;         /* from the linker record (L:), when has_addr */
	int has_addr;
	int on_stack, stack;   /* B/A spaces: offset from the frame */
	char regs[4][5];       /* R space: its registers, least significant byte first ("r6", "r7") */
	int nregs;
};

struct cdb_line {
	const char *file;      /* "fw.c" as written in the record */
	int line;
	uint32_t addr;
};

struct cdb {
	struct cdb_func *funcs; int nfuncs;   /* sorted by lo (those without lo at the end) */
	struct cdb_var *vars; int nvars;
	struct cdb_line *lines; int nlines;   /* sorted by addr, then line */
	int bad;                               /* records that did not parse */
	char **names; int nnames, capnames;    /* the strings handed out, freed by cdb_free */
};

/* Read path.  NULL with err when it cannot be read or holds no SDCC
 * record at all. */
struct cdb *cdb_open(const char *path, char *err, size_t n);
void cdb_free(struct cdb *c);
/* The .cdb beside firmware path ("fw.ihx" -> "fw.cdb"; "fw.cdb" itself)
 * into buf: 0, or -1 when it does not exist. */
int cdb_beside(const char *path, char *buf, size_t n);

/* The function containing code address addr ([lo, hi]), or NULL. */
const struct cdb_func *cdb_func_at(const struct cdb *c, uint32_t addr);
/* The function named name (a static one: name or "module.name"), or NULL. */
const struct cdb_func *cdb_func_named(const struct cdb *c, const char *name);
/* The lowest address of each function range that file:line has code in
 * (file: a basename or the record's name): up to max into addrs; the count
 * (may exceed max), 0 when the line has no code, -1 the file is unknown. */
int cdb_line_addrs(const struct cdb *c, const char *file, int line, uint32_t *addrs, int max);
/* The source line of code address addr: the last line record at or below
 * it inside the same function.  0, or -1. */
int cdb_addr_line(const struct cdb *c, uint32_t addr, const char **file, int *line);
/* The variable name visible in function func (NULL: only globals): a local
 * of func first, then a global or static one.  NULL when none. */
const struct cdb_var *cdb_var_named(const struct cdb *c, const char *func, const char *name);
/* "data", "xdata", ... */
const char *cdb_space_name(int space);

#endif

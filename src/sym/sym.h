/* sym.h — symbols of ELF modules: function names (demangled), source file and
 * line, through elfutils (libelf for symtab/dynsym, libdw for DWARF lines).
 *
 * Resolution happens offline, once per function, never per event.  Addresses
 * are link-time virtual addresses of the module (runtime address minus the
 * load bias), so the same query works for PIE executables and shared objects.
 */
#ifndef SONDE_SYM_SYM_H
#define SONDE_SYM_SYM_H

#include <stddef.h>
#include <stdint.h>

struct sym_module;

struct sym_info {
	const char *name;     /* demangled function name; never NULL ("0x1234" if unknown) */
	const char *mangled;  /* raw symbol name, or NULL */
	const char *file;     /* source file of the function's first line, or NULL */
	int         line;     /* 0 if unknown */
	uint64_t    start;    /* symbol start (link-time vaddr), 0 if unknown */
	uint64_t    size;     /* symbol size */
};

/* Open an ELF file (also finds separate debug info through build-id /
 * .gnu_debuglink as elfutils does).  Only regular files are opened (never a
 * FIFO or a device).  Returns NULL and sets *err to a message when the file
 * cannot be read as ELF.  Commands open objects through sym/cache.h. */
struct sym_module *sym_open(const char *path, const char **err);
void sym_close(struct sym_module *m);

/* Resolve the function containing link-time address `vaddr`.  The strings
 * stay valid until sym_close.  Returns 0 when a symbol was found, -1 if not
 * (out->name then holds a hex address). */
int sym_lookup(struct sym_module *m, uint64_t vaddr, struct sym_info *out);

/* Find functions by name (exact demangled or raw match, else shell glob).
 * Calls cb for each match; returns the number of matches. */
int sym_find(struct sym_module *m, const char *pattern,
             void (*cb)(void *arg, const struct sym_info *info), void *arg);

/* Source line -> addresses: the lowest is_stmt address of FILE:LINE in each
 * function instance, every inlined copy included (FILE may be a basename or
 * a path suffix).  Writes up to max addresses, returns how
 * many exist (may exceed max), -1 if the file is unknown. */
int sym_line_addrs(struct sym_module *m, const char *file, int line,
                   uint64_t *addrs, int max);

/* Address -> source file and line (any address, not only function starts). */
int sym_addr_line(struct sym_module *m, uint64_t vaddr, const char **file, int *line);

/* Data symbol containing vaddr (for naming locks: "hot_lock", "cache+8").
 * Writes "name" or "name+off" into buf; returns 0 if found, -1 otherwise. */
int sym_data_name(struct sym_module *m, uint64_t vaddr, char *buf, size_t len);

/* Every function the module defines (sorted by address, one per address):
 * .symtab / .dynsym function symbols in executable sections (GCC's ".cold"
 * fragments left out), and the .eh_frame ranges no symbol covers (name NULL).
 * not_entry: the call frame information says the stack does not hold a
 * return address at its first instruction (not entered by a call).  Returns
 * the count and a malloc'd array in *out, or -1 (out of memory). */
struct sym_fn {
	uint64_t addr, size;
	const char *name;     /* the raw symbol name (lives until sym_close), or NULL */
	int not_entry;        /* 1: by its call frame information; 2: the ELF entry point */
};
#include <sys/types.h>
ssize_t sym_functions(struct sym_module *m, struct sym_fn **out);
/* The call frame rules of .eh_frame as rows an in-program unwinder follows
 * without DWARF (the stack probes' unwind table, common/probe_area.h struct
 * pa_urow): sorted by link-time address, each one the rule from its address
 * to the next row's.  cfa: SYM_CFA_NONE (a rule that is none of the others:
 * an expression, a signal frame, the end of an FDE's range), SYM_CFA_RSP /
 * SYM_CFA_RBP (CFA = that register + cfa_off, the return address at CFA - 8,
 * rbp saved at CFA + rbp_off when rbp_saved, else unchanged), SYM_CFA_END
 * (the return address undefined: the outermost frame).  x86-64 only.
 * Returns the count and a malloc'd array in *out (NULL when 0), or -1. */
enum { SYM_CFA_NONE, SYM_CFA_RSP, SYM_CFA_RBP, SYM_CFA_END };
struct sym_cfa_row {
	uint64_t addr;
	int32_t cfa_off;
	int16_t rbp_off;
	uint8_t cfa, rbp_saved;
};
ssize_t sym_cfa_rows(struct sym_module *m, struct sym_cfa_row **out);
/* The file's bytes of the executable section holding vaddr, from vaddr on
 * (*avail of them), or NULL. */
const uint8_t *sym_code(struct sym_module *m, uint64_t vaddr, size_t *avail);

/* Does the file have a section of this name? */
int sym_has_section(struct sym_module *m, const char *name);

/* What a function returns, after typedefs, const, volatile, restrict and
 * type tags (btf.h reads it from a kernel's BTF, sym_func_ret from DWARF). */
struct sym_ret {
	unsigned size;     /* bytes (a pointer: 8; void: 0) */
	int is_signed;     /* a signed integer or a signed enum */
	int is_ptr, is_void, is_enum, is_bool;
	char name[96];     /* as declared: "int", "ssize_t", "void *", "struct file *" */
};

/* The return type of the function whose code holds vaddr, from the
 * module's DWARF: 0 for an integer, enum, bool, pointer or void; -1 when
 * there is no DWARF for it or it returns something else (a struct, a
 * float: not in AX). */
int sym_func_ret(struct sym_module *m, uint64_t vaddr, struct sym_ret *r);

/* A kernel module's .ko (kmod.c), its DWARF laid out and relocated by
 * libdwfl: NULL with err (not a .ko, no DWARF). */
struct sym_kmod;
struct vars;
struct sym_kmod *sym_kmod_open(const char *ko, char *err, size_t n);
void sym_kmod_close(struct sym_kmod *k);
/* A code address of a .ko: the function holding it, the offset in it, and
 * the address in the DWARF's terms (pc, for vars_compile). */
struct sym_kloc { char func[128]; uint64_t off, pc; };
/* The addresses of FILE:LINE (at most max): how many, or -1 with err (no
 * such file or line, a line at more than max addresses, an address in no
 * function). */
int sym_kmod_lines(struct sym_kmod *k, const char *file, int line, struct sym_kloc *out, int max, char *err,
                   size_t n);
/* FUNCTION's entry: 0, or -1 with err. */
int sym_kmod_func(struct sym_kmod *k, const char *func, struct sym_kloc *out, char *err, size_t n);
/* The .ko's variables (vars.h; freed with k): NULL with err. */
struct vars *sym_kmod_vars(struct sym_kmod *k, char *err, size_t n);
/* A data address of the DWARF (a global's DW_OP_addr): its section's name
 * (".bss") and the offset in it: 0, or -1 (in no allocated section). */
int sym_kmod_data(struct sym_kmod *k, uint64_t addr, char *sec, size_t sn, uint64_t *off);
/* The .ko's GNU build id into id (at most max bytes): its length, or -1. */
int sym_kmod_build_id(const char *ko, uint8_t *id, size_t max);

/* Demangle a C++ name; returns a malloc'd string or NULL when not mangled. */
char *sym_demangle(const char *name);
/* The '(' that opens the parameter list of a demangled name ("ns::f(int)",
 * "S::operator()(int) const", "(anonymous namespace)::g<void (*)(int)>(int)"),
 * or NULL when it has none (a C name).  Operator spellings and template
 * arguments are skipped. */
const char *sym_param_list(const char *name);

#endif

/* btf.h — the return type of a kernel function, from the kernel's BTF
 * (/sys/kernel/btf/vmlinux, /sys/kernel/btf/MODULE).  A small reader: the
 * type section is indexed, a BTF_KIND_FUNC is found by name, and its
 * FUNC_PROTO's return type is followed through typedefs and qualifiers.
 * The file is untrusted: every offset and type id is checked, and a
 * malformed file is refused (NULL) or gives "not found", never a crash. */
#ifndef SONDE_SYM_BTF_H
#define SONDE_SYM_BTF_H

#include <stddef.h>

#include "sym/sym.h" /* struct sym_ret */

struct btf;


/* The BTF blob of n bytes at data (copied).  base: NULL for a base BTF
 * (vmlinux), else the base of this split BTF (a module's: its type ids
 * continue after the base's, its string offsets after the base's
 * strings); base must outlive the result.  NULL when malformed or out of
 * memory. */
struct btf *btf_from_mem(const void *data, size_t n, const struct btf *base);

/* The same from a file (at most 256 MiB).  NULL when unreadable or
 * malformed. */
struct btf *btf_open(const char *path, const struct btf *base);

void btf_free(struct btf *b);

/* The return type of the function named func, a BTF_KIND_FUNC among b's
 * own types (not its base's).  0, or -1 when there is no such function or
 * its type is not one of an integer, enum, bool, pointer or void (a
 * struct, a float: unknown), or the chain is broken or too long. */
int btf_func_ret(const struct btf *b, const char *func, struct sym_ret *r);

#endif

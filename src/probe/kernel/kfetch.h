/* kfetch.h — a variable of a kernel module's DWARF as a fetch argument of
 * the kernel's kprobe_events (kfetch.c): what `perf probe` writes for
 * `perf probe -a 'func var'`, from what vars.c resolved for the address. */
#ifndef SONDE_PROBE_KERNEL_KFETCH_H
#define SONDE_PROBE_KERNEL_KFETCH_H

#include <stddef.h>
#include <stdint.h>

struct var_ref;

/* Where a DWARF data address (a global's DW_OP_addr) is: 0 with *at and
 * *how, or -1 with err. */
enum {
	KF_KERNEL,               /* *at: an address of the running kernel ("@ADDR") */
	KF_FILE,                 /* *at: an offset from the probed object's mapping (a uprobe's "@+OFFSET") */
};
typedef int (*kfetch_addr_fn)(void *ctx, uint64_t addr, uint64_t *at, int *how, char *err, size_t n);

/* The fetch argument of r ("+8(%di):s64", "@0xffffffffc0002300:u32", "@+0x4010:s32",
 * "%si:s32") into out, the value's encoding (VAR_INT, VAR_UINT, VAR_FLOAT:
 * the bits fetched as an unsigned integer) and size into *enc and *size:
 * 0, or -1 with err (a value the fetch arguments cannot express: an
 * optimized-out one, a computed value, an index by a variable, a register
 * of another machine than x86-64). */
int kfetch_arg(const struct var_ref *r, kfetch_addr_fn addr_of, void *ctx, char *out, size_t on, int *enc,
               int *size, char *err, size_t n);

#endif

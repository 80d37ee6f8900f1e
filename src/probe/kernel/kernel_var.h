/* kernel_var.h — var and assert probes in a kernel module (kernel_var.c):
 * the expression compiled at each of the probe's addresses in the .ko's
 * DWARF, each variable made a fetch argument of a kprobe_events probe
 * there, and each hit's record of the probe evaluated into kind_var's
 * (kind_assert's) numbers. */
#ifndef SONDE_PROBE_KERNEL_KERNEL_VAR_H
#define SONDE_PROBE_KERNEL_KERNEL_VAR_H

#include <stddef.h>
#include <stdint.h>

struct probe;
struct sym_kmod;
struct sym_kloc;
struct kvar;

/* The sites of p (a var or assert probe) for the expression expr at each
 * address loc[i] of module mod (its .ko k), each compiled and given its
 * kprobe_events probe by kvar_site: NULL with err. */
struct kvar *kvar_new_kmod(struct probe *p, struct sym_kmod *k, const char *mod, const struct sym_kloc *loc, int nloc,
                           const char *expr, char *err, size_t n);
/* The same in an executable or shared library (--system): the expression
 * at each link-time address pc[i] in the object's DWARF m, a uprobe_events
 * probe at path's file offset off[i] (a global: an offset from the probed
 * mapping, "@+"); each compiled by kvar_site. */
struct sym_module;
struct kvar *kvar_new_user(struct probe *p, struct sym_module *m, const char *path, const uint64_t *pc,
                           const uint64_t *off, int nloc, const char *expr, char *err, size_t n);
/* Site i: the expression compiled there (into kind_var's site i: p->data
 * made by var_data_new), its variables made the fetch arguments of its
 * probe, which is added: the expression, or NULL with err. */
struct expr;
struct expr *kvar_site(struct kvar *v, int i, char *err, size_t n);
/* Site i's tracepoint id (perf_event_open's config of PERF_TYPE_TRACEPOINT). */
int kvar_id(const struct kvar *v, int i);
/* Site i's fetch arguments, for p->where ("a0=+16(%di):s64 ..."). */
const char *kvar_args(const struct kvar *v, int i);
/* A hit of site i by thread tid: its record's raw data (n bytes) evaluated
 * and counted. */
void kvar_sample(struct kvar *v, int i, long tid, const unsigned char *raw, size_t n);
/* The hits the kernel missed at every site (kprobe_profile): 0, or -1 unknown. */
int kvar_missed(const struct kvar *v, uint64_t *missed);
void kvar_free(struct kvar *v);

#endif

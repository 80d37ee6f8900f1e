/* profile.h — exclusive, inclusive and attributed metrics (seed 002) from
 * the calling-context trees, by docs/ARCHITECTURE.md's rule ("Metrics"):
 *  - exclusive(f): time with f on top of the stack;
 *  - inclusive(f): time with f anywhere on the stack, counted once;
 *  - attributed: each instant goes, for each distinct f on the stack, to f's
 *    innermost activation: to the pair (caller -> f) in f's callers view and
 *    to (f -> callee) in f's callees view, or to f's exclusive time when that
 *    activation is the top.
 * All sums are integer ticks, so the two invariants hold exactly:
 *   sum of callers' attributed(f) == inclusive(f)
 *   exclusive(f) + sum of callees' attributed(f) == inclusive(f)
 */
#ifndef SONDE_ANALYSIS_PROFILE_H
#define SONDE_ANALYSIS_PROFILE_H

#include <stdint.h>

#include "analysis/functions.h"
#include "data/reader.h"

struct fn_metrics {
	uint64_t calls;
	int64_t excl, incl;      /* ticks */
};

struct pair_metrics {
	uint32_t caller, callee; /* function indices (FN_ROOT as caller of outermost calls) */
	uint64_t calls;
	int64_t attr_in;         /* in the callee's callers view */
	int64_t attr_out;        /* in the caller's callees view */
};

struct profile {
	struct fn_metrics *fn;   /* by function index */
	uint32_t nfn;
	struct pair_metrics *pairs;
	uint32_t npairs, cappairs;
	uint32_t *pair_hash;     /* open addressing: index+1 into pairs */
	uint32_t hashcap;
	int64_t total;           /* ticks of all recorded time (sum of exclusive) */
	int clamped;             /* a sum reached rd_max_ticks() and stopped there (damaged
	                          * recording): the invariants above are then bounds */
};

/* Accumulate the threads selected (tid 0: all) into p (zero-initialised by profile_init). */
void profile_init(struct profile *p, const struct fn_table *ft);
void profile_add_thread(struct profile *p, const struct recording *r, const struct fn_table *ft,
                        const struct rd_thread *t);
void profile_free(struct profile *p);
struct pair_metrics *profile_pair(struct profile *p, uint32_t caller, uint32_t callee);

#endif

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
 * The same metrics of CPU time (issue 38) are the same walk over each
 * node's CPU ticks (its ticks less its off-CPU time, profile.c), so the
 * invariants hold for them as well.
 */
#ifndef SONDE_ANALYSIS_PROFILE_H
#define SONDE_ANALYSIS_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/functions.h"
#include "data/reader.h"

struct fn_metrics {
	uint64_t calls;
	uint64_t timed_calls;    /* of them, the calls timed (all, but for a function --timing counted) */
	int64_t excl, incl;      /* ticks */
	int64_t excl_cpu, incl_cpu; /* the part of them on a CPU (issue 38), over the threads with a split */
	int64_t excl_run, incl_run; /* the part off the CPU runnable (preempted), the rest of it blocked */
};

struct pair_metrics {
	uint32_t caller, callee; /* function indices (FN_ROOT as caller of outermost calls) */
	uint64_t calls;
	int64_t attr_in;         /* in the callee's callers view */
	int64_t attr_out;        /* in the caller's callees view */
	int64_t attr_in_cpu, attr_out_cpu; /* their CPU time (issue 38) */
};

struct profile {
	struct fn_metrics *fn;   /* by function index */
	uint32_t nfn;
	struct pair_metrics *pairs;
	uint32_t npairs, cappairs;
	uint32_t *pair_hash;     /* open addressing: index+1 into pairs */
	uint32_t hashcap;
	int64_t total;           /* ticks of all recorded time (sum of exclusive) */
	/* The on-CPU part (issue 38): the *_cpu fields sum the threads whose
	 * recording split their time (cpu_threads); cpu_unknown threads had no
	 * split (cpu_why: the first -errno recorded for one, 0 if none said) and
	 * count in the wall-time fields only. */
	int64_t total_cpu, total_run;
	uint32_t cpu_threads, cpu_unknown;
	uint32_t run_threads;    /* of cpu_threads, those whose off-CPU time told runnable from blocked */
	int32_t cpu_why;
	int clamped;             /* a sum reached rd_max_ticks() and stopped there (damaged
	                          * recording): the invariants above are then bounds */
};

/* Whether node n (function f) holds counted calls, not timed ones: a
 * counted function's calls are a context of the root without time
 * (record/profile_out.c, counted_nodes); --timing=auto's switched functions
 * have both kinds of contexts. */
static inline int profile_node_counted(const struct fn_info *f, const struct rec_node *n)
{
	return n->parent == 0 && n->ticks == 0 && (f->untimed || f->switched);
}

/* Accumulate the threads selected (tid 0: all) into p (zero-initialised by profile_init). */
void profile_init(struct profile *p, const struct fn_table *ft);
void profile_add_thread(struct profile *p, const struct recording *r, const struct fn_table *ft,
                        const struct rd_thread *t);
void profile_free(struct profile *p);
struct pair_metrics *profile_pair(struct profile *p, uint32_t caller, uint32_t callee);
/* Every thread of p split its time into CPU and off-CPU (the *_cpu fields
 * are whole); otherwise they are not shown, and profile_cpu_why says why
 * in a few words ("perf_event_open refused: Permission denied"). */
int profile_cpu_known(const struct profile *p);
/* ... and every one of them told runnable from blocked (the *_run fields are whole). */
int profile_run_known(const struct profile *p);
/* Count thread t in p's cpu_threads / cpu_unknown / cpu_why (profile_add_thread does). */
void profile_count_split(struct profile *p, const struct rd_thread *t);
/* The CPU ticks of each of t's nodes, as the *_cpu metrics count them
 * (malloc'ed, t->nnodes of them), or NULL when t has no split. */
int64_t *profile_node_cpu(const struct recording *r, const struct rd_thread *t);
const char *profile_cpu_why(const struct profile *p, char *buf, size_t n);

#endif

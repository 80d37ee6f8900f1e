/* lock_cct.h — lock wait and hold time per calling-context node, from a
 * `--locks --trace` recording: the lock events sit among the call events in
 * each thread's timeline, so each one happens in a known calling context.
 *  - wait: the ticks an acquisition waited (LK_EV_ACQ_WAIT, a timed wait
 *    that gave up, a condition wait), charged to the context that called
 *    the lock function;
 *  - hold: the ticks of an outer hold (LK_EV_REL's aux), charged to the
 *    context that took the lock (the acquisition on the same thread), or to
 *    the releasing context when the taker is unknown (released by another
 *    thread, hold carried across fork, acquisition before the trace).
 * Contexts are the nodes of the thread's calling-context tree (rd_thread.nodes,
 * from the profile or built from the trace): node 0, the root, gets what
 * happened outside every recorded call.  A call the tree does not have
 * (a trace filtered differently from the tree) charges its parent. */
#ifndef SONDE_ANALYSIS_LOCK_CCT_H
#define SONDE_ANALYSIS_LOCK_CCT_H

#include <stddef.h>
#include <stdint.h>

#include "data/reader.h"

struct lock_cct {
	uint64_t **wait, **hold;  /* [thread index][node] ticks; NULL for threads left out */
	uint32_t *n;              /* [thread index] entries (max(nnodes, 1)) */
	int nthreads;
	uint64_t events;          /* lock events charged */
};

/* For the threads selected (tid 0: all).  0 ok (a recording without lock
 * events gives all zeros), -1 with err set (damaged events or out of
 * memory: what was read is kept). */
int lock_cct_build(const struct recording *r, int tid, struct lock_cct *lc, char *err, size_t errlen);
void lock_cct_free(struct lock_cct *lc);

#endif

/* agent_stack.h — stack probes on the agent engine, sonde's side
 * (agent_stack.c): the records the agent wrote into its per-thread stack
 * rings (common/probe_area.h, struct pa_sring; src/rt/probe_stack.c) are
 * unwound and counted into their probes (kind_stack.c's table). */
#ifndef SONDE_PROBE_AGENT_STACK_H
#define SONDE_PROBE_AGENT_STACK_H

#include <stdint.h>

#include "common/probe_area.h"

struct engine;
struct probe;

/* Provided by agent_kinds.c: the site records of stack probe p (*sites, the
 * count returned; 0 when p is not one), whose p->data is kind_stack.c's. */
int agent_probe_stack(struct probe *p, const int **sites);

/* Drains every stack ring of the area pa (its rings at offset stk_off,
 * sonde's own number; 0: the area has none) into the stack probes of e: while the program runs,
 * and once more at the end; a ring whose thread ended is freed.  Returns
 * the records taken. */
uint64_t agent_stack_drain(struct engine *e, struct pa_hdr *pa, uint64_t stk_off);
/* The unwind table (struct pa_utab, after the stack rings at stk_off) made
 * of the .eh_frame of every module of e, unless it already is (the same
 * modules): the agent walks stacks with it.  *nrows (may be NULL): its rows.
 * -1 when the area has no stack rings. */
int agent_stack_table(struct engine *e, struct pa_hdr *pa, uint64_t stk_off, uint32_t *nrows);
/* Records that were not the agent's own (bad lengths, sites): dropped. */
uint64_t agent_stack_bad(void);

#endif

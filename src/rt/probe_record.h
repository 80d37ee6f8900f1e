/* probe_record.h — the agent's side of `sonde probe --record`
 * (probe_record.c): the hits of the probe sites as events in per-thread
 * rings of the shared area (common/probe_area.h, struct pa_ring). */
#ifndef SONDE_RT_PROBE_RECORD_H
#define SONDE_RT_PROBE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "common/probe_area.h"

/* A new session's area h (of size bytes): its rings, when it has them (h->rec_on). */
void pa_rec_start(struct pa_hdr *h, uint64_t size);
/* One event of this thread (enum pa_ev) of site record rec at clock ticks t. */
void pa_rec_put(uint32_t rec, uint32_t type, int64_t v, uint64_t t);
/* An assertion failed: the event and the saved values (mask: which). */
void pa_rec_fail(uint32_t rec, uint32_t mask, const int64_t *saved, int nsaved, uint64_t t);

/* The first free ring of n (each begins with its state, 0 free, stride
 * bytes apart from state0, ring 0's) claimed by compare-and-swap 0 -> 1:
 * its index, or -1.  The recording rings' and the stack rings'
 * (probe_stack.c). */
int pa_ring_claim(uint32_t *state0, size_t stride, uint32_t n);

#endif

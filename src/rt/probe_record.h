/* probe_record.h — the agent's side of `sonde probe --record`
 * (probe_record.c): the hits of the probe sites as events in per-thread
 * rings of the shared area (common/probe_area.h, struct pa_ring). */
#ifndef SONDE_RT_PROBE_RECORD_H
#define SONDE_RT_PROBE_RECORD_H

#include <stdint.h>

#include "common/probe_area.h"

/* A new session's area h (of size bytes): its rings, when it has them (h->rec_on). */
void pa_rec_start(struct pa_hdr *h, uint64_t size);
/* One event of this thread (enum pa_ev) of site record rec at clock ticks t. */
void pa_rec_put(uint32_t rec, uint32_t type, int64_t v, uint64_t t);
/* An assertion failed: the event and the saved values (mask: which). */
void pa_rec_fail(uint32_t rec, uint32_t mask, const int64_t *saved, int nsaved, uint64_t t);

#endif

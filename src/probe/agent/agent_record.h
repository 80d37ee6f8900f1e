/* agent_record.h — `sonde probe -o DIR --record` on the agent engine,
 * sonde's side (agent_record.c): the events the agent wrote into its
 * per-thread rings (common/probe_area.h, struct pa_ring) become the
 * recording's events through probe/record.c, as the ptrace engine's hits
 * do. */
#ifndef SONDE_PROBE_AGENT_RECORD_H
#define SONDE_PROBE_AGENT_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "common/probe_area.h"

struct engine;
struct probe;

/* What a probe takes from the events of its site records. */
enum arec_what {
	AREC_NONE,
	AREC_SLICE,   /* func: a site hit begins a slice, PA_EV_RET ends it */
	AREC_HIT,     /* line, func:F+OFF: an instant per site hit */
	AREC_BRANCH,  /* branch: an instant per site hit, taken or not_taken */
	AREC_VAR,     /* var: the value, or unavailable */
	AREC_ASSERT,  /* assert: pass, fail with the values, or unavailable */
	AREC_TIME,    /* time: the interval from the previous time probe (ns), if any */
};

/* Provided by agent_kinds.c: probe p's site records (*sites, the count
 * returned) and what it takes from them. */
int agent_probe_recs(struct probe *p, const int **sites, enum arec_what *what);
/* Provided by agent_kinds.c: the failure text of assert p at its site
 * role with the agent's saved values (mask: which), as the ptrace kind
 * writes it. */
void agent_assert_values(struct probe *p, int role, const int64_t *vals, uint32_t mask, char *buf, size_t n);

/* Drains every ring of the area pa (rings: pa_rec_size() bytes sonde mapped
 * at offset rec_off, sonde's own number) into e->rec: while the program runs,
 * and once more at the end; a ring whose thread ended is freed.  Returns the
 * most events taken from one ring (how soon to come back). */
uint64_t agent_record_drain(struct engine *e, struct pa_hdr *pa, uint64_t rec_off);
/* Events the agent dropped so far (rings full, no ring free): for the end. */
uint64_t agent_record_dropped(void);

#endif

/* trace_cct.h — calling-context trees built from a --trace recording's
 * timeline, so that report / tree / callers-callees / flamegraph work on
 * trace recordings exactly as on profile recordings. */
#ifndef SONDE_ANALYSIS_TRACE_CCT_H
#define SONDE_ANALYSIS_TRACE_CCT_H

#include <stddef.h>

#include "data/reader.h"
#include "data/events.h"

/* For every thread without a CCT, build one from the events (the slices the
 * trace holds, after its filters; f NULL: the recording's own, else e.g. a
 * time range).  0 ok, -1 with err set (damaged events: the trees hold what
 * could be read). */
int trace_cct_build(struct recording *r, const struct tr_filter *f, struct tr_stats *st, char *err, size_t errlen);

#endif

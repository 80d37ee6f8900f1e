/* domain_out.h — the work domain's file (seed 003; record/domain.h reads
 * it back): after a --trace recording, the names of the functions whose
 * records survived the filters, written to DIR/domain.txt.  Here rather than
 * in record/ because naming the functions takes the recording's function
 * table (analysis/functions.h). */
#ifndef SONDE_ANALYSIS_DOMAIN_OUT_H
#define SONDE_ANALYSIS_DOMAIN_OUT_H

#include <stddef.h>

#include "record/record.h"

/* After a --trace recording: write DIR/domain.txt.  Returns the number of
 * functions written, -1 with msg set. */
int domain_write(struct session *s, const char *dir, char *msg, size_t len);

#endif

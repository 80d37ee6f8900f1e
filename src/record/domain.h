/* domain.h — the work domain of --domain (seed 003): the functions whose
 * records survived the filters in a trace recording, kept in the recording
 * directory as domain.txt, and used by the next `record --trace --domain
 * auto` as the only traced set.  The file is written by
 * analysis/domain_out.h; here it is read back, and the filters counted. */
#ifndef SONDE_RECORD_DOMAIN_H
#define SONDE_RECORD_DOMAIN_H

#include "record/record.h"

/* Read the domain file (arg "auto": DIR/domain.txt, else a file) and add
 * its functions to the session's filter patterns ("=name").  Returns the
 * number of functions, -1 with msg set on error. */
int domain_apply(struct session *s, const char *dir, const char *arg, char *msg, size_t len);

/* What the filters did: functions in the modules, functions left dormant
 * (sleds never switched on), and calls kept out of the trace by the
 * filters applied at run time. */
struct domain_stats {
	uint64_t funcs, dormant, filtered;
};
void domain_stats(struct session *s, struct domain_stats *out);

#endif

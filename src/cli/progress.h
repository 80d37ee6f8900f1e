/* progress.h — a progress line on stderr for commands that read a long
 * timeline (export, replay, report/tree/flamegraph/diff of a --trace
 * recording, locks).  Shown when stderr is a terminal and the work has
 * lasted a second, redrawn at most 10 times a second, erased at the end.
 * SONDE_PROGRESS=0 turns it off; SONDE_PROGRESS=1 shows it at once, even
 * when stderr is not a terminal (for logs, and for the tests). */
#ifndef SONDE_CLI_PROGRESS_H
#define SONDE_CLI_PROGRESS_H

#include "data/reader.h"

/* Report the reading of r's events as "sonde: reading WHAT: N% (X of Y)". */
void progress_attach(struct recording *r, const char *what);

#endif

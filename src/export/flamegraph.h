/* flamegraph.h — a self-contained interactive SVG flame graph (hover: name,
 * calls, time, share; click: zoom; "Reset zoom") from the calling-context
 * trees of a recording (a profile's own, or the ones built from a trace). */
#ifndef SONDE_EXPORT_FLAMEGRAPH_H
#define SONDE_EXPORT_FLAMEGRAPH_H

#include <stdio.h>

#include "analysis/functions.h"
#include "data/reader.h"

/* Merge the CCTs of the selected threads (sel NULL: all) and write the SVG.
 * Returns the number of frames drawn, -1 on a write error. */
int flame_svg_write(FILE *out, const struct recording *r, const struct fn_table *ft, const struct rd_select *sel,
                    const char *title);

#endif

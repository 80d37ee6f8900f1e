/* export.h — one interface for every output format of `sonde export` (and
 * the flame graph): a format is one file implementing struct export_ops. */
#ifndef SONDE_EXPORT_EXPORT_H
#define SONDE_EXPORT_EXPORT_H

#include <stdio.h>

#include "analysis/functions.h"
#include "analysis/profile.h"
#include "data/reader.h"

struct export_ctx {
	const struct recording *r;
	const struct fn_table *ft;
	FILE *out;
	struct rd_select sel;      /* the threads exported (all zero: every thread) */
	int has_range;
	double from_s, to_s;       /* --time-range, seconds from the start */
	char err[1024];            /* message when write() fails */
};

struct export_ops {
	const char *name;          /* --format value */
	const char *what;          /* one line for --help and errors */
	int needs_events;          /* needs a --trace recording */
	int (*write)(struct export_ctx *x); /* 0 ok, -1 error in x->err */
};

extern const struct export_ops export_callgrind, export_folded, export_pprof, export_chrome, export_perfetto;
/* NULL-terminated list of the formats. */
extern const struct export_ops *const export_formats[];
const struct export_ops *export_find(const char *name);

#endif

/* syscalls.h (analysis) — the system calls of a `record --syscalls`
 * recording (REC_SYSCALLS): per (calling function, call) and per (process,
 * call), counts, nanoseconds inside the calls, bytes and errors. */
#ifndef SONDE_ANALYSIS_SYSCALLS_H
#define SONDE_ANALYSIS_SYSCALLS_H

#include <stdint.h>

#include "analysis/functions.h"
#include "data/reader.h"

struct sca_row {
	uint32_t fn;             /* function index (fn_table); FN_ROOT: outside every recorded function */
	int32_t pid;             /* per-process rows; 0 in per-function rows */
	uint32_t call;           /* index in sonde's list (sca_call_name) */
	uint64_t count, bytes, errors;
	double ns;
};

struct sca {
	int present;             /* the recording has a REC_SYSCALLS record */
	uint64_t lost;           /* calls the runtime could not count */
	struct sca_row *by_fn;   /* sorted: most time first */
	uint32_t nfn;
	struct sca_row *by_proc; /* sorted by pid, then call */
	uint32_t nproc;
};

/* The name of call index i ("read", ...), or NULL if out of sonde's list. */
const char *sca_call_name(uint32_t call);
/* 0, or -1 with err set (a damaged record). */
int sca_load(const struct recording *r, const struct fn_table *ft, struct sca *a, char *err, size_t errlen);
void sca_free(struct sca *a);

#endif

/* reader.h — the one reader of sonde.data, used by every analysis.
 * It never trusts the files: every record is length- and CRC-checked, every
 * index bounds-checked, and a damaged recording yields a one-line error that
 * says which file and which byte, never a crash or a wrong number. */
#ifndef SONDE_DATA_READER_H
#define SONDE_DATA_READER_H

#include <stdint.h>
#include <stdio.h>

#include "common/format.h"
#include "common/ring.h"

struct rd_thread {
	struct rec_thread r;
	struct sonde_node *nodes; /* NULL if no profile */
	uint32_t nnodes;
};

struct rd_module {
	struct rec_module r;
	uint64_t *funcs;          /* nfuncs link-time addresses */
};

struct recording {
	char *dir;
	char **meta_keys, **meta_vals;
	int nmeta;
	double ticks_per_ns;
	uint64_t start_ticks;
	uint32_t mode;
	struct rec_process *procs;
	int nprocs;
	struct rd_thread *threads;
	int nthreads;
	struct rd_module **modules; /* by module slot; NULL where no module */
	uint32_t nmodule_slots;
	int nmodules;
	int has_events;            /* events.sonde exists */
};

/* Open DIR.  On error returns NULL and writes a message ("sonde.data/...: truncated
 * at byte N") into err. */
struct recording *rd_open(const char *dir, char *err, size_t errlen);
void rd_close(struct recording *r);

const char *rd_meta(const struct recording *r, const char *key); /* NULL if absent */
double rd_ns(const struct recording *r, int64_t ticks);
/* Is func = SONDE_FUNC(mod, num) a valid function id of this recording? */
int rd_func_valid(const struct recording *r, uint32_t func);
struct rec_process *rd_proc(const struct recording *r, uint32_t slot);
uint64_t rd_lost_total(const struct recording *r, int include_unnumbered);

/* Streaming access to events.sonde: one chunk at a time, bounded memory. */
struct rd_events {
	FILE *f;
	char path[4096];
	uint64_t off;
	struct sonde_chunk chunk;
	uint8_t *data;
	uint64_t cap;
};
int rd_events_open(const struct recording *r, struct rd_events *ev, char *err, size_t errlen);
/* 1: a chunk is in ev->chunk / ev->data; 0: end; -1: damaged (err set). */
int rd_events_next(struct rd_events *ev, char *err, size_t errlen);
void rd_events_close(struct rd_events *ev);

/* Generic record iteration (used by readers of other record types, e.g. locks). */
typedef int (*rd_rec_fn)(void *arg, uint32_t type, const uint8_t *p, uint64_t len);
int rd_each_record(const char *path, uint32_t kind, rd_rec_fn fn, void *arg, char *err, size_t errlen);

#endif

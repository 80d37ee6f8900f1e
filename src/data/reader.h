/* reader.h — the one reader of sonde.data, used by every analysis.
 * It never trusts the files: every record is length- and CRC-checked, every
 * index bounds-checked, and a damaged recording yields a one-line error that
 * says which file and which byte, never a crash or a wrong number. */
#ifndef SONDE_DATA_READER_H
#define SONDE_DATA_READER_H

#include <stdint.h>
#include <stdio.h>

#include "common/format.h"

struct rd_thread {
	struct rec_thread r;
	struct rec_node *nodes; /* NULL if no profile */
	uint32_t nnodes;
	uint64_t cct_off;         /* offset of its REC_CCT in profile.sonde (for messages) */
	/* REC_CCT_CPU: off_ns[i] the off-CPU nanoseconds of nodes[i]'s time
	 * (nnodes of them), NULL when not known; cpu_split as recorded (1 when
	 * off_ns is there, -errno of the refused source, 0 without the record) */
	uint64_t *off_ns;
	/* the part of off_ns[i] the thread was runnable (preempted), the rest
	 * blocked; NULL when not told apart (REC_CPU_RUNNABLE) */
	uint64_t *run_ns;
	int32_t cpu_split;
	/* REC_COUNTED (a --trace recording): the calls of its counted
	 * functions, ncounted of them; NULL without */
	struct rec_count *counted;
	uint32_t ncounted;
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
	uint64_t start_mono_ns;   /* CLOCK_MONOTONIC at start_ticks (0: not known) */
	uint32_t mode;
	struct rec_process *procs;
	int nprocs;
	struct rd_thread *threads;
	int nthreads;
	struct rd_module **modules; /* by module slot; NULL where no module */
	uint32_t nmodule_slots;
	int nmodules;
	int has_events;            /* events.sonde exists */
	/* Called by rd_each_event after each chunk of events.sonde, with the
	 * bytes read and the file's size (done == total at the end): for a
	 * progress line.  NULL (rd_open's default): not called. */
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *progress_arg;
};

/* Open DIR.  On error returns NULL and writes a message ("sonde.data/...: truncated
 * at byte N") into err. */
struct recording *rd_open(const char *dir, char *err, size_t errlen);
void rd_close(struct recording *r);
/* The threads' calling-context trees (REC_CCT, REC_CCT_CPU) let go, for a
 * reader that builds them from the timeline instead (a time range of a
 * --trace --timing=auto recording, which has both). */
void rd_drop_trees(struct recording *r);

const char *rd_meta(const struct recording *r, const char *key); /* NULL if absent */

/* Bounds every reader enforces, so that what a damaged or crafted file says
 * can neither exhaust the stack nor overflow an integer:
 *  - RD_MAX_DEPTH: calling-context depth (a CCT path, a trace's nesting).
 *    No recording goes deeper than REC_STACK_MAX (the runtime's shadow stack
 *    holds at most that many frames and deeper calls are counted as lost);
 *  - rd_max_ticks(r): the largest tick count accepted for one CCT node, for
 *    the sum of a node's children and for the span of one thread's timeline
 *    (2^62 ticks at up to 1 tick/ns, fewer on slower clocks).  Its
 *    nanoseconds, doubled, still fit an int64, so sums clamped there convert
 *    exactly; 2^62 ticks are more than 48 years at 3 GHz. */
#define RD_MAX_DEPTH (REC_STACK_MAX + 64u)
uint64_t rd_max_ticks(const struct recording *r);
/* a + b, or UINT64_MAX when that overflows. */
static inline uint64_t rd_sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}
double rd_ns(const struct recording *r, int64_t ticks);
/* The recording's ticks at CLOCK_MONOTONIC ns `mono` (a TRX_SWITCH's
 * times), by its clock calibration: start_ticks at start_mono_ns, ticks_per_ns;
 * 0 when before the start or not known, UINT64_MAX past what ticks hold. */
uint64_t rd_mono_ticks(const struct recording *r, uint64_t mono);
/* Is func = SONDE_FUNC(mod, num) a valid function id of this recording? */
static inline int rd_func_valid(const struct recording *r, uint32_t func)
{
	uint32_t mod = SONDE_FUNC_MOD(func), num = SONDE_FUNC_NUM(func);
	return mod < r->nmodule_slots && r->modules[mod] && (num < r->modules[mod]->r.nfuncs || num == SONDE_UNNUMBERED);
}
struct rec_process *rd_proc(const struct recording *r, uint32_t slot);
/* A subset of a recording's threads, as the readers' --tid, --pid and
 * --comm give it (0 / NULL: any): a thread id; a process id (every image of
 * that pid: the one that forked and what it exec'd); a program, a glob
 * matched against the file name and the path of the process's executable. */
struct rd_select {
	int tid, pid;
	const char *comm;
};
int rd_thread_selected(const struct recording *r, const struct rd_select *s, const struct rd_thread *t);
/* Is anything selected beyond every thread? */
static inline int rd_select_any(const struct rd_select *s)
{
	return s->tid || s->pid || s->comm;
}
uint64_t rd_lost_total(const struct recording *r, int include_unnumbered);

/* Streaming access to events.sonde: one chunk at a time, bounded memory. */
struct rd_events {
	FILE *f;
	char path[4096];
	uint64_t off;
	uint64_t size;            /* of the file when it was opened */
	struct rec_chunk chunk;
	uint8_t *data;
	uint64_t cap;
	uint8_t *zdata;           /* the other buffer of a compressed chunk */
	uint64_t zcap;
	void *zdctx;              /* ZSTD_DCtx, made at the first compressed chunk, kept until close */
};
int rd_events_open(const struct recording *r, struct rd_events *ev, char *err, size_t errlen);
/* 1: a chunk is in ev->chunk / ev->data; 0: end; -1: damaged (err set). */
int rd_events_next(struct rd_events *ev, char *err, size_t errlen);
void rd_events_close(struct rd_events *ev);

/* Generic record iteration (used by readers of other record types, e.g. locks).
 * fn returns 0 to go on, RD_REC_DAMAGED (the record's contents are invalid:
 * "damaged record at byte N"), RD_REC_NOMEM, or -1 with err already set. */
enum { RD_REC_DAMAGED = 1, RD_REC_NOMEM = 2 };
typedef int (*rd_rec_fn)(void *arg, uint32_t type, const uint8_t *p, uint64_t len);
int rd_each_record(const char *path, uint32_t kind, rd_rec_fn fn, void *arg, char *err, size_t errlen);

/* Recovery of a file a killed writer left: the offset just after its last
 * complete, undamaged record (an END record excluded), with the chunk
 * records and their event bytes up to there; -1 when the file is missing or
 * its header is not a sonde file of this kind and version. */
int64_t rd_valid_prefix(const char *path, uint32_t kind, uint64_t *chunks, uint64_t *bytes);

#endif

/* convert.h — the runtime's structs (session memory: common/session.h,
 * common/ring.h, src/common/lock_session.h) to the records of the recording
 * (common/format.h, common/format_locks.h), field by field: one function per
 * record type, all in convert.c, so that the file format depends on the
 * runtime's memory layout nowhere else.  The callers have bounded every
 * count and offset first (record/audit.c); these only copy, clamp strings
 * and translate codes. */
#ifndef SONDE_RECORD_CONVERT_H
#define SONDE_RECORD_CONVERT_H

#include <stdint.h>

#include "common/format.h"
#include "common/format_locks.h"
#include "common/ring.h"
#include "common/session.h"
#include "common/lock_session.h"

/* META "mode" of a session's SONDE_MODE_* bits. */
uint32_t conv_mode(uint32_t session_mode);
/* Disk index (enum rec_lost) of a loss cause (enum sonde_loss), or -1 for
 * an index the runtime leaves unused. */
int conv_lost_index(int cause);

/* Process slot `index`; end_fallback: its end when it did not record one. */
void conv_process(struct rec_process *r, const struct sonde_proc *p, uint32_t index, uint64_t end_fallback);
/* Module slot `index` (r->nfuncs as the session says: the caller bounds it). */
void conv_module(struct rec_module *r, const struct sonde_module *m, uint32_t index);
/* Thread slot `index`, ended at end_tsc, with `nodes` CCT nodes written and
 * open_frames frames closed at its end. */
void conv_thread(struct rec_thread *r, const struct sonde_thread *t, uint32_t index, uint64_t end_tsc,
                 uint32_t nodes, uint32_t open_frames);
void conv_node(struct rec_node *r, const struct sonde_node *n);
/* The nodes [0, n) of a thread's tree, converted, made a tree the readers
 * accept: cut at the first node whose parent is not before it or whose
 * function is of none of the nmods modules written (h: their nfuncs), the
 * links made again from the parents; how many nodes are left. */
uint32_t conv_cct_tree(struct rec_node *out, uint32_t n, uint32_t nmods, const struct sonde_session_hdr *h);
/* The header of a ring chunk that ring_drain handed over (FULL or FILLING). */
void conv_chunk(struct rec_chunk *r, const struct sonde_chunk *c);

/* The lock profile's summary: nlocks ids handed out and nmaps maps (both
 * bounded by the caller), lost_stats summed over the threads. */
void conv_summary(struct lkrec_summary *r, const struct lk_session *S, uint32_t nlocks, uint32_t nmaps,
                  uint64_t lost_stats);
void conv_lock(struct lkrec_lock *r, const struct lk_lock *k, uint32_t id);
void conv_map(struct lkrec_map *r, const struct lk_map *m);
/* A thread's aggregates for one lock, without the runtime's held state. */
void conv_stat(struct lkrec_stat *r, const struct lk_stat *s);

#endif

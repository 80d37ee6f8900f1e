/* trace.h — trace-mode part of the hot path: entry and exit records into the
 * thread's ring, with the --depth, --min-time and -F/-N filters applied in
 * O(1).  Included by hooks.c only. */
#ifndef SONDE_RT_TRACE_H
#define SONDE_RT_TRACE_H

#include "common/trace_enc.h"
#include "rt/rt.h"

/* Per-module trace filter bits (2 bits per function: traced-if-inside, match -F). */
static inline int trace_wanted(struct rt_tls *L, struct sonde_thread *t, struct sonde_frame *f, uint32_t depth)
{
	(void)L;
	if (rt_sess->trace_max_depth && depth > rt_sess->trace_max_depth)
		return 0;
	uint32_t mod = SONDE_FUNC_MOD(f->func);
	uint64_t foff = rt_sess->modules[mod].filter_off;
	if (foff) {
		/* bit 2n: -F match; bit 2n+1: -N match (or outside the domain) */
		const uint8_t *bits = (const uint8_t *)rt_sess + foff;
		uint32_t n = SONDE_FUNC_NUM(f->func);
		if (n == SONDE_UNNUMBERED)
			n = rt_sess->modules[mod].nfuncs;
		uint32_t b = (bits[n >> 2] >> ((n & 3) * 2)) & 3u;
		if (b & 1u) {
			f->flags |= SONDE_FRAME_FILTER;
			t->filter_depth++;
		}
		if (b & 2u)
			return 0;
	}
	/* With -F, only calls inside a matching function are traced. */
	return !rt_sess->filter_has_only || t->filter_depth > 0;
}

/* This function left a record: note it in the thread's records[number] array
 * for the module (seed 000's O(1) slot; unused otherwise in trace-only mode),
 * so the recorder can write the --domain file without decoding the trace. */
static inline void trace_mark(struct rt_tls *L, uint32_t func)
{
	uint32_t slot = SONDE_FUNC_MOD(func);
	if (slot >= SONDE_MAX_MODS_PER_THREAD || (rt_mode & SONDE_MODE_PROFILE))
		return;
	uint32_t *recs = L->priv->recs[slot];
	if (__builtin_expect(!recs, 0) && !(recs = rt_recs_alloc(L, slot)))
		return;
	uint32_t n = SONDE_FUNC_NUM(func);
	recs[n == SONDE_UNNUMBERED ? rt_sess->modules[slot].nfuncs : n] = 1;
}

static inline __attribute__((always_inline)) void trace_enter(struct rt_tls *L, struct sonde_thread *t, struct sonde_frame *f, uint32_t depth,
                               uint64_t now)
{
	if (!L->ring)
		return;
	if (!trace_wanted(L, t, f, depth)) {
		t->trace_filtered++;
		return;
	}
	/* Room for the longest entry record; the varints are written in place. */
	int fresh;
	uint8_t *p = ring_reserve(rt_sess, L->ring, TR_MAX_VARINT + 5, now, &t->wait_ticks,
	                          (rt_mode & SONDE_MODE_LOSSY) != 0, &fresh);
	if (!p) {
		L->ring->lost_pending++;
		t->lost[SONDE_LOST_RING_EVENTS]++;
		return;
	}
	/* first record of a chunk: time relative to the chunk base (= now) */
	uint64_t prev = fresh ? now : L->trace_last;
	int n = tr_put_varint(p, ((now - prev) << 2) | TR_ENTER);
	n += tr_put_varint(p + n, f->func);
	f->flags |= SONDE_FRAME_TRACED;
	if (rt_sess->trace_min_ticks) {
		/* --min-time may roll this record back at the exit: remember where it is.
		 * flags: entry length (bits 8..15) and its chunk's seq (low 16 bits, 16..31) */
		struct sonde_chunk *c = ring_chunk(rt_sess, L->ring, L->ring->cur);
		f->trace_pos = c->used;
		f->trace_prev = prev;
		f->flags |= ((uint32_t)n << SONDE_FRAME_ENTRYLEN) | ((uint32_t)c->seq << 16);
		L->trace_seq = c->seq;
	}
	ring_commit(rt_sess, L->ring, (uint32_t)n);
	L->trace_last = now;
}

static inline __attribute__((always_inline)) void trace_exit(struct rt_tls *L, struct sonde_thread *t, struct sonde_frame *f, uint32_t depth,
                              uint64_t now, int abnormal)
{
	(void)depth;
	if ((f->flags & SONDE_FRAME_FILTER) && t->filter_depth) /* frames re-created by fork: no underflow */
		t->filter_depth--;
	if (!(f->flags & SONDE_FRAME_TRACED))
		return;
	/* --min-time: a short call with no recorded child leaves nothing. */
	if (now - f->start < rt_sess->trace_min_ticks && !abnormal) {
		struct sonde_chunk *c = ring_chunk(rt_sess, L->ring, L->ring->cur);
		uint32_t len = (f->flags >> SONDE_FRAME_ENTRYLEN) & 0xff;
		if (len && (uint16_t)c->seq == (uint16_t)(f->flags >> 16) && c->used == f->trace_pos + len) {
			c->used = f->trace_pos;
			L->trace_last = f->trace_prev;
			return;
		}
	}
	int fresh;
	uint8_t *p = ring_reserve(rt_sess, L->ring, TR_MAX_VARINT, now, &t->wait_ticks,
	                          (rt_mode & SONDE_MODE_LOSSY) != 0, &fresh);
	if (!p) {
		L->ring->lost_pending++;
		t->lost[SONDE_LOST_RING_EVENTS]++;
		return;
	}
	uint64_t dt = fresh ? 0 : now - L->trace_last;
	int n = tr_put_varint(p, (dt << 2) | (abnormal ? TR_EXIT_ABNORMAL : TR_EXIT));
	ring_commit(rt_sess, L->ring, (uint32_t)n);
	L->trace_last = now;
	trace_mark(L, f->func);
}

#endif

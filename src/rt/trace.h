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

/* The writer's fast path into the thread's ring: the chunk being filled is
 * kept in TLS (L->tchunk), the write position is its `used`, so a record costs
 * a bound check, its bytes and the store of the new `used` (ring.h's
 * contract unchanged: the payload before `used`, `used` on every record for
 * crash safety).  The chunk is valid while it stays the ring's current one,
 * FILLING, with a record in it (else a new record writes absolute time);
 * otherwise it is rt_chunk_full, whose `used` fails the bound check:
 * rt_ring_reserve_slow sets it from ring_reserve, and every other writer of
 * the ring that may change the chunk, the thread's end and a roll-back
 * forget it (rt_ring_forget), so that the next record takes the slow path.
 * Returns 0 when there is no room (the record is lost, counted), else 1 with
 * *cp the chunk and *up its `used`: the n bytes go at trace_at(*cp, *up),
 * computed where they are stored so that the fast path's stores address the
 * chunk and `used` directly. */
static inline __attribute__((always_inline)) int trace_reserve(struct rt_tls *L, uint32_t n, uint64_t now,
                                                              struct sonde_chunk **cp, uint32_t *up)
{
	struct sonde_chunk *c = L->tchunk; /* rt_chunk_full when not known: fails the test */
	uint32_t u = c->used;
	/* u against a constant (n is one in every caller): no addition */
	if (__builtin_expect(u <= RING_CHUNK_SIZE - sizeof *c - n, 1)) {
		*cp = c;
		*up = u;
		return 1;
	}
	uint8_t *p = rt_ring_reserve_slow(L, n, now);
	if (!p)
		return 0;
	*cp = L->tchunk;
	*up = (uint32_t)(p - (uint8_t *)(L->tchunk + 1));
	return 1;
}

static inline __attribute__((always_inline)) uint8_t *trace_at(struct sonde_chunk *c, uint64_t u)
{
	return (uint8_t *)(c + 1) + u;
}

/* The record of n bytes at the chunk's `used` (trace_reserve's position:
 * nothing else moved it since, this thread being the only writer and the
 * hook not re-entered) is written.  An `add` to `used` in memory, one
 * instruction, rather than the position kept in a register and its sum
 * stored; `used` is still stored once, after the payload. */
static inline __attribute__((always_inline)) void trace_commit(struct sonde_chunk *c, uint32_t n)
{
	atomic_signal_fence(memory_order_release); /* payload before `used` (crash safety) */
	c->used += n;
}

/* tr_put_varint with the short forms inline (a record's time gap and a
 * function number take one or two bytes nearly always). */
static inline __attribute__((always_inline)) int trace_varint(uint8_t *p, uint64_t v)
{
	if (__builtin_expect(v < 0x80, 1)) {
		p[0] = (uint8_t)v;
		return 1;
	}
	if (__builtin_expect(v < 0x4000, 1)) {
		p[0] = (uint8_t)(v | 0x80);
		p[1] = (uint8_t)(v >> 7);
		return 2;
	}
	return tr_put_varint(p, v);
}

/* The record's first two bytes for a gap of d < 2^12 ticks and a kind k:
 * varint(v = d << 2 | k) always in two bytes, (v & 0x7f) | 0x80, v >> 7,
 * which as a little-endian word is v + (v & ~0x7f) + 0x80, that is
 * 4 * (d + (d & ~0x1f)) + 0x80 + k: an `and`, an `add` and one `lea`.  A v
 * below 2^7 (a gap of fewer than 32 ticks: about 5% of a Lua trace's) so
 * takes a byte more than its shortest varint, 0x80 | v, 0x00, which every
 * reader takes (tr_get_varint; FORMAT.md); in exchange no length is
 * computed and no branch follows the program's timing.  The entry adds the
 * 0x80 with the function's bytes (rt_fenc). */
static inline __attribute__((always_inline)) uint64_t trace_gap14(uint64_t d)
{
	return 4 * (d + (d & ~(uint64_t)0x1f));
}

/* The first record of a function in a process of a trace-only session
 * without filters (the plain hook): its rt_fenc entry (rt.h), stored after
 * the function is marked in this thread's records[number] for the --domain
 * file (domain_out.c takes the union of the threads' marks: the other
 * threads of the process, which find the entry set, need not mark it).
 * func < 2^26 (a plain slot): four bytes at most. */
static __attribute__((noinline, cold)) uint64_t trace_fenc(struct rt_tls *L, uint64_t func)
{
	trace_mark(L, (uint32_t)func);
	uint8_t b[TR_MAX_VARINT] = { 0 };
	uint64_t len = (uint64_t)tr_put_varint(b, func);
	uint64_t w = 0x80 | (uint64_t)b[0] << 16 | (uint64_t)b[1] << 24 | (uint64_t)b[2] << 32 |
	             (uint64_t)b[3] << 40 | (len + 2) << 48;
	__atomic_store_n(&rt_fenc[func], w, __ATOMIC_RELEASE); /* after the mark */
	return w;
}

/* A time gap of 2^12 ticks or more (a varint of three bytes or more), then
 * the function's varint (fv: its rt_fenc entry): out of the hook's
 * registers.  Returns the record's length. */
static __attribute__((noinline, cold)) uint32_t trace_put_far(struct sonde_chunk *c, uint32_t u, uint64_t g,
                                                               uint64_t fv)
{
	uint8_t *p = (uint8_t *)(c + 1) + u;
	int n = tr_put_varint(p, g);
	uint32_t fe = (uint32_t)(fv >> 16);
	__builtin_memcpy(p + n, &fe, 4);
	return (uint32_t)n + (uint32_t)(fv >> 48) - 2;
}

/* Longest entry record: varint(gap) + varint(func, < 2^32). */
#define TRACE_ENTER_MAX (TR_MAX_VARINT + 5)

/* Entry record.  `plain`: the hook of a trace-only session without filters
 * (no --depth, -F, -N, --domain, --min-time: rt_enter_hook chooses it per
 * module), which writes the record with the function's bytes kept in the
 * process's rt_fenc[func] (which trace_fenc fills and marks the function
 * at its first record), and whose frame comes with
 * SONDE_FRAME_TRACED already set (cleared here if nothing is written). */
static inline __attribute__((always_inline)) void trace_enter(struct rt_tls *L, struct sonde_thread *t, struct sonde_frame *f,
                                                              uint64_t func, uint32_t depth, uint64_t now, int plain)
{
	if (!plain && !trace_wanted(L, t, f, depth)) {
		t->trace_filtered++;
		return;
	}
	/* Room for the longest entry record (and the 8-byte store below); the
	 * varints are written in place. */
	struct sonde_chunk *c;
	uint32_t u;
	if (!trace_reserve(L, TRACE_ENTER_MAX, now, &c, &u)) {
		if (plain)
			f->flags &= ~SONDE_FRAME_TRACED;
		return;
	}
	/* the first record of a chunk: time relative to the chunk base (= now,
	 * which rt_ring_reserve_slow put in last_tsc: rt_ring_last) */
	int n;
	if (plain) {
		uint64_t fv = __atomic_load_n(&rt_fenc[func], __ATOMIC_RELAXED); /* trace_fenc's, any thread's */
		if (__builtin_expect(!fv, 0))
			fv = trace_fenc(L, func);
		uint64_t d = now - t->last_tsc;
		if (__builtin_expect(d < 0x1000, 1)) {
			/* the gap's two bytes added to the entry's (its 0x80), then the
			 * function's four (of which 2 + length count) in one store: no
			 * branch on either length */
			uint64_t w = fv + trace_gap14(d);
			__builtin_memcpy(trace_at(c, u), &w, 8);
			n = (int)(w >> 48);
		} else {
			n = (int)trace_put_far(c, u, d << 2 | TR_ENTER, fv);
		}
	} else {
		uint8_t *p = trace_at(c, u);
		n = trace_varint(p, (now - t->last_tsc) << 2 | TR_ENTER);
		n += trace_varint(p + n, func);
	}
	if (!plain && rt_sess->trace_min_ticks) {
		/* --min-time may roll this record back at the exit: remember where it is.
		 * flags: entry length (bits 8..15) and its chunk's seq (low 16 bits, 16..31);
		 * the function is marked at the exit, if its record stays */
		f->trace_pos = u;
		f->trace_prev = t->last_tsc;
		f->flags |= ((uint32_t)n << SONDE_FRAME_ENTRYLEN) | ((uint32_t)c->seq << 16);
		L->trace_seq = c->seq;
	} else if (!plain) {
		trace_mark(L, (uint32_t)func);
	}
	if (!plain)
		f->flags |= SONDE_FRAME_TRACED;
	t->last_tsc = now;
	trace_commit(c, (uint32_t)n);
}

/* An exit record that the fast path does not write (no room in the chunk
 * known, or a gap of 2^12 ticks or more): reserved, written and committed
 * here, out of the hook's registers (nothing the hook keeps lives across
 * this call but the frame and the thread).  The gap is taken after the
 * reservation: a new chunk's first record is relative to its base. */
static __attribute__((noinline, cold)) void trace_exit_slow(struct rt_tls *L, struct sonde_thread *t, uint64_t now,
                                                            uint32_t kind)
{
	struct sonde_chunk *c;
	uint32_t u;
	if (!trace_reserve(L, TR_MAX_VARINT, now, &c, &u))
		return;
	int n = tr_put_varint(trace_at(c, u), (now - t->last_tsc) << 2 | kind);
	t->last_tsc = now;
	trace_commit(c, (uint32_t)n);
}

/* Exit record.  A frame without -F's flag nor a --min-time entry length (all
 * of them in a session without filters) only writes its record: its
 * function was marked at the entry.  `plain` (TRACE_PLAIN): the exit of a
 * session without filters, whose frames have neither; TRACE_PLAIN_TRACED:
 * and the frame is known to have its entry record (the plain exit sled's
 * fast path, which takes no other frame). */
#define TRACE_PLAIN 1
#define TRACE_PLAIN_TRACED 2
static inline __attribute__((always_inline)) void trace_exit(struct rt_tls *L, struct sonde_thread *t, struct sonde_frame *f,
                                                             uint64_t now, int abnormal, int plain)
{
	uint32_t fl = f->flags;
	int rolled = 0;
	if (!plain && __builtin_expect(fl & (SONDE_FRAME_FILTER | (0xffu << SONDE_FRAME_ENTRYLEN)), 0)) {
		if ((fl & SONDE_FRAME_FILTER) && t->filter_depth) /* frames re-created by fork: no underflow */
			t->filter_depth--;
		rolled = 1;
	}
	if (plain != TRACE_PLAIN_TRACED && !(fl & SONDE_FRAME_TRACED))
		return;
	/* --min-time: a short call with no recorded child leaves nothing. */
	if (rolled && now - f->start < rt_sess->trace_min_ticks && !abnormal) {
		struct sonde_chunk *c = ring_chunk(rt_sess, L->ring, L->ring->cur);
		uint32_t len = (fl >> SONDE_FRAME_ENTRYLEN) & 0xff;
		if (len && (uint16_t)c->seq == (uint16_t)(fl >> 16) && c->used == f->trace_pos + len) {
			c->used = f->trace_pos;
			rt_ring_forget(L);
			t->last_tsc = f->trace_prev;
			return;
		}
	}
	/* trace_reserve's fast test and a gap under 2^12 ticks: the record's
	 * two bytes (trace_gap14); anything else trace_exit_slow */
	struct sonde_chunk *c = L->tchunk; /* rt_chunk_full when not known: fails the test */
	uint64_t u = c->used;
	uint64_t d = now - t->last_tsc;
	uint32_t kind = abnormal ? TR_EXIT_ABNORMAL : TR_EXIT;
	if (__builtin_expect(u <= RING_CHUNK_SIZE - sizeof *c - TR_MAX_VARINT && d < 0x1000, 1)) {
		uint16_t w = (uint16_t)(trace_gap14(d) + 0x80 + kind);
		__builtin_memcpy(trace_at(c, u), &w, 2);
		t->last_tsc = now;
		trace_commit(c, 2);
	} else {
		trace_exit_slow(L, t, now, kind);
	}
	if (rolled && (fl >> SONDE_FRAME_ENTRYLEN) & 0xff)
		trace_mark(L, f->func); /* --min-time: its entry record stayed */
}

#endif

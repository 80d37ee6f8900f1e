/* ring.h — per-thread event rings in the session memory (trace and lock events).
 *
 * A ring is a fixed array of chunks in the thread's part of the session.  The
 * profiled thread (one writer) fills one chunk at a time; the collector in
 * `sonde record` (one reader, another process) copies full chunks to
 * sonde.data and hands them back.
 *
 * Contract (who synchronizes with whom):
 *  - Writer: fills payload, then `used`, then stores state = FULL with
 *    release.  Reader: loads state with acquire; FULL means payload[0..used)
 *    is complete and visible.
 *  - Reader: after copying, stores state = FREE with release.  Writer: before
 *    reusing a chunk, loads state with acquire and waits (or, lossy, drops)
 *    until it is FREE, so it never overwrites bytes the reader is copying.
 *  - A chunk in state FILLING belongs to the writer.  The reader copies it only
 *    after the writer's process has died (or the thread has exited), when the
 *    last `used` store is final; that is how the events before a crash are kept.
 *  - Every chunk carries a per-thread sequence number: the reader reports any
 *    gap; `lost` counts the events dropped (lossy mode) just before the chunk.
 * Records inside a chunk are the caller's encoding; the ring knows only bytes.
 */
#ifndef SONDE_COMMON_RING_H
#define SONDE_COMMON_RING_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/session.h"

enum { RING_FREE = 0, RING_FILLING = 1, RING_FULL = 2 };

struct sonde_chunk {
	_Atomic uint32_t state;
	uint32_t used;        /* payload bytes written */
	uint64_t seq;         /* per-thread chunk sequence number, from 0 */
	uint64_t base_tsc;    /* time base of the first record (encoding's choice) */
	uint32_t thread;      /* thread slot */
	uint32_t lost;        /* events dropped before this chunk (lossy) */
	/* payload follows */
};
static_assert(sizeof(struct sonde_chunk) == 32, "chunk header: 32 bytes (written to REC_CHUNK as struct rec_chunk by record/convert.c)");

/* Chunk size of every thread ring (the recorder checks a ring against it). */
#define RING_CHUNK_SIZE (64u * 1024u)

struct sonde_ring {
	uint32_t nchunks, chunk_size; /* chunk_size includes the header */
	uint32_t cur;                 /* writer's chunk */
	uint32_t pad;
	uint64_t next_seq;
	uint64_t lost_pending;        /* dropped since the last chunk started */
	uint64_t data_off;            /* session offset of chunk 0 */
};

static inline struct sonde_chunk *ring_chunk(struct sonde_session_hdr *s, struct sonde_ring *r, uint32_t i)
{
	return (struct sonde_chunk *)sess_ptr(s, r->data_off + (uint64_t)i * r->chunk_size);
}

/* Allocate and initialise a ring of `bytes` (rounded to chunks) in the
 * session.  Returns the ring's session offset, 0 when memory is exhausted. */
uint64_t ring_create(struct sonde_session_hdr *s, uint32_t thread, uint64_t bytes, uint32_t chunk_size);

/* Writer: make room for `n` bytes and return where to write them, or NULL
 * when the record must be dropped (lossy and full, or session stopping).
 * *base_tsc is the chunk's time base; `now` starts a new chunk's base.
 * *new_chunk is set to 1 when the record starts a chunk (the encoding then
 * writes absolute values).  Time spent waiting is added to *wait_ticks. */
uint8_t *ring_reserve_slow(struct sonde_session_hdr *s, struct sonde_ring *r, uint32_t n,
                           uint64_t now, uint64_t *wait_ticks, int lossy);

static inline uint8_t *ring_reserve(struct sonde_session_hdr *s, struct sonde_ring *r, uint32_t n,
                                    uint64_t now, uint64_t *wait_ticks, int lossy, int *new_chunk)
{
	struct sonde_chunk *c = ring_chunk(s, r, r->cur);
	if (atomic_load_explicit(&c->state, memory_order_relaxed) == RING_FILLING && c->used &&
	    sizeof *c + c->used + n <= r->chunk_size) {
		*new_chunk = 0;
		return (uint8_t *)(c + 1) + c->used;
	}
	*new_chunk = 1;
	return ring_reserve_slow(s, r, n, now, wait_ticks, lossy);
}

/* Writer: the n bytes reserved last are written. */
static inline void ring_commit(struct sonde_session_hdr *s, struct sonde_ring *r, uint32_t n)
{
	struct sonde_chunk *c = ring_chunk(s, r, r->cur);
	atomic_signal_fence(memory_order_release); /* payload before `used` (crash safety) */
	c->used += n;
}

/* Writer: give back the last n committed bytes (trace --min-time roll-back);
 * only valid while they are still in the current chunk. Returns 0 if done. */
static inline int ring_unwrite(struct sonde_session_hdr *s, struct sonde_ring *r, uint64_t chunk_seq,
                               uint32_t pos)
{
	struct sonde_chunk *c = ring_chunk(s, r, r->cur);
	if (c->seq != chunk_seq || pos > c->used)
		return -1;
	c->used = pos;
	return 0;
}

/* Writer: publish the current chunk now (thread exit). */
void ring_flush(struct sonde_session_hdr *s, struct sonde_ring *r);

/* Reader: call fn for each chunk ready to copy (FULL; and FILLING too when
 * `final` is set), then mark it FREE.  Returns the number of chunks, or -1
 * if the ring's geometry leads outside the `size` bytes mapped; chunks whose
 * length is impossible are dropped and counted in *damaged.  A ring is
 * trusted only with chunks of RING_CHUNK_SIZE and at most max_bytes of them
 * (what the recorder configured), so a damaged header cannot make the
 * reader walk (and the kernel allocate) the whole sparse session. */
int ring_drain(struct sonde_session_hdr *s, uint64_t size, uint64_t max_bytes, struct sonde_ring *r, int final,
               int (*fn)(void *arg, const struct sonde_chunk *hdr, const void *data), void *arg,
               uint64_t *damaged);

#endif

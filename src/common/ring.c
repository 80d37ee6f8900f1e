/* ring.c — the slow paths of the per-thread event rings (see ring.h for the
 * writer/reader contract). */
#include "common/ring.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"

uint64_t ring_create(struct sonde_session_hdr *s, uint32_t thread, uint64_t bytes, uint32_t chunk_size)
{
	uint32_t n = (uint32_t)(bytes / chunk_size);
	if (n < 2)
		n = 2;
	uint64_t roff = sess_alloc(s, sizeof(struct sonde_ring));
	uint64_t doff = roff ? sess_alloc(s, (uint64_t)n * chunk_size) : 0;
	if (!roff || !doff)
		return 0;
	struct sonde_ring *r = sess_ptr(s, roff);
	r->nchunks = n;
	r->chunk_size = chunk_size;
	r->cur = 0;
	r->next_seq = 1;
	r->lost_pending = 0;
	r->data_off = doff;
	for (uint32_t i = 0; i < n; i++) {
		struct sonde_chunk *c = ring_chunk(s, r, i);
		c->thread = thread;
		c->used = 0;
		atomic_store_explicit(&c->state, RING_FREE, memory_order_relaxed);
	}
	struct sonde_chunk *c = ring_chunk(s, r, 0);
	c->seq = 0;
	atomic_store_explicit(&c->state, RING_FILLING, memory_order_relaxed);
	return roff;
}

static void start_chunk(struct sonde_ring *r, struct sonde_chunk *c, uint64_t now)
{
	c->seq = r->next_seq++;
	c->used = 0;
	c->base_tsc = now;
	c->lost = (uint32_t)(r->lost_pending > 0xffffffffu ? 0xffffffffu : r->lost_pending);
	r->lost_pending = 0;
	atomic_store_explicit(&c->state, RING_FILLING, memory_order_relaxed);
}

uint8_t *ring_reserve_slow(struct sonde_session_hdr *s, struct sonde_ring *r, uint32_t n,
                           uint64_t now, uint64_t *wait_ticks, int lossy)
{
	if (sizeof(struct sonde_chunk) + n > r->chunk_size)
		return NULL;
	struct sonde_chunk *c = ring_chunk(s, r, r->cur);
	if (atomic_load_explicit(&c->state, memory_order_relaxed) == RING_FILLING) {
		if (c->used == 0) { /* empty chunk: keep it, only reset its base */
			c->base_tsc = now;
			return (uint8_t *)(c + 1);
		}
		/* Publish: payload and `used` before FULL (pairs with ring_drain's acquire). */
		atomic_store_explicit(&c->state, RING_FULL, memory_order_release);
		r->cur = (r->cur + 1) % r->nchunks;
	}
	c = ring_chunk(s, r, r->cur);
	/* Pairs with the reader's release of FREE: its copy is complete. */
	if (atomic_load_explicit(&c->state, memory_order_acquire) != RING_FREE) {
		if (lossy)
			return NULL;
		uint64_t t0 = clock_ticks();
		struct timespec ts = { 0, 20000 };
		for (uint32_t spins = 1; atomic_load_explicit(&c->state, memory_order_acquire) != RING_FREE; spins++) {
			if (atomic_load_explicit(&s->stop, memory_order_relaxed))
				return NULL;
			/* Every ~1000 naps (some 50-100 ms): is anyone left to drain
			 * the ring?  A recorder killed with SIGKILL must not leave the
			 * program asleep here forever: from then on events are dropped
			 * (counted as lost) and the program runs on. */
			if (!(spins & 1023) && s->collector_pid > 0) {
				int e = errno;
				int gone = kill(s->collector_pid, 0) != 0 && errno == ESRCH;
				errno = e;
				if (gone) {
					atomic_store_explicit(&s->stop, 1, memory_order_relaxed);
					return NULL;
				}
			}
			nanosleep(&ts, NULL); /* only when the ring is full: the wait is recorded */
		}
		*wait_ticks += clock_ticks() - t0;
	}
	start_chunk(r, c, now);
	return (uint8_t *)(c + 1);
}

void ring_flush(struct sonde_session_hdr *s, struct sonde_ring *r)
{
	struct sonde_chunk *c = ring_chunk(s, r, r->cur);
	if (atomic_load_explicit(&c->state, memory_order_relaxed) == RING_FILLING && c->used)
		atomic_store_explicit(&c->state, RING_FULL, memory_order_release);
}

int ring_drain(struct sonde_session_hdr *s, uint64_t size, uint64_t max_bytes, struct sonde_ring *r, int final,
               int (*fn)(void *arg, const struct sonde_chunk *hdr, const void *data), void *arg,
               uint64_t *damaged)
{
	/* The ring header is the program's to scribble on: its geometry must lead
	 * inside the mapping (size is sonde's own, not the header's). */
	uint32_t nchunks = r->nchunks, csize = r->chunk_size;
	uint64_t data = r->data_off;
	if (nchunks < 2 || csize != RING_CHUNK_SIZE || (uint64_t)nchunks * csize > max_bytes ||
	    !sess_fits(size, data, (uint64_t)nchunks * csize, _Alignof(struct sonde_chunk)))
		return -1;
	int n = 0;
	/* Chunks fill in order from r->cur onwards; drain oldest first by seq.
	 * At most nchunks chunks per call: a writer refilling them cannot keep us. */
	while (n < (int)nchunks) {
		struct sonde_chunk *best = NULL;
		for (uint32_t i = 0; i < nchunks; i++) {
			struct sonde_chunk *c = (struct sonde_chunk *)((char *)s + data + (uint64_t)i * csize);
			uint32_t st = atomic_load_explicit(&c->state, memory_order_acquire);
			if (st == RING_FULL || (final && st == RING_FILLING && c->used)) {
				if (!best || c->seq < best->seq)
					best = c;
			}
		}
		if (!best)
			break;
		struct sonde_chunk h = *best; /* one read of the header: what was checked is what is used */
		if (h.used <= csize - sizeof h)
			fn(arg, &h, best + 1);
		else
			++*damaged; /* a length that leads out of the chunk: the chunk is lost */
		n++;
		best->used = 0;
		/* The copy is done: the writer may reuse the chunk (pairs with its acquire). */
		atomic_store_explicit(&best->state, RING_FREE, memory_order_release);
	}
	return n;
}

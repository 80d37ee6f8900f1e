/* probe_record.c — `sonde probe --record` on the agent engine, inside the
 * program: each hit of a site sonde asked for (pa_site.rec_hits, the var,
 * assert and time records, the returns of func sites) is one event in the
 * ring of its thread (common/probe_area.h, struct pa_ring), which sonde
 * drains while the program runs (src/probe/agent/agent_record.c).
 *
 * A thread claims a free ring at its first event and gives it back at its
 * exit (a thread-specific key's destructor); a thread that finds none, or a
 * full ring, drops the event and counts it: the program never waits for
 * sonde.  One writer per ring: an event written from a signal handler that
 * interrupted the same thread's writing is dropped (counted) too.
 *
 * Built with -mgeneral-regs-only, like probes.c (reached from the
 * trampolines). */
#include "rt/probe_record.h"

#include "common/clock.h"
#include "rt/rt.h"

#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RING_NONE  0u          /* rec_tls: not claimed yet */
#define RING_GONE  0xffffffffu /* the thread found none, or has ended */

static struct pa_hdr *hdr;
static struct pa_ring *rings;
static pthread_key_t ring_key;
static int keyed;
static __thread uint32_t ring1_tls __attribute__((tls_model("initial-exec"))); /* ring index + 1 */
static __thread uint32_t writing_tls __attribute__((tls_model("initial-exec")));

/* The thread ends: its ring goes back to sonde, which frees it once drained. */
static void ring_end(void *arg)
{
	uint32_t i = (uint32_t)(uintptr_t)arg - 1;
	ring1_tls = RING_GONE;
	if (rings && i < PA_REC_RINGS)
		__atomic_store_n(&rings[i].state, 2, __ATOMIC_RELEASE);
}

void pa_rec_start(struct pa_hdr *h, uint64_t size)
{
	rings = NULL;
	hdr = h;
	if (!h->rec_on || h->rec_off != pa_area_size(h->nsites) || size < h->rec_off + pa_rec_size())
		return;
	if (!keyed && pthread_key_create(&ring_key, ring_end) == 0)
		keyed = 1;
	if (!keyed)
		return;
	rings = (struct pa_ring *)((char *)h + h->rec_off);
	ring1_tls = RING_NONE; /* this thread's claim was of an earlier area */
}

int pa_ring_claim(uint32_t *state0, size_t stride, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t *st = (uint32_t *)((char *)state0 + (size_t)i * stride), free_ = 0;
		if (__atomic_load_n(st, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(st, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return (int)i;
	}
	return -1;
}

static struct pa_ring *my_ring(void)
{
	uint32_t r1 = ring1_tls;
	if (r1 && r1 <= PA_REC_RINGS)
		return &rings[r1 - 1];
	if (r1 == RING_GONE)
		return NULL;
	int i = pa_ring_claim(&rings[0].state, sizeof *rings, PA_REC_RINGS);
	if (i < 0) {
		ring1_tls = RING_GONE;
		return NULL;
	}
	struct pa_ring *r = &rings[i];
	/* sonde reset head and tail before freeing it; tid and name before the first event */
	if (prctl(PR_GET_NAME, r->comm, 0, 0, 0))
		r->comm[0] = 0;
	r->comm[sizeof r->comm - 1] = 0;
	__atomic_store_n(&r->tid, (uint32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	ring1_tls = (uint32_t)i + 1;
	pthread_setspecific(ring_key, (void *)(uintptr_t)(i + 1));
	return r;
}

/* Room for n events in this thread's ring, or NULL (counted). */
static struct pa_ring *reserve(uint32_t n, uint64_t *head)
{
	if (!rings || writing_tls) {
		if (hdr)
			__atomic_fetch_add(&hdr->rec_no_ring, n, __ATOMIC_RELAXED);
		return NULL;
	}
	struct pa_ring *r = my_ring();
	if (!r) {
		__atomic_fetch_add(&hdr->rec_no_ring, n, __ATOMIC_RELAXED);
		return NULL;
	}
	uint64_t h = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	uint64_t t = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE); /* sonde's copy of those events is done */
	if (h - t > PA_REC_EVENTS - n) {
		__atomic_fetch_add(&r->lost, n, __ATOMIC_RELAXED);
		return NULL;
	}
	*head = h;
	return r;
}

void pa_rec_put(uint32_t rec, uint32_t type, int64_t v, uint64_t t)
{
	uint64_t h;
	struct pa_ring *r = reserve(1, &h);
	if (!r)
		return;
	writing_tls = 1;
	r->ev[h & (PA_REC_EVENTS - 1)] = (struct pa_rev){ t, rec, (uint8_t)type, 0, 0, v };
	__atomic_store_n(&r->head, h + 1, __ATOMIC_RELEASE);
	writing_tls = 0;
}

void pa_rec_fail(uint32_t rec, uint32_t mask, const int64_t *saved, int nsaved, uint64_t t)
{
	uint32_t more = (uint32_t)(nsaved + 1) / 2;
	uint64_t h;
	struct pa_ring *r = reserve(1 + more, &h);
	if (!r)
		return;
	writing_tls = 1;
	r->ev[h & (PA_REC_EVENTS - 1)] = (struct pa_rev){ t, rec, PA_EV_FAIL, (uint8_t)more, 0, (int64_t)mask };
	for (uint32_t k = 0; k < more; k++) {
		int i = 2 * (int)k;
		struct pa_rev *e = &r->ev[(h + 1 + k) & (PA_REC_EVENTS - 1)];
		e->t = (uint64_t)(mask >> i & 1 ? saved[i] : 0);
		e->v = i + 1 < nsaved && (mask >> (i + 1) & 1) ? saved[i + 1] : 0;
		e->rec = rec;
		e->type = 0;
		e->n = 0;
	}
	__atomic_store_n(&r->head, h + 1 + more, __ATOMIC_RELEASE);
	writing_tls = 0;
}

/* locks_out.c — after the program has ended: the lock profiler's session data
 * (src/rt/locks.h) into REC_LOCKS records of profile.sonde.  Everything read
 * from the session is bounds-checked: the program may have died half-way
 * through an update or scribbled on the memory. */
#include <string.h>
#include <stdlib.h>

#include "record/record.h"
#include "rt/locks.h"

static void put(struct rec_writer *w, uint32_t sub, uint32_t count, const void *a, uint64_t alen)
{
	uint32_t hdr[2] = { sub, count };
	writer_put(w, REC_LOCKS, hdr, sizeof hdr, a, alen);
}

void write_locks(struct session *s, struct rec_writer *w)
{
	struct sonde_session_hdr *h = s->hdr;
	uint64_t off = atomic_load(&h->locks_off);
	if (!off || !sess_inside(s->size, off, sizeof(struct lk_session)))
		return;
	struct lk_session *S = sess_ptr(h, off);
	uint32_t nlocks = atomic_load(&S->nlocks) + 1;
	if (nlocks > LK_MAX_LOCKS)
		nlocks = LK_MAX_LOCKS;
	uint32_t nmaps = atomic_load(&S->nmaps);
	if (nmaps > LK_MAX_MAPS)
		nmaps = LK_MAX_MAPS;

	struct lkrec_summary sum;
	memset(&sum, 0, sizeof sum);
	sum.nlocks = nlocks - 1;
	sum.nmaps = nmaps;
	sum.lost_locks = atomic_load(&S->lost_locks);
	sum.lost_maps = atomic_load(&S->lost_maps);

	struct lkrec_lock *L = calloc(nlocks, sizeof *L);
	uint32_t nl = 0;
	for (uint32_t i = 1; L && i < nlocks; i++) {
		struct lk_lock *k = &S->locks[i];
		if (!k->kind || k->kind >= LK_KIND_MAX_)
			continue; /* id taken but never filled (the process died there) */
		struct lkrec_lock *r = &L[nl++];
		r->id = i;
		r->proc = k->proc;
		r->gen = k->gen;
		r->kind = k->kind;
		r->flags = atomic_load(&k->flags);
		r->addr = k->addr;
		r->site = k->site;
		r->first_tsc = k->first_tsc;
	}
	put(w, LKREC_LOCKS, nl, L, (uint64_t)nl * sizeof *L);
	free(L);

	struct lkrec_map *M = calloc(nmaps ? nmaps : 1, sizeof *M);
	uint32_t nm = 0;
	for (uint32_t i = 0; M && i < nmaps; i++) {
		struct lk_map *m = &S->maps[i];
		if (!atomic_load(&m->valid))
			continue;
		struct lkrec_map *r = &M[nm++];
		r->proc = m->proc;
		r->lo = m->lo;
		r->hi = m->hi;
		r->bias = m->bias;
		memcpy(r->path, m->path, sizeof r->path);
		r->path[sizeof r->path - 1] = 0;
	}
	put(w, LKREC_MAPS, nm, M, (uint64_t)nm * sizeof *M);
	free(M);

	uint32_t nthreads = atomic_load(&h->nthreads);
	if (nthreads > SONDE_MAX_THREADS)
		nthreads = SONDE_MAX_THREADS;
	for (uint32_t i = 0; i < nthreads; i++) {
		uint64_t toff = h->threads_off[i];
		if (!toff || !sess_inside(s->size, toff, sizeof(struct sonde_thread)))
			continue;
		struct sonde_thread *t = sess_ptr(h, toff);
		uint64_t lo = t->lock_off;
		if (!lo || !sess_inside(s->size, lo, sizeof(struct lk_thread)))
			continue;
		struct lk_thread *T = sess_ptr(h, lo);
		uint32_t n = T->nstats < T->cap ? T->nstats : T->cap;
		if (n > LK_THREAD_STATS) { /* more than the runtime ever allocates: damaged */
			atomic_fetch_add(&h->lost[SONDE_LOST_SESSION_DAMAGE], 1);
			continue;
		}
		if (!sess_inside(s->size, lo, sizeof *T + (uint64_t)n * sizeof(struct lk_stat)))
			continue;
		sum.lost_stats += T->lost_stats;
		struct lk_stat *st = malloc((n ? n : 1) * sizeof *st);
		if (!st)
			continue;
		memcpy(st, lk_thread_stats(T), (uint64_t)n * sizeof *st);
		uint32_t hdr2[2] = { i, n };
		uint32_t hdr[2] = { LKREC_STATS, n };
		/* header, thread slot + count, stats */
		uint8_t *buf = malloc(sizeof hdr2 + (uint64_t)n * sizeof *st);
		if (buf) {
			memcpy(buf, hdr2, sizeof hdr2);
			memcpy(buf + sizeof hdr2, st, (uint64_t)n * sizeof *st);
			writer_put(w, REC_LOCKS, hdr, sizeof hdr, buf, sizeof hdr2 + (uint64_t)n * sizeof *st);
			free(buf);
		}
		free(st);
	}
	put(w, LKREC_SUMMARY, 1, &sum, sizeof sum);
}

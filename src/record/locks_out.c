/* locks_out.c — after the program has ended: the lock profiler's session data
 * (src/common/lock_session.h) into REC_LOCKS records of profile.sonde
 * (common/format_locks.h, converted by record/convert.c).  Everything read
 * from the session is bounds-checked: the program may have died half-way
 * through an update or scribbled on the memory. */
#include <string.h>
#include <stdlib.h>

#include "record/convert.h"
#include "record/record.h"

static void put(struct rec_writer *w, uint32_t sub, uint32_t count, const void *a, uint64_t alen)
{
	struct lkrec_hdr hdr = { sub, count };
	writer_put(w, REC_LOCKS, &hdr, sizeof hdr, a, alen);
}

void write_locks(struct session *s, struct rec_writer *w)
{
	struct sonde_session_hdr *h = s->hdr;
	uint64_t off = atomic_load(&h->locks_off);
	if (!off || !sess_fits(s->size, off, sizeof(struct lk_session), _Alignof(struct lk_session)))
		return;
	struct lk_session *S = sess_ptr(h, off);
	uint32_t nlocks = atomic_load(&S->nlocks) + 1;
	if (nlocks > LK_MAX_LOCKS)
		nlocks = LK_MAX_LOCKS;
	uint32_t nmaps = atomic_load(&S->nmaps);
	if (nmaps > LK_MAX_MAPS)
		nmaps = LK_MAX_MAPS;


	struct lkrec_lock *L = calloc(nlocks, sizeof *L);
	uint32_t nl = 0;
	for (uint32_t i = 1; L && i < nlocks; i++) {
		struct lk_lock *k = &S->locks[i];
		if (!k->kind || k->kind >= LK_KIND_MAX_)
			continue; /* id taken but never filled (the process died there) */
		conv_lock(&L[nl++], k, i);
	}
	put(w, LKREC_LOCKS, nl, L, (uint64_t)nl * sizeof *L);
	free(L);

	struct lkrec_map *M = calloc(nmaps ? nmaps : 1, sizeof *M);
	uint32_t nm = 0;
	for (uint32_t i = 0; M && i < nmaps; i++) {
		struct lk_map *m = &S->maps[i];
		if (!atomic_load(&m->valid))
			continue;
		conv_map(&M[nm++], m);
	}
	put(w, LKREC_MAPS, nm, M, (uint64_t)nm * sizeof *M);
	free(M);

	uint64_t lost_stats = 0;
	uint32_t nthreads = sess_nthreads(h);
	for (uint32_t i = 0; i < nthreads; i++) {
		uint64_t toff = h->threads_off[i];
		if (!toff || !sess_fits(s->size, toff, sizeof(struct sonde_thread), _Alignof(struct sonde_thread)))
			continue;
		struct sonde_thread *t = sess_ptr(h, toff);
		uint64_t lo = t->lock_off;
		if (!lo || !sess_fits(s->size, lo, sizeof(struct lk_thread), _Alignof(struct lk_thread)))
			continue;
		struct lk_thread *T = sess_ptr(h, lo);
		uint32_t n = T->nstats < T->cap ? T->nstats : T->cap;
		if (n > LK_THREAD_STATS) { /* more than the runtime ever allocates: damaged */
			atomic_fetch_add(&h->lost[SONDE_LOST_SESSION_DAMAGE], 1);
			continue;
		}
		if (!sess_inside(s->size, lo, sizeof *T + (uint64_t)n * sizeof(struct lk_stat)))
			continue;
		lost_stats += T->lost_stats;
		/* thread slot and count, then the stats */
		struct lkrec_stats_hdr sh = { i, n };
		uint64_t blen = sizeof sh + (uint64_t)n * sizeof(struct lkrec_stat);
		uint8_t *buf = malloc(blen);
		if (!buf)
			continue;
		memcpy(buf, &sh, sizeof sh);
		const struct lk_stat *st = lk_thread_stats(T);
		for (uint32_t k = 0; k < n; k++) {
			struct lkrec_stat r;
			conv_stat(&r, &st[k]);
			memcpy(buf + sizeof sh + (uint64_t)k * sizeof r, &r, sizeof r);
		}
		put(w, LKREC_STATS, n, buf, blen);
		free(buf);
	}
	struct lkrec_summary sum;
	conv_summary(&sum, S, nlocks - 1, nmaps, lost_stats);
	put(w, LKREC_SUMMARY, 1, &sum, sizeof sum);
}

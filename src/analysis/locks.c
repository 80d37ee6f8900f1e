/* locks.c (analysis) — the lock profile of a recording: REC_LOCKS records
 * turned into per-lock statistics with names, and the lock event stream
 * decoded and checked against them (both paths must give the same counts). */
#include "analysis/locks.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "data/events.h"
#include "sym/cache.h"

static const char *const kind_names[LK_KIND_MAX_] = {
	[LK_MUTEX] = "mutex", [LK_RWLOCK] = "rwlock", [LK_SPIN] = "spinlock", [LK_COND] = "cond",
	[LK_SEM] = "semaphore", [LK_MTX] = "mtx", [LK_CND] = "cnd",
};

const char *lka_kind_name(uint32_t kind)
{
	return kind < LK_KIND_MAX_ && kind_names[kind] ? kind_names[kind] : "unknown";
}

uint64_t lka_waits(uint32_t kind, const struct lkrec_stat *s)
{
	if (kind == LK_COND || kind == LK_CND)
		return s->acquisitions;
	return rd_sat_add(s->contended, s->timeouts);
}

double lka_ns(const struct lka *a, uint64_t ticks)
{
	return rd_ns(a->r, ticks);
}

/* ---- loading the records ---- */

struct load_ctx {
	struct lka *a;
	struct lkrec_lock *recs;
	uint32_t nrecs;
	struct lkrec_map *maps;
	uint32_t nmaps;
	struct { uint32_t thread; struct lkrec_stat st; } *stats;
	uint64_t nstats;
	uint64_t maxt;            /* rd_max_ticks: no time of a sound recording is longer */
	int bad;
};

/* A thread's aggregates for one lock are sound: its times are within what a
 * recording can hold (a longer one would overflow the sums and the
 * conversions to nanoseconds). */
static int stat_ok(const struct lkrec_stat *s, uint64_t maxt)
{
	if (s->wait_ticks > maxt || s->max_wait_ticks > maxt || s->hold_ticks > maxt || s->max_hold_ticks > maxt)
		return 0;
	for (uint32_t k = 0; k < LKREC_SITES; k++)
		if (s->sites[k].wait_ticks > maxt)
			return 0;
	return 1;
}

static int on_rec(void *arg, uint32_t type, const uint8_t *p, uint64_t len)
{
	struct load_ctx *c = arg;
	if (type != REC_LOCKS)
		return 0;
	struct lkrec_hdr hdr;
	if (len < sizeof hdr)
		return RD_REC_DAMAGED;
	memcpy(&hdr, p, sizeof hdr);
	p += sizeof hdr;
	len -= sizeof hdr;
	switch (hdr.subtype) {
	case LKREC_SUMMARY:
		if (len != sizeof c->a->sum)
			return RD_REC_DAMAGED;
		memcpy(&c->a->sum, p, len);
		return 0;
	case LKREC_LOCKS: {
		if (len != (uint64_t)hdr.count * sizeof *c->recs || c->recs || hdr.count >= LKREC_MAX_LOCKS)
			return RD_REC_DAMAGED;
		c->recs = malloc(len + 1);
		uint8_t *seen = calloc(LKREC_MAX_LOCKS / 8, 1);
		if (!c->recs || !seen) {
			free(seen);
			return RD_REC_NOMEM;
		}
		memcpy(c->recs, p, len);
		c->nrecs = hdr.count;
		/* ids are 1 .. LKREC_MAX_LOCKS - 1, each described once */
		int rc = 0;
		for (uint32_t i = 0; i < c->nrecs && !rc; i++) {
			uint32_t id = c->recs[i].id;
			if (id == 0 || id >= LKREC_MAX_LOCKS || (seen[id / 8] & (1u << (id % 8))))
				rc = RD_REC_DAMAGED;
			else
				seen[id / 8] |= (uint8_t)(1u << (id % 8));
		}
		free(seen);
		return rc;
	}
	case LKREC_MAPS:
		if (len != (uint64_t)hdr.count * sizeof *c->maps || c->maps || hdr.count > LKREC_MAX_MAPS)
			return RD_REC_DAMAGED;
		c->maps = malloc(len + 1);
		if (!c->maps)
			return RD_REC_NOMEM;
		memcpy(c->maps, p, len);
		c->nmaps = hdr.count;
		for (uint32_t i = 0; i < c->nmaps; i++)
			c->maps[i].path[LKREC_MAP_PATH - 1] = 0;
		return 0;
	case LKREC_STATS: {
		struct lkrec_stats_hdr th;
		if (len < sizeof th)
			return RD_REC_DAMAGED;
		memcpy(&th, p, sizeof th);
		if (len - sizeof th != (uint64_t)th.count * sizeof(struct lkrec_stat) || th.count != hdr.count ||
		    th.count >= LKREC_MAX_LOCKS)
			return RD_REC_DAMAGED;
		void *ns = realloc(c->stats, (c->nstats + th.count + 1) * sizeof *c->stats);
		if (!ns)
			return RD_REC_NOMEM;
		c->stats = ns;
		for (uint32_t i = 0; i < th.count; i++) {
			c->stats[c->nstats].thread = th.thread;
			memcpy(&c->stats[c->nstats].st, p + sizeof th + (uint64_t)i * sizeof(struct lkrec_stat),
			       sizeof(struct lkrec_stat));
			if (!stat_ok(&c->stats[c->nstats].st, c->maxt))
				return RD_REC_DAMAGED;
			c->nstats++;
		}
		return 0;
	}
	default:
		return 0; /* a newer subtype: ignored */
	}
}

/* ---- naming ---- */

static const struct lkrec_map *map_of(const struct load_ctx *c, uint32_t proc, uint64_t addr)
{
	for (uint32_t i = 0; i < c->nmaps; i++)
		if (c->maps[i].proc == proc && addr >= c->maps[i].lo && addr < c->maps[i].hi)
			return &c->maps[i];
	return NULL;
}

/* "func (file.c:42)" for a return address, or NULL. */
static char *site_name(const struct load_ctx *c, struct sym_cache *sc, uint32_t proc, uint64_t site)
{
	if (!site)
		return NULL;
	const struct lkrec_map *m = map_of(c, proc, site);
	char buf[1024];
	if (!m) {
		snprintf(buf, sizeof buf, "0x%" PRIx64, site);
		return strdup(buf);
	}
	struct sym_module *sm = sym_cache_get(sc, m->path, NULL);
	uint64_t va = site - 1 - m->bias; /* the call instruction, not the one after it */
	const char *base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	struct sym_info si;
	if (!sm || sym_lookup(sm, va, &si) != 0) {
		snprintf(buf, sizeof buf, "%s+0x%" PRIx64, base, va + 1);
		return strdup(buf);
	}
	const char *file = NULL;
	int line = 0;
	if (sym_addr_line(sm, va, &file, &line) == 0 && file && line) {
		const char *fb = strrchr(file, '/');
		snprintf(buf, sizeof buf, "%s (%s:%d)", si.name, fb ? fb + 1 : file, line);
	} else {
		snprintf(buf, sizeof buf, "%s (%s)", si.name, base);
	}
	return strdup(buf);
}

static void name_lock(const struct load_ctx *c, struct sym_cache *sc, struct lka_lock *L)
{
	char buf[1024];
	const struct lkrec_map *m = map_of(c, L->rec.proc, L->rec.addr);
	L->init_site = site_name(c, sc, L->rec.proc, L->rec.site);
	if (m) {
		struct sym_module *sm = sym_cache_get(sc, m->path, NULL);
		if (sm && sym_data_name(sm, L->rec.addr - m->bias, buf, sizeof buf) == 0) {
			L->name = strdup(buf);
			L->named_by_symbol = 1;
			return;
		}
	}
	if (L->init_site) {
		L->name = strdup(L->init_site);
		return;
	}
	snprintf(buf, sizeof buf, "0x%" PRIx64, L->rec.addr);
	L->name = strdup(buf);
}

/* ---- merging ---- */

/* Sums saturate: counts at UINT64_MAX (UINT32_MAX for histogram buckets),
 * times at maxt (rd_max_ticks: their nanoseconds stay exact). */
static uint64_t tsum(uint64_t a, uint64_t b, uint64_t maxt)
{
	uint64_t s = rd_sat_add(a, b);
	return s > maxt ? maxt : s;
}

static uint32_t hsum(uint32_t a, uint32_t b)
{
	return a + b < a ? UINT32_MAX : a + b;
}

static void stat_add(struct lkrec_stat *d, const struct lkrec_stat *s, uint64_t maxt)
{
	d->acquisitions = rd_sat_add(d->acquisitions, s->acquisitions);
	d->read_acquisitions = rd_sat_add(d->read_acquisitions, s->read_acquisitions);
	d->write_acquisitions = rd_sat_add(d->write_acquisitions, s->write_acquisitions);
	d->contended = rd_sat_add(d->contended, s->contended);
	d->trylock_failures = rd_sat_add(d->trylock_failures, s->trylock_failures);
	d->timeouts = rd_sat_add(d->timeouts, s->timeouts);
	d->errors = rd_sat_add(d->errors, s->errors);
	d->owner_changes = rd_sat_add(d->owner_changes, s->owner_changes);
	d->releases = rd_sat_add(d->releases, s->releases);
	d->unmatched_releases = rd_sat_add(d->unmatched_releases, s->unmatched_releases);
	d->cross_thread_releases = rd_sat_add(d->cross_thread_releases, s->cross_thread_releases);
	d->cond_reacquisitions = rd_sat_add(d->cond_reacquisitions, s->cond_reacquisitions);
	d->wait_ticks = tsum(d->wait_ticks, s->wait_ticks, maxt);
	d->hold_ticks = tsum(d->hold_ticks, s->hold_ticks, maxt);
	d->holds = rd_sat_add(d->holds, s->holds);
	if (s->max_wait_ticks > d->max_wait_ticks)
		d->max_wait_ticks = s->max_wait_ticks;
	if (s->max_hold_ticks > d->max_hold_ticks)
		d->max_hold_ticks = s->max_hold_ticks;
	if (s->max_waiters > d->max_waiters)
		d->max_waiters = s->max_waiters;
	for (uint32_t i = 0; i < LKREC_HIST; i++) {
		d->wait_hist[i] = hsum(d->wait_hist[i], s->wait_hist[i]);
		d->hold_hist[i] = hsum(d->hold_hist[i], s->hold_hist[i]);
	}
}

static int cmp_site(const void *x, const void *y)
{
	const struct lka_site *a = x, *b = y;
	return a->wait_ticks < b->wait_ticks ? 1 : a->wait_ticks > b->wait_ticks ? -1 : 0;
}

static void merge_sites(const struct load_ctx *c, struct sym_cache *sc, struct lka_lock *L)
{
	for (int t = 0; t < L->nthreads; t++) {
		const struct lkrec_stat *st = &L->threads[t].st;
		for (uint32_t k = 0; k < LKREC_SITES; k++) {
			if (!st->sites[k].count)
				continue;
			char *n = site_name(c, sc, L->rec.proc, st->sites[k].site);
			if (!n)
				continue;
			int j;
			for (j = 0; j < L->nsites; j++)
				if (!strcmp(L->sites[j].name, n))
					break;
			if (j == L->nsites) {
				struct lka_site *ns = realloc(L->sites, sizeof *L->sites * (L->nsites + 1));
				if (!ns) {
					free(n);
					continue;
				}
				L->sites = ns;
				L->sites[j].name = n;
				L->sites[j].count = 0;
				L->sites[j].wait_ticks = 0;
				L->nsites++;
			} else {
				free(n);
			}
			L->sites[j].count = rd_sat_add(L->sites[j].count, st->sites[k].count);
			L->sites[j].wait_ticks = tsum(L->sites[j].wait_ticks, st->sites[k].wait_ticks, c->maxt);
		}
	}
	if (L->nsites > 1)
		qsort(L->sites, L->nsites, sizeof *L->sites, cmp_site);
}

static const struct rd_thread *thread_of(const struct recording *r, uint32_t slot)
{
	for (int i = 0; i < r->nthreads; i++)
		if (r->threads[i].r.index == slot)
			return &r->threads[i];
	return NULL;
}

/* ---- events ---- */

/* Statistics rebuilt from events, per (thread, lock): the same rules as the wrappers. */
struct ev_ctx {
	struct lka *a;
	struct lka_lock **by_id;  /* lock id -> lock */
	uint32_t nids;
	struct ev_stat { uint32_t thread, lock; struct lkrec_stat st; } *st;
	uint64_t nst, cap;
	uint64_t *index;          /* open addressing: (thread, lock) -> st index + 1 */
	uint64_t icap;
};

static struct lkrec_stat *ev_stat(struct ev_ctx *c, uint32_t thread, uint32_t lock)
{
	if (c->nst * 2 >= c->icap) {
		uint64_t ncap = c->icap ? c->icap * 2 : 1024;
		uint64_t *ni = calloc(ncap, sizeof *ni);
		if (!ni)
			return NULL;
		for (uint64_t i = 0; i < c->nst; i++) {
			uint64_t h = ((uint64_t)c->st[i].thread * 0x9E3779B97F4A7C15ull ^ c->st[i].lock) & (ncap - 1);
			while (ni[h])
				h = (h + 1) & (ncap - 1);
			ni[h] = i + 1;
		}
		free(c->index);
		c->index = ni;
		c->icap = ncap;
	}
	uint64_t h = ((uint64_t)thread * 0x9E3779B97F4A7C15ull ^ lock) & (c->icap - 1);
	while (c->index[h]) {
		struct ev_stat *s = &c->st[c->index[h] - 1];
		if (s->thread == thread && s->lock == lock)
			return &s->st;
		h = (h + 1) & (c->icap - 1);
	}
	if (c->nst == c->cap) {
		uint64_t cap = c->cap ? c->cap * 2 : 256;
		struct ev_stat *ns = realloc(c->st, cap * sizeof *c->st);
		if (!ns)
			return NULL;
		c->st = ns;
		c->cap = cap;
	}
	struct ev_stat *s = &c->st[c->nst];
	memset(s, 0, sizeof *s);
	s->thread = thread;
	s->lock = lock;
	c->index[h] = ++c->nst;
	return &s->st;
}

static void on_event(void *arg, const struct rd_lock_event *e)
{
	struct ev_ctx *c = arg;
	struct lka_lock *L = e->lock < c->nids ? c->by_id[e->lock] : NULL;
	if (!L) {
		c->a->ev.unknown_locks++;
		return;
	}
	struct lkrec_stat *s = ev_stat(c, c->a->r->threads[e->thread].r.index, e->lock);
	if (!s)
		return; /* out of memory: the comparison counts it as a mismatch */
	uint32_t kind = L->rec.kind, op = e->op & LK_EV_OP_MASK;
	int holdable = kind != LK_SEM && kind != LK_COND && kind != LK_CND;
	switch (op) {
	case LK_EV_ACQ:
	case LK_EV_ACQ_WAIT:
		if (op == LK_EV_ACQ && (e->op & LK_EVF_FORKED))
			break; /* a hold carried into a fork child: not an acquisition */
		s->acquisitions++;
		if (kind == LK_RWLOCK) {
			if (e->op & LK_EVF_READ)
				s->read_acquisitions++;
			else
				s->write_acquisitions++;
		}
		if (e->op & LK_EVF_REACQ)
			s->cond_reacquisitions++;
		if (op == LK_EV_ACQ_WAIT) {
			s->contended++;
			s->wait_ticks += e->aux;
			if (e->aux > s->max_wait_ticks)
				s->max_wait_ticks = e->aux;
		}
		break;
	case LK_EV_REL:
		s->releases++;
		if (e->op & LK_EVF_UNMATCHED)
			s->unmatched_releases++;
		else if (e->op & LK_EVF_CROSS)
			s->cross_thread_releases++;
		if (holdable && !(e->op & (LK_EVF_UNMATCHED | LK_EVF_NESTED))) {
			s->hold_ticks += e->aux; /* the hold's length travels with its release */
			s->holds++;
			if (e->aux > s->max_hold_ticks)
				s->max_hold_ticks = e->aux;
		}
		break;
	case LK_EV_TRYFAIL:
		s->trylock_failures++;
		break;
	case LK_EV_TIMEOUT:
		s->timeouts++;
		s->wait_ticks += e->aux;
		if (e->aux > s->max_wait_ticks)
			s->max_wait_ticks = e->aux;
		break;
	case LK_EV_COND:
		s->acquisitions++;
		s->wait_ticks += e->aux;
		if (e->aux > s->max_wait_ticks)
			s->max_wait_ticks = e->aux;
		if (e->op & LK_EVF_TIMEOUT)
			s->timeouts++;
		break;
	case LK_EV_ERROR:
		s->errors++;
		break;
	}
}

static void on_loss(void *arg, const struct rd_loss *l)
{
	struct ev_ctx *c = arg;
	if (l->cause == RDL_DAMAGED || l->cause == RDL_UNKNOWN_THREAD)
		c->a->ev.damaged++;
}

static int same_counts(const struct lkrec_stat *x, const struct lkrec_stat *y)
{
	return x->acquisitions == y->acquisitions && x->read_acquisitions == y->read_acquisitions &&
	       x->write_acquisitions == y->write_acquisitions && x->contended == y->contended &&
	       x->trylock_failures == y->trylock_failures && x->timeouts == y->timeouts &&
	       x->releases == y->releases && x->unmatched_releases == y->unmatched_releases &&
	       x->cross_thread_releases == y->cross_thread_releases &&
	       x->cond_reacquisitions == y->cond_reacquisitions && x->wait_ticks == y->wait_ticks &&
	       x->max_wait_ticks == y->max_wait_ticks && x->hold_ticks == y->hold_ticks &&
	       x->max_hold_ticks == y->max_hold_ticks;
}

static void check_events(struct lka *a)
{
	struct ev_ctx c;
	memset(&c, 0, sizeof c);
	c.a = a;
	for (int i = 0; i < a->nlocks; i++) /* ids < LKREC_MAX_LOCKS (checked when loaded) */
		if (a->locks[i].rec.id >= c.nids)
			c.nids = a->locks[i].rec.id + 1;
	c.by_id = calloc(c.nids + 1, sizeof *c.by_id);
	if (!c.by_id) {
		snprintf(a->ev.error, sizeof a->ev.error, "out of memory");
		return;
	}
	for (int i = 0; i < a->nlocks; i++)
		c.by_id[a->locks[i].rec.id] = &a->locks[i];
	char err[512];
	const struct rd_event_ops ops = { .lock = on_event, .loss = on_loss };
	struct tr_stats st;
	int rc = rd_each_event(a->r, NULL, &ops, &c, &st, err, sizeof err);
	a->ev.records = st.records;
	a->ev.lock_records = st.lock_events;
	a->ev.chunks = st.chunks;
	a->ev.sequence_gaps = st.gaps;
	a->ev.chunk_lost = st.lost;
	if (rc != 0)
		snprintf(a->ev.error, sizeof a->ev.error, "%.250s", err);
	else if (a->ev.damaged)
		snprintf(a->ev.error, sizeof a->ev.error,
		         "%.120s/%s: %llu damaged event chunks (each read up to the damage)", a->r->dir,
		         SONDE_FILE_EVENTS, (unsigned long long)a->ev.damaged);
	/* Every (thread, lock) of either side must agree. */
	for (int i = 0; i < a->nlocks; i++) {
		struct lka_lock *L = &a->locks[i];
		for (int t = 0; t < L->nthreads; t++) {
			struct lkrec_stat *es = ev_stat(&c, L->threads[t].thread, L->rec.id);
			a->ev.compared++;
			if (!es || !same_counts(es, &L->threads[t].st))
				a->ev.mismatched++;
			if (es)
				es->lock = UINT32_MAX; /* matched */
		}
	}
	for (uint64_t i = 0; i < c.nst; i++)
		if (c.st[i].st.lock != UINT32_MAX && (c.st[i].st.acquisitions || c.st[i].st.releases)) {
			a->ev.compared++;
			a->ev.mismatched++;
		}
	free(c.by_id);
	free(c.st);
	free(c.index);
}

int lka_load(struct recording *r, struct lka *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof *a);
	a->r = r;
	struct load_ctx c;
	memset(&c, 0, sizeof c);
	c.a = a;
	c.maxt = rd_max_ticks(r);
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", r->dir, SONDE_FILE_PROFILE);
	if (rd_each_record(path, SONDE_KIND_PROFILE, on_rec, &c, err, errlen) != 0) {
		free(c.recs);
		free(c.maps);
		free(c.stats);
		return -1;
	}
	for (int i = 0; i < r->nthreads; i++) {
		a->ring_events_lost = rd_sat_add(a->ring_events_lost, r->threads[i].r.lost[REC_LOST_RING_EVENTS]);
		a->reentry_lost = rd_sat_add(a->reentry_lost, r->threads[i].r.lost[REC_LOST_REENTRY]);
	}
	uint32_t maxid = 0; /* < LKREC_MAX_LOCKS: on_rec checked every id */
	for (uint32_t i = 0; i < c.nrecs; i++)
		if (c.recs[i].id > maxid)
			maxid = c.recs[i].id;
	int32_t *slot_of = malloc(sizeof *slot_of * (maxid + 1));
	a->locks = calloc(c.nrecs + 1, sizeof *a->locks);
	if (!slot_of || !a->locks) {
		free(slot_of);
		free(c.recs);
		free(c.maps);
		free(c.stats);
		lka_free(a);
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	memset(slot_of, 0xff, sizeof *slot_of * (maxid + 1));
	/* Locks that someone used (stats exist) are reported; the others were only initialised. */
	for (uint64_t i = 0; i < c.nstats; i++) {
		uint32_t id = c.stats[i].st.lock;
		if (id > maxid)
			continue;
		if (slot_of[id] < 0) {
			for (uint32_t k = 0; k < c.nrecs; k++)
				if (c.recs[k].id == id) {
					slot_of[id] = a->nlocks;
					struct lka_lock *L = &a->locks[a->nlocks++];
					L->rec = c.recs[k];
					L->kind = lka_kind_name(L->rec.kind);
					const struct rec_process *p = rd_proc(r, L->rec.proc);
					L->pid = p ? p->pid : 0;
					break;
				}
			if (slot_of[id] < 0)
				continue;
		}
		struct lka_lock *L = &a->locks[slot_of[id]];
		struct lka_thread *nt = realloc(L->threads, sizeof *L->threads * (L->nthreads + 1));
		if (!nt)
			continue;
		L->threads = nt;
		struct lka_thread *T = &L->threads[L->nthreads++];
		T->thread = c.stats[i].thread;
		const struct rd_thread *rt = thread_of(r, T->thread);
		T->tid = rt ? rt->r.tid : 0;
		T->st = c.stats[i].st;
		stat_add(&L->tot, &T->st, c.maxt);
		a->unmatched_releases = rd_sat_add(a->unmatched_releases, T->st.unmatched_releases);
	}
	struct sym_cache *sc = sym_cache_new();   /* NULL: names stay addresses */
	for (int i = 0; i < a->nlocks; i++) {
		name_lock(&c, sc, &a->locks[i]);
		merge_sites(&c, sc, &a->locks[i]);
		a->locks[i].members = 1;
	}
	a->nlocks_all = a->nlocks;
	free(slot_of);
	sym_cache_free(sc);
	free(c.recs);
	free(c.maps);
	free(c.stats);
	if ((r->mode & REC_MODE_LOCK_EVENTS) && r->has_events) {
		a->ev.present = 1;
		check_events(a);
	}
	return 0;
}

static int same_group(const struct lka_lock *x, const struct lka_lock *y)
{
	return !x->named_by_symbol && !y->named_by_symbol && x->init_site && y->init_site && x->pid == y->pid &&
	       x->rec.kind == y->rec.kind && !strcmp(x->init_site, y->init_site);
}

/* Fold lock y into group g (g's arrays grow; y's are freed). */
static int fold_into(struct lka_lock *g, struct lka_lock *y, uint64_t maxt)
{
	stat_add(&g->tot, &y->tot, maxt);
	g->members += y->members;
	for (int t = 0; t < y->nthreads; t++) {
		int k;
		for (k = 0; k < g->nthreads && g->threads[k].tid != y->threads[t].tid; k++)
			;
		if (k == g->nthreads) {
			struct lka_thread *v = realloc(g->threads, sizeof *v * (size_t)(g->nthreads + 1));
			if (!v)
				return -1;
			g->threads = v;
			v[k] = y->threads[t];
			g->nthreads++;
		} else {
			stat_add(&g->threads[k].st, &y->threads[t].st, maxt);
		}
	}
	for (int i = 0; i < y->nsites; i++) {
		int k;
		for (k = 0; k < g->nsites && strcmp(g->sites[k].name, y->sites[i].name); k++)
			;
		if (k == g->nsites) {
			struct lka_site *v = realloc(g->sites, sizeof *v * (size_t)(g->nsites + 1));
			if (!v)
				return -1;
			g->sites = v;
			v[k] = y->sites[i];
			y->sites[i].name = NULL; /* moved */
			g->nsites++;
		} else {
			g->sites[k].count = rd_sat_add(g->sites[k].count, y->sites[i].count);
			g->sites[k].wait_ticks = tsum(g->sites[k].wait_ticks, y->sites[i].wait_ticks, maxt);
		}
	}
	if (g->nsites > 1)
		qsort(g->sites, g->nsites, sizeof *g->sites, cmp_site);
	return 0;
}

static void lock_free(struct lka_lock *L)
{
	free(L->name);
	free(L->init_site);
	free(L->threads);
	for (int k = 0; k < L->nsites; k++)
		free(L->sites[k].name);
	free(L->sites);
}

int lka_group(struct lka *a)
{
	uint64_t maxt = rd_max_ticks(a->r);
	int n = 0;
	for (int i = 0; i < a->nlocks; i++) {
		struct lka_lock *y = &a->locks[i];
		int g;
		for (g = 0; g < n && !same_group(&a->locks[g], y); g++)
			;
		if (g < n) {
			if (fold_into(&a->locks[g], y, maxt))
				return -1;
			lock_free(y);
		} else {
			a->locks[n++] = *y;
		}
	}
	a->nlocks = n;
	return 0;
}

void lka_free(struct lka *a)
{
	for (int i = 0; i < a->nlocks; i++)
		lock_free(&a->locks[i]);
	free(a->locks);
	memset(a, 0, sizeof *a);
}

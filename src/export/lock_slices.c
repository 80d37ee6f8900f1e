/* lock_slices.c — lock waits and holds as timeline slices (see lock_slices.h). */
#include "export/lock_slices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/locks.h"

struct lks_name {
	char *hold, *wait;  /* "hot_lock", "wait hot_lock" */
	const char *kind;
	int holdable;       /* mutex, rwlock, spinlock, C11 mutex */
};

struct lks_open {         /* a hold this thread started and has not released */
	uint32_t lock;        /* index into names */
	uint32_t flags;
	uint64_t start;
	uint64_t cut;         /* 0, or the last time known before a loss of this thread's events
	                       * since it began: its release may have been among them */
};

struct lks_iv { uint64_t s, e; };

struct lks_lane {
	int used;
	struct lks_iv *iv;    /* slices placed here that a later one could still cross */
	uint32_t n, cap;
};

struct lks_thread {
	struct lks_open *open;
	uint32_t nopen, capopen;
	uint64_t last;        /* time of this thread's last lock event */
	struct lks_lane lanes[LKS_MAX_LANES];
};

struct lks_pending {      /* released by another thread before its taker's events were read */
	uint32_t lock;
	uint64_t start, end;
};

struct lks {
	const struct recording *r;
	const struct tr_filter *f;
	const struct lks_ops *ops;
	void *arg;
	struct lks_name *names;
	uint32_t nnames, capnames;
	uint32_t *by_id;      /* lock id -> names index + 1 (LKREC_MAX_LOCKS entries) */
	struct lks_thread *th;
	struct lks_pending *pend;
	uint32_t npend, cappend;
	struct lks_stats st;
};

/* Open holds per thread and releases waiting for their taker's events: a
 * sound recording has a handful; the bounds keep a damaged one linear (each
 * event looks through them). */
#define LKS_MAX_OPEN    4096u
#define LKS_MAX_PENDING 4096u

/* p with room for need elements (*cap updated), or NULL (p and *cap
 * unchanged) when out of memory. */
static void *grow(void *p, uint32_t *cap, uint32_t need, size_t size)
{
	if (need <= *cap)
		return p;
	uint32_t c = *cap ? *cap : 8;
	while (c < need && c < UINT32_MAX / 2)
		c *= 2;
	void *q = c >= need ? realloc(p, (size_t)c * size) : NULL;
	if (q)
		*cap = c;
	return q;
}

/* The index of a new name, UINT32_MAX when out of memory. */
static uint32_t add_name(struct lks *l, const char *name, const char *kind, int holdable)
{
	struct lks_name *names = grow(l->names, &l->capnames, l->nnames + 1, sizeof *l->names);
	if (!names)
		return UINT32_MAX;
	l->names = names;
	struct lks_name *n = &l->names[l->nnames];
	n->hold = strdup(name);
	size_t len = strlen(name) + 6;
	n->wait = malloc(len);
	if (!n->hold || !n->wait) {
		free(n->hold);
		free(n->wait);
		return UINT32_MAX;
	}
	snprintf(n->wait, len, "wait %s", name);
	n->kind = kind;
	n->holdable = holdable;
	return l->nnames++;
}

static int kind_holdable(uint32_t kind)
{
	return kind != LK_SEM && kind != LK_COND && kind != LK_CND;
}

struct lks *lks_open(const struct recording *r, const struct tr_filter *f, const struct lks_ops *ops, void *arg)
{
	if (!(r->mode & REC_MODE_LOCK_EVENTS) || !r->has_events)
		return NULL;
	/* lka_load() would also decode the whole events file to check it against
	 * the aggregates: a copy without the events bit loads names only. */
	struct recording copy = *r;
	copy.mode &= ~(uint32_t)REC_MODE_LOCK_EVENTS;
	struct lka a;
	char err[256];
	if (lka_load(&copy, &a, err, sizeof err) != 0)
		return NULL;
	struct lks *l = calloc(1, sizeof *l);
	if (l) {
		l->by_id = calloc(LKREC_MAX_LOCKS, sizeof *l->by_id);
		l->th = calloc(r->nthreads ? (size_t)r->nthreads : 1, sizeof *l->th);
	}
	if (!l || !l->by_id || !l->th) {
		if (l) {
			free(l->by_id);
			free(l->th);
			free(l);
		}
		lka_free(&a);
		return NULL;
	}
	l->r = r;
	l->f = f;
	l->ops = ops;
	l->arg = arg;
	for (int i = 0; i < a.nlocks; i++) {
		const struct lka_lock *L = &a.locks[i];
		if (L->rec.id >= LKREC_MAX_LOCKS || l->by_id[L->rec.id])
			continue;
		uint32_t k = add_name(l, L->name, L->kind, kind_holdable(L->rec.kind));
		if (k != UINT32_MAX)
			l->by_id[L->rec.id] = k + 1;
	}
	lka_free(&a);
	return l;
}

/* The name index of lock id (< LKREC_MAX_LOCKS), UINT32_MAX when out of memory. */
static uint32_t name_of(struct lks *l, uint32_t id)
{
	if (!l->by_id[id]) { /* a lock the records do not describe (damaged or truncated recording) */
		char buf[32];
		snprintf(buf, sizeof buf, "lock #%u", id);
		uint32_t k = add_name(l, buf, "unknown", 1);
		if (k == UINT32_MAX)
			return k;
		l->by_id[id] = k + 1;
	}
	return l->by_id[id] - 1;
}

/* Do [s, e] and [s2, e2] fail to nest?  Partial overlap, or a common start
 * with different ends (which one is the parent would depend on the viewer's
 * tie order).  Common ends and touching intervals are fine. */
static int crosses(uint64_t s, uint64_t e, uint64_t s2, uint64_t e2)
{
	if (s < s2)
		return s2 < e && e < e2;
	if (s2 < s)
		return s < e2 && e2 < e;
	return e != e2 && s < e && s2 < e2;
}

/* The earliest time a later slice of this thread can start: its open holds'
 * starts and its last event (a wait starts inside the lock call that follows). */
static uint64_t watermark(const struct lks_thread *t)
{
	uint64_t w = t->last;
	for (uint32_t i = 0; i < t->nopen; i++)
		if (t->open[i].start < w)
			w = t->open[i].start;
	return w;
}

static uint32_t place(struct lks *l, uint32_t thread, uint64_t s, uint64_t e)
{
	struct lks_thread *t = &l->th[thread];
	uint32_t lane = 0;
	for (;; lane++) {
		struct lks_lane *ln = &t->lanes[lane];
		int bad = 0;
		for (uint32_t i = 0; i < ln->n && !bad; i++)
			bad = crosses(s, e, ln->iv[i].s, ln->iv[i].e);
		if (!bad)
			break;
		if (lane == LKS_MAX_LANES - 1) {
			l->st.misnested++;
			break;
		}
	}
	struct lks_lane *ln = &t->lanes[lane];
	if (ln->n >= 32) { /* forget what no later slice can cross */
		uint64_t w = watermark(t);
		uint32_t k = 0;
		for (uint32_t i = 0; i < ln->n; i++)
			if (ln->iv[i].e > w)
				ln->iv[k++] = ln->iv[i];
		ln->n = k;
	}
	struct lks_iv *iv = grow(ln->iv, &ln->cap, ln->n + 1, sizeof *ln->iv);
	if (iv) {
		ln->iv = iv;
		ln->iv[ln->n++] = (struct lks_iv){ s, e };
	}
	if (!ln->used) {
		ln->used = 1;
		if (l->ops->lane)
			l->ops->lane(l->arg, thread, lane);
	}
	return lane;
}

static void emit(struct lks *l, uint32_t thread, int what, uint32_t name, uint32_t flags, uint64_t s, uint64_t e)
{
	if (e < s)
		s = e;
	const struct tr_filter *f = l->f;
	if (f->has_range && (e < f->from || s > f->to))
		return;
	if (what == LKS_WAIT)
		l->st.waits++;
	else
		l->st.holds++;
	if (flags & LKS_AT_END)
		l->st.closed_at_end++;
	if (flags & LKS_LOST)
		l->st.closed_at_loss++;
	const struct lks_name *n = &l->names[name];
	struct lks_slice sl = {
		thread, place(l, thread, s, e), what, 2 * name + (uint32_t)what,
		what == LKS_WAIT ? n->wait : n->hold, n->hold, n->kind, flags, s, e,
	};
	l->ops->slice(l->arg, &sl);
}

static struct lks_open *find_open(struct lks_thread *t, uint32_t name, int exclusive_only)
{
	for (uint32_t i = t->nopen; i-- > 0;)
		if (t->open[i].lock == name && !(exclusive_only && (t->open[i].flags & LKS_READ)))
			return &t->open[i];
	return NULL;
}

static void close_open(struct lks *l, uint32_t thread, struct lks_open *o, uint64_t end, uint32_t flags)
{
	struct lks_thread *t = &l->th[thread];
	struct lks_open h = *o;
	*o = t->open[--t->nopen];
	emit(l, thread, LKS_HOLD, h.lock, h.flags | flags, h.start, end);
}

static void acquired(struct lks *l, uint32_t thread, uint32_t name, uint32_t flags, uint64_t time)
{
	struct lks_thread *t = &l->th[thread];
	struct lks_open *o = find_open(t, name, 0);
	if (o) /* taken again without a release in between (records lost): end the old hold */
		close_open(l, thread, o, o->cut ? o->cut : time, o->cut ? LKS_LOST : 0);
	/* Released by another thread whose events were read first? */
	if (!(flags & LKS_READ))
		for (uint32_t i = 0; i < l->npend; i++)
			if (l->pend[i].lock == name && l->pend[i].start == time) {
				uint64_t end = l->pend[i].end;
				l->pend[i] = l->pend[--l->npend];
				emit(l, thread, LKS_HOLD, name, flags | LKS_CROSS, time, end);
				return;
			}
	struct lks_open *open = t->nopen < LKS_MAX_OPEN ? grow(t->open, &t->capopen, t->nopen + 1, sizeof *t->open) : NULL;
	if (!open) { /* not followed: its release still draws it, from the hold time it carries */
		l->st.bad++;
		return;
	}
	t->open = open;
	t->open[t->nopen++] = (struct lks_open){ name, flags, time, 0 };
}

static void released(struct lks *l, uint32_t thread, uint32_t name, uint32_t op, uint64_t time, uint64_t held)
{
	struct lks_thread *t = &l->th[thread];
	uint64_t start = time >= held ? time - held : 0;
	if (op & LK_EVF_CROSS) {
		/* The hold belongs to the thread that took it: close it there. */
		for (int k = 0; k < l->r->nthreads; k++) {
			if ((uint32_t)k == thread)
				continue;
			struct lks_open *o = find_open(&l->th[k], name, 1);
			if (o && o->start == start) {
				close_open(l, (uint32_t)k, o, time, LKS_CROSS);
				return;
			}
		}
		struct lks_pending *pend =
		        l->npend < LKS_MAX_PENDING ? grow(l->pend, &l->cappend, l->npend + 1, sizeof *l->pend) : NULL;
		if (pend) {
			l->pend = pend;
			l->pend[l->npend++] = (struct lks_pending){ name, start, time };
		} else { /* too many waiting: drawn on the releasing thread, from the hold time it carries */
			l->st.bad++;
			emit(l, thread, LKS_HOLD, name, LKS_CROSS, start, time);
		}
		return;
	}
	struct lks_open *o = find_open(t, name, 0);
	if (o && o->cut && o->start != start) {
		/* another hold than the open one, which a loss cut: that one was
		 * released among the lost events */
		close_open(l, thread, o, o->cut, LKS_LOST);
		o = NULL;
	}
	if (o)
		close_open(l, thread, o, time, 0);
	else /* its acquisition was not seen (lost records): the release says how long it was */
		emit(l, thread, LKS_HOLD, name, (op & LK_EVF_READ) ? LKS_READ : 0, start, time);
}

void lks_lock(struct lks *l, const struct rd_lock_event *e)
{
	if (!l || e->thread >= (uint32_t)l->r->nthreads)
		return;
	uint32_t thread = e->thread, op = e->op;
	uint64_t time = e->time, aux = e->aux;
	if (e->lock >= LKREC_MAX_LOCKS) {
		l->st.bad++;
		return;
	}
	uint32_t name = name_of(l, e->lock);
	if (name == UINT32_MAX) {
		l->st.bad++;
		return;
	}
	int holdable = l->names[name].holdable;
	struct lks_thread *t = &l->th[thread];
	if (time > t->last)
		t->last = time;
	uint64_t wstart = time >= aux ? time - aux : 0;
	switch (op & LK_EV_OP_MASK) {
	case LK_EV_ACQ_WAIT:
		emit(l, thread, LKS_WAIT, name, 0, wstart, time);
		/* fall through */
	case LK_EV_ACQ:
		if (holdable && !(op & LK_EVF_NESTED))
			acquired(l, thread, name,
			         ((op & LK_EVF_READ) ? LKS_READ : 0) |
			                 ((op & LK_EV_OP_MASK) == LK_EV_ACQ && (op & LK_EVF_FORKED) ? LKS_FORKED : 0),
			         time);
		break;
	case LK_EV_REL:
		if (holdable && !(op & (LK_EVF_NESTED | LK_EVF_UNMATCHED)))
			released(l, thread, name, op, time, aux);
		break;
	case LK_EV_TIMEOUT:
		emit(l, thread, LKS_WAIT, name, LKS_TIMEOUT, wstart, time);
		break;
	case LK_EV_COND:
		emit(l, thread, LKS_WAIT, name, LKS_COND | ((op & LK_EVF_TIMEOUT) ? LKS_TIMEOUT : 0), wstart, time);
		break;
	default: /* trylock failures and errors take no time */
		break;
	}
}

void lks_loss(struct lks *l, const struct rd_loss *e)
{
	if (!l || e->thread >= (uint32_t)l->r->nthreads)
		return; /* RDL_UNKNOWN_THREAD: no thread of ours */
	struct lks_thread *t = &l->th[e->thread];
	for (uint32_t k = 0; k < t->nopen; k++)
		if (!t->open[k].cut) /* the first loss it met: the latest time it surely still held */
			t->open[k].cut = e->time < t->open[k].start ? t->open[k].start : e->time;
}

void lks_close(struct lks *l, struct lks_stats *st)
{
	if (!l) {
		if (st)
			memset(st, 0, sizeof *st);
		return;
	}
	const struct recording *r = l->r;
	for (int i = 0; i < r->nthreads; i++) {
		struct lks_thread *t = &l->th[i];
		uint64_t end = r->threads[i].r.end_tsc;
		const struct rec_process *p = rd_proc(r, r->threads[i].r.proc);
		if (!end && p)
			end = p->end_tsc;
		if (end < t->last)
			end = t->last;
		/* Latest first, so that the holds close innermost first; one a loss
		 * cut ends where it was last known held. */
		while (t->nopen) {
			uint32_t k = 0;
			for (uint32_t j = 1; j < t->nopen; j++)
				if (t->open[j].start > t->open[k].start)
					k = j;
			struct lks_open *o = &t->open[k];
			close_open(l, (uint32_t)i, o, o->cut ? o->cut : end, o->cut ? LKS_LOST : LKS_AT_END);
		}
	}
	if (st)
		*st = l->st;
	for (int i = 0; i < r->nthreads; i++) {
		free(l->th[i].open);
		for (uint32_t k = 0; k < LKS_MAX_LANES; k++)
			free(l->th[i].lanes[k].iv);
	}
	for (uint32_t i = 0; i < l->nnames; i++) {
		free(l->names[i].hold);
		free(l->names[i].wait);
	}
	free(l->names);
	free(l->by_id);
	free(l->th);
	free(l->pend);
	free(l);
}

void lks_lane_name(const struct recording *r, uint32_t thread, uint32_t lane, char *buf, size_t len)
{
	int tid = thread < (uint32_t)r->nthreads ? r->threads[thread].r.tid : 0;
	if (lane == 0)
		snprintf(buf, len, "%d locks", tid);
	else
		snprintf(buf, len, "%d locks %u", tid, lane + 1);
}

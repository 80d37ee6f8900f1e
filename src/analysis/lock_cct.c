/* lock_cct.c — lock wait and hold ticks per calling-context node (see
 * lock_cct.h): one pass over the events, following each thread's calls
 * down its tree (a stack of node indices) and charging each lock event to
 * the node on top. */
#include "analysis/lock_cct.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lock_enc.h"
#include "data/events.h"

struct held {
	uint32_t lock, node;
};

struct lthread {
	uint32_t *stack;     /* stack[0] = root; stack[d] = the current node */
	uint32_t d, over;    /* depth; calls past RD_MAX_DEPTH (not stacked) */
	struct held *held;   /* outer holds of this thread: where they were taken */
	uint32_t nheld, capheld;
};

struct walk {
	const struct recording *r;
	struct lock_cct *lc;
	struct lthread *th;
	int oom;
};

static struct lthread *thread_of(struct walk *w, uint32_t i)
{
	if (i >= (uint32_t)w->lc->nthreads || !w->lc->wait[i])
		return NULL;
	struct lthread *t = &w->th[i];
	if (!t->stack) {
		t->stack = calloc(RD_MAX_DEPTH + 1, sizeof *t->stack);
		if (!t->stack) {
			w->oom = 1;
			return NULL;
		}
	}
	return t;
}

static void on_call(void *arg, const struct tr_slice *s)
{
	struct walk *w = arg;
	struct lthread *t = thread_of(w, s->thread);
	if (!t)
		return;
	if (t->d >= RD_MAX_DEPTH) {
		t->over++;
		return;
	}
	const struct rd_thread *rt = &w->r->threads[s->thread];
	uint32_t cur = t->stack[t->d], next = cur;
	if (rt->nodes && cur < rt->nnodes) {
		uint32_t k = 0;
		for (uint32_t c = rt->nodes[cur].first_child; c && c < rt->nnodes && k < rt->nnodes;
		     c = rt->nodes[c].next_sibling, k++)
			if (rt->nodes[c].func == s->func) {
				next = c;
				break;
			}
	}
	t->stack[++t->d] = next;
}

static void on_ret(void *arg, const struct tr_slice *s)
{
	struct walk *w = arg;
	struct lthread *t = thread_of(w, s->thread);
	if (!t)
		return;
	if (t->over)
		t->over--;
	else if (t->d)
		t->d--;
}

static void on_lock(void *arg, const struct rd_lock_event *e)
{
	struct walk *w = arg;
	struct lthread *t = thread_of(w, e->thread);
	if (!t)
		return;
	struct lock_cct *lc = w->lc;
	uint32_t node = t->stack[t->d], n = lc->n[e->thread];
	if (node >= n)
		node = 0;
	uint32_t op = e->op & LK_EV_OP_MASK;
	int nested = !!(e->op & LK_EVF_NESTED);
	lc->events++;
	switch (op) {
	case LK_EV_ACQ_WAIT:
	case LK_EV_TIMEOUT:
	case LK_EV_COND:
		lc->wait[e->thread][node] = rd_sat_add(lc->wait[e->thread][node], e->aux);
		if (op != LK_EV_ACQ_WAIT)
			break;
		__attribute__((fallthrough)); /* an acquisition after its wait */
	case LK_EV_ACQ:
		if (nested || (op == LK_EV_ACQ && (e->op & LK_EVF_FORKED)))
			break;
		if (t->nheld == t->capheld) {
			uint32_t cap = t->capheld ? t->capheld * 2 : 8;
			struct held *h = realloc(t->held, sizeof *h * cap);
			if (!h) {
				w->oom = 1;
				break;
			}
			t->held = h;
			t->capheld = cap;
		}
		t->held[t->nheld++] = (struct held){ e->lock, node };
		break;
	case LK_EV_REL: {
		if (nested)
			break;
		uint32_t at = node;
		for (uint32_t i = t->nheld; i-- > 0;)
			if (t->held[i].lock == e->lock) { /* the innermost hold of that lock */
				at = t->held[i].node;
				t->held[i] = t->held[--t->nheld];
				break;
			}
		lc->hold[e->thread][at] = rd_sat_add(lc->hold[e->thread][at], e->aux);
		break;
	}
	default:
		break;
	}
}

int lock_cct_build(const struct recording *r, int tid, struct lock_cct *lc, char *err, size_t errlen)
{
	memset(lc, 0, sizeof *lc);
	int nt = r->nthreads;
	lc->nthreads = nt;
	lc->wait = calloc((size_t)nt + 1, sizeof *lc->wait);
	lc->hold = calloc((size_t)nt + 1, sizeof *lc->hold);
	lc->n = calloc((size_t)nt + 1, sizeof *lc->n);
	struct walk w = { r, lc, calloc((size_t)nt + 1, sizeof *w.th), 0 };
	int rc = 0;
	if (!lc->wait || !lc->hold || !lc->n || !w.th)
		goto oom;
	for (int i = 0; i < nt; i++) {
		const struct rd_thread *t = &r->threads[i];
		if (tid && t->r.tid != tid)
			continue;
		lc->n[i] = t->nodes && t->nnodes ? t->nnodes : 1;
		lc->wait[i] = calloc(lc->n[i], sizeof **lc->wait);
		lc->hold[i] = calloc(lc->n[i], sizeof **lc->hold);
		if (!lc->wait[i] || !lc->hold[i])
			goto oom;
	}
	if (r->has_events) {
		struct tr_filter f = { { tid, 0, NULL }, 0, 0, 0, 0 };
		const struct rd_event_ops ops = { .call = on_call, .ret = on_ret, .lock = on_lock };
		struct tr_stats st;
		rc = rd_each_event(r, &f, &ops, &w, &st, err, errlen);
	}
	if (w.oom)
		goto oom;
	goto out;
oom:
	snprintf(err, errlen, "out of memory (lock times per calling context)");
	rc = -1;
out:
	for (int i = 0; w.th && i < nt; i++) {
		free(w.th[i].stack);
		free(w.th[i].held);
	}
	free(w.th);
	return rc;
}

void lock_cct_free(struct lock_cct *lc)
{
	for (int i = 0; i < lc->nthreads; i++) {
		if (lc->wait)
			free(lc->wait[i]);
		if (lc->hold)
			free(lc->hold[i]);
	}
	free(lc->wait);
	free(lc->hold);
	free(lc->n);
	memset(lc, 0, sizeof *lc);
}

/* kind_func.c — function probes (func:F): a breakpoint on the entry and on
 * every return instruction (and tail-call jump out) of F, never on the
 * return address.  Counts calls, time per call (total/min/max) matched by
 * stack pointer per thread, and callers by return address. */
#include "probe/kind.h"
#include "probe/probe.h"

#include "common/json.h"
#include "common/trace_enc.h"
#include "probe/callstats.h"
#include "probe/engine.h"
#include "proc/modules.h"
#include "probe/output.h"
#include "probe/place.h"
#include "probe/probe_engine.h"
#include "probe/record.h"
#include "probe/resolve.h"
#include "proc/target.h"
#include "sym/sym.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROLE_ENTRY = FUNC_ROLE_ENTRY, ROLE_EXIT = FUNC_ROLE_EXIT };

struct frame { uint64_t sp, t; };
struct tstack { pid_t tid; struct frame *v; int n, cap; };

struct fdata {
	struct call_stats cs;
	int nexits;
	struct tstack *ts; int nts;
	int at_offset; /* F+OFF: calls only */
};

static struct tstack *stack_of(struct fdata *d, pid_t tid)
{
	for (int i = 0; i < d->nts; i++)
		if (d->ts[i].tid == tid)
			return &d->ts[i];
	struct tstack *v = realloc(d->ts, (size_t)(d->nts + 1) * sizeof *v);
	if (!v)
		return NULL;
	d->ts = v;
	memset(&v[d->nts], 0, sizeof *v);
	v[d->nts].tid = tid;
	return &v[d->nts++];
}

int func_data_new(struct probe *p, int at_offset)
{
	struct fdata *d = calloc(1, sizeof *d);
	if (!d)
		return -1;
	callstats_init(&d->cs);
	d->at_offset = at_offset;
	p->data = d;
	return 0;
}

struct call_stats *func_stats(struct probe *p)
{
	struct fdata *d = p->data;
	return d ? &d->cs : NULL;
}

void func_exit_placed(struct probe *p)
{
	struct fdata *d = p->data;
	d->nexits++;
}

int func_exits(const struct probe *p)
{
	const struct fdata *d = p->data;
	return d ? d->nexits : 0;
}

static void pre(struct probe *p, struct hit *h, int role)
{
	struct fdata *d = p->data;
	uint64_t sp = arch_sp(h->regs);
	struct tstack *s = stack_of(d, h->th->tid);
	if (role == ROLE_ENTRY) {
		p->hits++;
		callstats_call(&d->cs);
		if (d->at_offset) {
			precorder_hit(h, p, TRP_HIT, TRV_NONE, 0, 0, NULL);
			return;
		}
		precorder_hit(h, p, TRP_BEGIN, TRV_NONE, 0, 0, NULL);
		uint64_t ret = 0;
		if (target_read(&h->e->t, sp, &ret, sizeof ret) == 0)
			callstats_caller(&d->cs, ret);
		if (s) {
			if (s->n == s->cap) {
				int cap = s->cap ? s->cap * 2 : 16;
				struct frame *v = realloc(s->v, (size_t)cap * sizeof *v);
				if (!v)
					return;
				s->v = v;
				s->cap = cap;
			}
			s->v[s->n++] = (struct frame){ sp, h->now_ns };
		}
		return;
	}
	/* Exit: the stack pointer is back where it was at entry (the return
	 * address on top).  Frames above it were left by longjmp or exceptions. */
	if (!s)
		return;
	while (s->n && s->v[s->n - 1].sp < sp)
		s->n--;
	if (s->n && s->v[s->n - 1].sp == sp) {
		callstats_return(&d->cs, h->now_ns - s->v[--s->n].t);
		precorder_hit(h, p, TRP_END, TRV_NONE, 0, 0, NULL);
	}
}

/* arg: the probe (the engine's names, else its image's modules name its callers). */
static const char *name_of(void *arg, uint64_t ret, char *buf, size_t n)
{
	const struct probe *p = arg;
	const struct site_ops *so = p->e->ops ? p->e->ops->sites : NULL;
	if (so && so->name)
		so->name(p->e, ret, buf, n);
	else if (p->image > 0 && p->image <= p->e->nold_mods)
		resolve_name_in(&p->e->old_mods[p->image - 1], ret, buf, n);
	else
		resolve_name(p->e, ret, buf, n);
	return buf;
}

void func_stats_json(struct probe *p, const struct call_stats *cs, struct json *j)
{
	callstats_json(cs, j, name_of, p);
}

void func_stats_table(struct probe *p, const struct call_stats *cs, int at_offset, FILE *f)
{
	if (at_offset)
		fprintf(f, "calls %llu (no times or callers at an offset)", (unsigned long long)cs->calls);
	else
		callstats_table(cs, f, name_of, p);
}

static void json(struct probe *p, struct json *j)
{
	struct fdata *d = p->data;
	if (!d)
		return;
	func_stats_json(p, &d->cs, j);
	json_int(j, "exits", d->nexits);
}

static void table(struct probe *p, FILE *f)
{
	struct fdata *d = p->data;
	if (d)
		func_stats_table(p, &d->cs, d->at_offset, f);
}

static void fr(struct probe *p)
{
	struct fdata *d = p->data;
	if (!d)
		return;
	for (int i = 0; i < d->nts; i++)
		free(d->ts[i].v);
	free(d->ts);
	callstats_free(&d->cs);
	free(d);
}

const struct kind_ops kind_func = {
	.name = "func", .needs_location = 1, .setup = kind_place, .pre = pre,
	.json = json, .table = table, .free = fr,
};

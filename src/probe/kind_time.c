/* kind_time.c — time probes (time:LOCATION): a time stamp per hit (first,
 * last, per thread); each time probe after the first also measures the
 * interval from the previous time probe's latest hit in the same thread
 * (count, total, min, max, log2 histogram). */
#include "probe/kind.h"
#include "probe/probe.h"

#include "common/json.h"
#include "common/trace_enc.h"
#include "probe/engine.h"
#include "probe/place.h"
#include "probe/ptrace/ptrace.h"
#include "probe/output.h"
#include "probe/record.h"
#include "probe/resolve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tlast { pid_t tid; uint64_t t; };

struct tdata {
	struct probe *prev;     /* the time probe defined before this one */
	int prev_id;
	uint64_t first, last;
	struct tlast *lt; int nlt;
	uint64_t n, total, min, max;
	uint64_t hist[64];
};

static uint64_t *last_of(struct tdata *d, pid_t tid, int add)
{
	for (int i = 0; i < d->nlt; i++)
		if (d->lt[i].tid == tid)
			return &d->lt[i].t;
	if (!add)
		return NULL;
	struct tlast *v = realloc(d->lt, (size_t)(d->nlt + 1) * sizeof *v);
	if (!v)
		return NULL;
	d->lt = v;
	v[d->nlt] = (struct tlast){ tid, 0 };
	return &v[d->nlt++].t;
}

int time_data_new(struct probe *p)
{
	struct tdata *d = calloc(1, sizeof *d);
	if (!d)
		return -1;
	p->data = d;
	for (int i = p->e->nprobes - 1; i >= 0; i--) {
		struct probe *q = p->e->probes[i];
		if (q != p && q->ops == &kind_time && !q->removed && q->data) {
			d->prev = q;
			d->prev_id = q->id;
			break;
		}
	}
	d->min = ~0ull;
	return 0;
}

int64_t time_account(struct probe *p, long tid_l, uint64_t t)
{
	struct tdata *d = p->data;
	pid_t tid = (pid_t)tid_l;
	p->hits++;
	if (!d->first)
		d->first = t;
	d->last = t;
	uint64_t *mine = last_of(d, tid, 1);
	int64_t interval = -1;
	if (d->prev && !d->prev->removed) {
		uint64_t *pt = last_of(d->prev->data, tid, 0);
		if (pt && *pt && (!mine || *pt > *mine)) {
			uint64_t dt = t - *pt;
			interval = (int64_t)dt;
			d->n++;
			d->total += dt;
			if (dt < d->min) d->min = dt;
			if (dt > d->max) d->max = dt;
			int b = 0;
			while (b < 63 && (dt >> (b + 1)))
				b++;
			d->hist[dt ? b : 0]++;
		}
	}
	if (mine)
		*mine = t;
	return interval;
}

void time_set(struct probe *p, int prev_id, const struct time_agg *a)
{
	struct tdata *d = p->data;
	d->prev_id = prev_id;
	d->first = a->first;
	d->last = a->last;
	d->n = a->n;
	d->total = a->total;
	d->min = a->n ? a->min : ~0ull;
	d->max = a->max;
	memcpy(d->hist, a->hist, sizeof d->hist);
}

static void pre(struct probe *p, struct hit *h, int role)
{
	(void)role;
	int64_t interval = time_account(p, h->th->tid, h->now_ns);
	/* On the timeline: the interval from the previous time probe (ns), if any. */
	if (interval >= 0)
		precorder_hit(h, p, TRP_HIT, TRV_INT, interval, 0, NULL);
	else
		precorder_hit(h, p, TRP_HIT, TRV_NONE, 0, 0, NULL);
}

static void json(struct probe *p, struct json *j)
{
	struct tdata *d = p->data;
	if (!d)
		return;
	uint64_t s = p->e->start_ns;
	json_uint(j, "first_ns", d->first ? d->first - s : 0);
	json_uint(j, "last_ns", d->last ? d->last - s : 0);
	if (d->prev_id) {
		json_int(j, "interval_from", d->prev_id);
		json_uint(j, "intervals", d->n);
		json_uint(j, "total_ns", d->total);
		json_uint(j, "min_ns", d->n ? d->min : 0);
		json_uint(j, "max_ns", d->max);
		json_uint(j, "avg_ns", d->n ? d->total / d->n : 0);
		json_arr_begin(j, "histogram");
		for (int b = 0; b < 64; b++)
			if (d->hist[b]) {
				json_obj_begin(j, NULL);
				json_uint(j, "lo_ns", b ? 1ull << b : 0);
				json_uint(j, "hi_ns", b < 63 ? 1ull << (b + 1) : ~0ull);
				json_uint(j, "count", d->hist[b]);
				json_obj_end(j);
			}
		json_arr_end(j);
	}
}

static void table(struct probe *p, FILE *f)
{
	struct tdata *d = p->data;
	if (!d || !d->prev_id)
		return;
	char a[32], b[32], c[32];
	fprintf(f, "from probe %d: %llu intervals, avg %s, min %s, max %s", d->prev_id,
	        (unsigned long long)d->n, fmt_time(d->n ? d->total / d->n : 0, a, sizeof a),
	        fmt_time(d->n ? d->min : 0, b, sizeof b), fmt_time(d->max, c, sizeof c));
}

static void fr(struct probe *p)
{
	struct tdata *d = p->data;
	if (d) {
		free(d->lt);
		free(d);
	}
}

const struct kind_ops kind_time = {
	.name = "time", .needs_location = 1, .setup = kind_place, .pre = pre,
	.json = json, .table = table, .free = fr,
};

/* trace_cct.c — a calling-context tree per thread from the decoded slices:
 * each begin finds or creates the child (parent, function) of the current
 * node (hash table), each end adds the slice's duration to its node, each
 * TRX_OFFCPU wait to the current node's off-CPU time (issue 38); the
 * counted functions' calls (REC_COUNTED, issue 39) go under the root. */
#include "analysis/trace_cct.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tcct {
	struct rec_node *nodes;
	uint64_t *off;       /* by node: exclusive off-CPU ns (TRX_OFFCPU), cap of them */
	uint64_t *run;       /* by node: the runnable part of off, cap of them */
	int run_unknown;     /* a TRX_OFFCPU without its runnable part */
	uint32_t n, cap;
	uint32_t cur;
	uint32_t *hash;      /* index+1 of the node for (parent, func) */
	uint32_t hcap;
	uint32_t skipped;    /* open slices that got no node (out of memory): their ends are skipped too */
};

struct build {
	struct recording *r;
	struct tcct *t;
};

static uint32_t h2(uint32_t parent, uint32_t func)
{
	uint64_t h = ((uint64_t)parent << 32 | func) * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 32);
}

static int rehash(struct tcct *c)
{
	uint32_t hcap = c->hcap ? c->hcap * 2 : 1024;
	uint32_t *hash = hcap ? calloc(hcap, sizeof *hash) : NULL;
	if (!hash)
		return -1;
	free(c->hash);
	c->hash = hash;
	c->hcap = hcap;
	for (uint32_t i = 1; i < c->n; i++) {
		uint32_t h = h2(c->nodes[i].parent, c->nodes[i].func) & (c->hcap - 1);
		while (c->hash[h])
			h = (h + 1) & (c->hcap - 1);
		c->hash[h] = i + 1;
	}
	return 0;
}

/* The child (parent, func), created if need be; UINT32_MAX when out of memory. */
/* A new node (parent, func) at the end of c's, made its parent's first
 * child; its index, UINT32_MAX without memory. */
static uint32_t append(struct tcct *c, uint32_t parent, uint32_t func)
{
	if (c->n == c->cap) {
		struct rec_node *nodes = c->cap < UINT32_MAX / 2 ? realloc(c->nodes, sizeof *c->nodes * c->cap * 2) : NULL;
		if (!nodes)
			return UINT32_MAX;
		c->nodes = nodes;
		uint64_t *off = realloc(c->off, sizeof *c->off * c->cap * 2);
		if (!off)
			return UINT32_MAX;
		c->off = off;
		memset(off + c->cap, 0, sizeof *off * c->cap);
		uint64_t *run = realloc(c->run, sizeof *c->run * c->cap * 2);
		if (!run)
			return UINT32_MAX;
		c->run = run;
		memset(run + c->cap, 0, sizeof *run * c->cap);
		c->cap *= 2;
	}
	uint32_t i = c->n++;
	struct rec_node *nd = &c->nodes[i];
	memset(nd, 0, sizeof *nd);
	nd->parent = parent;
	nd->func = func;
	nd->next_sibling = c->nodes[parent].first_child;
	c->nodes[parent].first_child = i;
	return i;
}

/* The node (parent, func) of c, made when new. */
static uint32_t child(struct tcct *c, uint32_t parent, uint32_t func)
{
	if ((uint64_t)(c->n + 1) * 2 > c->hcap && rehash(c))
		return UINT32_MAX;
	uint32_t h = h2(parent, func) & (c->hcap - 1);
	for (; c->hash[h]; h = (h + 1) & (c->hcap - 1)) {
		uint32_t i = c->hash[h] - 1;
		if (c->nodes[i].parent == parent && c->nodes[i].func == func)
			return i;
	}
	uint32_t i = append(c, parent, func);
	if (i != UINT32_MAX)
		c->hash[h] = i + 1;
	return i;
}

static void on_begin(void *arg, const struct tr_slice *s)
{
	struct build *b = arg;
	struct tcct *c = &b->t[s->thread];
	if (!c->nodes)
		return;
	uint32_t k = c->skipped ? UINT32_MAX : child(c, c->cur, s->func);
	if (k == UINT32_MAX) {
		c->skipped++;
		return;
	}
	c->cur = k;
	if (!(s->flags & TRS_RESUMED)) /* a forked child's copy of its parent's frame: not a call */
		c->nodes[c->cur].calls++;
}

static void on_offcpu(void *arg, uint32_t thread, uint64_t time, uint64_t ns, uint64_t run)
{
	(void)time;
	struct build *b = arg;
	struct tcct *c = &b->t[thread];
	if (run == UINT64_MAX)
		c->run_unknown = 1;
	if (c->nodes && !c->skipped && c->cur && c->cur < c->n) {
		c->off[c->cur] = c->off[c->cur] + ns < ns ? UINT64_MAX : c->off[c->cur] + ns;
		if (run != UINT64_MAX)
			c->run[c->cur] = c->run[c->cur] + run < run ? UINT64_MAX : c->run[c->cur] + run;
	}
}

static void on_end(void *arg, const struct tr_slice *s)
{
	struct build *b = arg;
	struct tcct *c = &b->t[s->thread];
	if (!c->nodes)
		return;
	if (c->skipped) {
		c->skipped--;
		return;
	}
	if (!c->cur)
		return;
	/* The decoder keeps a thread's times within rd_max_ticks() of each
	 * other and its slices nested, so neither a node's sum nor its
	 * children's can pass that bound (which check_cct sets for the trees
	 * of a profile). */
	c->nodes[c->cur].ticks += s->end - s->start;
	c->cur = c->nodes[c->cur].parent;
}

int trace_cct_build(struct recording *r, const struct tr_filter *flt, struct tr_stats *st, char *err, size_t errlen)
{
	struct build b = { r, calloc(r->nthreads ? r->nthreads : 1, sizeof(struct tcct)) };
	if (!b.t) {
		snprintf(err, errlen, "%s: out of memory", r->dir);
		return -1;
	}
	for (int i = 0; i < r->nthreads; i++) {
		if (r->threads[i].nodes)
			continue; /* has its own profile */
		struct tcct *c = &b.t[i];
		c->cap = 256;
		c->nodes = calloc(c->cap, sizeof *c->nodes);
		c->off = calloc(c->cap, sizeof *c->off);
		c->run = calloc(c->cap, sizeof *c->run);
		if (!c->off || !c->run) {
			free(c->nodes);
			free(c->off);
			free(c->run);
			c->nodes = NULL;
		}
		c->n = 1; /* node 0: the root */
	}
	struct tr_filter f;
	tr_filter_init(&f, r, NULL, 0, 0, 0);
	const struct rd_event_ops ops = { .call = on_begin, .ret = on_end, .offcpu = on_offcpu };
	int rc = rd_each_event(r, flt ? flt : &f, &ops, &b, st, err, errlen);
	for (int i = 0; i < r->nthreads; i++) {
		struct tcct *c = &b.t[i];
		free(c->hash);
		if (!c->nodes)
			continue;
		/* the counted functions' calls (REC_COUNTED), as a profile has
		 * them: nodes under the root with no time; they have no time to
		 * fall in a range, so a range (flt) leaves them out */
		for (uint32_t k = 0; !flt && k < r->threads[i].ncounted; k++) {
			uint32_t n = append(c, 0, r->threads[i].counted[k].func);
			if (n == UINT32_MAX)
				break;
			c->nodes[n].calls = r->threads[i].counted[k].calls;
		}
		r->threads[i].nodes = c->nodes;
		r->threads[i].nnodes = c->n;
		/* the split, when the thread's was measured (its TRX_OFFCPU events):
		 * exclusive to inclusive, children after their parents */
		r->threads[i].cpu_split = r->threads[i].r.cpu_split;
		int runnable = (r->threads[i].r.flags & REC_THREAD_RUNNABLE) && !c->run_unknown;
		if (r->threads[i].r.cpu_split == 1) {
			for (uint32_t n = c->n; n-- > 1;) {
				uint64_t *up = &c->off[c->nodes[n].parent], *ur = &c->run[c->nodes[n].parent];
				*up = *up + c->off[n] < c->off[n] ? UINT64_MAX : *up + c->off[n];
				*ur = *ur + c->run[n] < c->run[n] ? UINT64_MAX : *ur + c->run[n];
			}
			free(r->threads[i].off_ns);
			r->threads[i].off_ns = c->off;
			free(r->threads[i].run_ns);
			r->threads[i].run_ns = runnable ? c->run : NULL;
			if (!runnable)
				free(c->run);
		} else {
			free(c->off);
			free(c->run);
		}
	}
	free(b.t);
	return rc;
}

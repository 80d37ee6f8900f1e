/* profile.c — metrics of seed 002 from a calling-context tree in O(nodes).
 *
 * For a node v (function f) let ticks(v) be its inclusive time (the calls of
 * that context), excl(v) = ticks(v) - sum of its children's ticks.
 * For a child c of v, deeper(c) is the time in c's subtree spent under a
 * deeper activation of f = fn(v): the sum of ticks(w) over the nodes w of
 * c's subtree (c included) that have function f and no f-node between them
 * and v.  Then, with the innermost-activation rule:
 *   own(v)   = ticks(v) - sum_c deeper(c)   time where v is f's innermost activation
 *   inclusive(f)          += own(v)
 *   callers pair (fn(parent v) -> f) += own(v)
 *   callees pair (f -> fn(c))        += ticks(c) - deeper(c)
 *   exclusive(f)          += excl(v)
 * A depth-first walk keeps, per function, its innermost open node; visiting
 * w adds ticks(w) to deeper(child of that node on the path).
 */
#include "analysis/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void profile_init(struct profile *p, const struct fn_table *ft)
{
	memset(p, 0, sizeof *p);
	p->nfn = ft->n;
	p->fn = calloc(ft->n, sizeof *p->fn);
	p->hashcap = 1024;
	p->pair_hash = calloc(p->hashcap, sizeof *p->pair_hash);
}

void profile_free(struct profile *p)
{
	free(p->fn);
	free(p->pairs);
	free(p->pair_hash);
	memset(p, 0, sizeof *p);
}

static uint32_t phash(uint32_t a, uint32_t b)
{
	uint64_t h = ((uint64_t)a << 32 | b) * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 32);
}

struct pair_metrics *profile_pair(struct profile *p, uint32_t caller, uint32_t callee)
{
	uint32_t mask = p->hashcap - 1;
	for (uint32_t h = phash(caller, callee) & mask;; h = (h + 1) & mask) {
		uint32_t i = p->pair_hash[h];
		if (!i)
			break;
		if (p->pairs[i - 1].caller == caller && p->pairs[i - 1].callee == callee)
			return &p->pairs[i - 1];
	}
	if ((p->npairs + 1) * 2 > p->hashcap) { /* grow and rehash */
		free(p->pair_hash);
		p->hashcap *= 2;
		p->pair_hash = calloc(p->hashcap, sizeof *p->pair_hash);
		mask = p->hashcap - 1;
		for (uint32_t i = 0; i < p->npairs; i++) {
			uint32_t h = phash(p->pairs[i].caller, p->pairs[i].callee) & mask;
			while (p->pair_hash[h])
				h = (h + 1) & mask;
			p->pair_hash[h] = i + 1;
		}
	}
	if (p->npairs == p->cappairs) {
		p->cappairs = p->cappairs ? p->cappairs * 2 : 256;
		p->pairs = realloc(p->pairs, sizeof *p->pairs * p->cappairs);
	}
	struct pair_metrics *pm = &p->pairs[p->npairs++];
	memset(pm, 0, sizeof *pm);
	pm->caller = caller;
	pm->callee = callee;
	uint32_t h = phash(caller, callee) & mask;
	while (p->pair_hash[h])
		h = (h + 1) & mask;
	p->pair_hash[h] = p->npairs;
	return pm;
}

/* Sums of ticks stay in [-lim, lim] (lim = rd_max_ticks: their nanoseconds
 * convert to int64 exactly).  A sound recording never gets there; when a
 * damaged one would, the sum stops at the bound and p->clamped says so. */
static int64_t sadd(struct profile *p, int64_t a, int64_t b, int64_t lim)
{
	int64_t s;
	if (__builtin_add_overflow(a, b, &s))
		s = b > 0 ? lim : -lim;
	if (s > lim || s < -lim) {
		p->clamped = 1;
		s = s > lim ? lim : -lim;
	}
	return s;
}

static int64_t ticks_of(struct profile *p, const struct rec_node *nd, int64_t lim)
{
	if (nd->ticks > (uint64_t)lim) {
		p->clamped = 1;
		return lim;
	}
	return (int64_t)nd->ticks;
}

/* The walk below over one value of the nodes: their wall ticks (cpu 0,
 * into excl / incl / attr_*), their CPU ticks cv (cpu 1, into the _cpu
 * fields) or their runnable ticks cv (cpu 2, into the _run fields; no
 * attributed values). */
static void add_values(struct profile *p, const struct recording *r, const struct fn_table *ft,
                       const struct rd_thread *t, const int64_t *cv, int cpu)
{
	uint32_t n = t->nnodes;
	const struct rec_node *nd = t->nodes;
	const int64_t lim = (int64_t)rd_max_ticks(r);
#define VAL(v) (cpu ? cv[v] : ticks_of(p, &nd[v], lim))
	uint32_t *fn = malloc(sizeof *fn * n);
	int64_t *deeper = calloc(n, sizeof *deeper);
	uint32_t *depth = malloc(sizeof *depth * n);
	uint32_t *path = malloc(sizeof *path * ((size_t)n + 1)); /* path[d] = node at depth d */
	uint32_t *open = malloc(sizeof *open * ft->n);     /* innermost open node per function */
	uint32_t *saved = malloc(sizeof *saved * n);       /* open[] value replaced by node v */
	uint32_t *next = malloc(sizeof *next * n);         /* DFS: next child to visit */
	if (!fn || !deeper || !depth || !path || !open || !saved || !next) {
		p->clamped = 1; /* out of memory: this thread is left out */
		goto out;
	}
	for (uint32_t i = 0; i < ft->n; i++)
		open[i] = UINT32_MAX;
	fn[0] = FN_ROOT;
	for (uint32_t i = 1; i < n; i++)
		fn[i] = fn_of(ft, r, nd[i].func);

	/* Iterative DFS from the root computing deeper[].  The reader checked
	 * the tree (src/data/reader.c, check_cct) and trees built from a trace
	 * are sound by construction; still, the walk visits at most n - 1 nodes
	 * and never indexes past the path, whatever the links say. */
	uint32_t d = 0, visits = 0;
	path[0] = 0;
	depth[0] = 0;
	next[0] = nd[0].first_child;
	for (;;) {
		uint32_t v = path[d];
		uint32_t c = next[v];
		if (c && (c >= n || ++visits >= n || d + 1 >= n)) {
			p->clamped = 1; /* not a tree */
			break;
		}
		if (c) {
			next[v] = nd[c].next_sibling;
			/* visit c: on the path first, so path[depth[a] + 1] is valid
			 * even when a is c's parent */
			depth[c] = d + 1;
			path[++d] = c;
			uint32_t a = open[fn[c]];
			if (a != UINT32_MAX) {
				int64_t *dp = &deeper[path[depth[a] + 1]];
				*dp = sadd(p, *dp, VAL(c), lim);
			}
			saved[c] = a;
			open[fn[c]] = c;
			next[c] = nd[c].first_child;
			continue;
		}
		/* leave v */
		if (d == 0)
			break;
		open[fn[v]] = saved[v];
		d--;
	}

	for (uint32_t v = 1; v < n && nd[v].parent < n; v++) {
		int64_t tv = VAL(v), kids = 0, blocked = 0;
		uint32_t k = 0;
		for (uint32_t c = nd[v].first_child; c && c < n && k < n; c = nd[c].next_sibling, k++) {
			int64_t tc = VAL(c);
			kids = sadd(p, kids, tc, lim);
			blocked = sadd(p, blocked, deeper[c], lim);
			if (cpu == 2)
				continue;
			struct pair_metrics *pm = profile_pair(p, fn[v], fn[c]);
			int64_t *ao = cpu ? &pm->attr_out_cpu : &pm->attr_out;
			*ao = sadd(p, *ao, tc - deeper[c], lim);
		}
		int64_t own = tv - blocked;     /* both in [0, lim]: no overflow */
		struct fn_metrics *m = &p->fn[fn[v]];
		if (cpu == 2) {
			m->excl_run = sadd(p, m->excl_run, tv - kids, lim);
			m->incl_run = sadd(p, m->incl_run, own, lim);
			p->total_run = sadd(p, p->total_run, tv - kids, lim);
			continue;
		}
		struct pair_metrics *pm = profile_pair(p, fn[nd[v].parent], fn[v]);
		if (cpu) {
			m->excl_cpu = sadd(p, m->excl_cpu, tv - kids, lim);
			m->incl_cpu = sadd(p, m->incl_cpu, own, lim);
			p->total_cpu = sadd(p, p->total_cpu, tv - kids, lim);
			pm->attr_in_cpu = sadd(p, pm->attr_in_cpu, own, lim);
			continue;
		}
		m->calls = rd_sat_add(m->calls, nd[v].calls);
		if (!profile_node_counted(&ft->fns[fn[v]], &nd[v]))
			m->timed_calls = rd_sat_add(m->timed_calls, nd[v].calls);
		m->excl = sadd(p, m->excl, tv - kids, lim);
		m->incl = sadd(p, m->incl, own, lim);
		p->total = sadd(p, p->total, tv - kids, lim);
		pm->calls = rd_sat_add(pm->calls, nd[v].calls);
		pm->attr_in = sadd(p, pm->attr_in, own, lim);
	}
out:
	free(fn);
	free(deeper);
	free(depth);
	free(path);
	free(open);
	free(saved);
	free(next);
#undef VAL
}

/* The CPU ticks of t's nodes (issue 38): each node's ticks less its
 * off-CPU time, taken into ticks and made to fit the tree, so that the
 * invariants of profile.h hold for CPU time too: a node's own off-CPU time
 * (its off-CPU time less its children's) is kept in [0, its exclusive
 * ticks], so no node has more CPU time than wall time and none less than
 * its children's.  Children come after their parents (the reader checked
 * it): one pass from the last node.  NULL when t has no split. */
/* With rv (t has run_ns): *rv the runnable ticks of each node, made to fit
 * the same way inside its off-CPU time: a node's own runnable time in [0,
 * its own off-CPU time]; else *rv NULL. */
static int64_t *cpu_values(struct profile *p, const struct recording *r, const struct rd_thread *t, int64_t **rv)
{
	uint32_t n = t->nnodes;
	const struct rec_node *nd = t->nodes;
	const int64_t lim = (int64_t)rd_max_ticks(r);
	if (rv)
		*rv = NULL;
	if (!t->off_ns)
		return NULL;
	int runnable = rv && t->run_ns;
	int64_t *cv = malloc(sizeof *cv * n), *koff = calloc(n, sizeof *koff), *kwall = calloc(n, sizeof *kwall);
	int64_t *run = runnable ? malloc(sizeof *run * n) : NULL, *krun = runnable ? calloc(n, sizeof *krun) : NULL;
	if (!cv || !koff || !kwall || (runnable && (!run || !krun))) {
		free(cv);
		free(koff);
		free(kwall);
		free(run);
		free(krun);
		return NULL;
	}
	cv[0] = 0;
	if (run)
		run[0] = 0;
	for (uint32_t v = n; v-- > 1;) {
		int64_t wall = ticks_of(p, &nd[v], lim);
		double o = (double)t->off_ns[v] * r->ticks_per_ns;
		int64_t off = o < (double)lim ? (int64_t)o : lim;
		int64_t excl = wall - kwall[v] > 0 ? wall - kwall[v] : 0;
		int64_t own = off - koff[v];
		own = own < 0 ? 0 : own > excl ? excl : own;
		int64_t total = sadd(p, koff[v], own, lim);
		cv[v] = wall - total > 0 ? wall - total : 0;
		uint32_t up = nd[v].parent;
		if (run) {
			double q = (double)t->run_ns[v] * r->ticks_per_ns;
			int64_t rn = q < (double)lim ? (int64_t)q : lim;
			int64_t rown = rn - krun[v];
			rown = rown < 0 ? 0 : rown > own ? own : rown;
			run[v] = sadd(p, krun[v], rown, lim);
			if (up < v)
				krun[up] = sadd(p, krun[up], run[v], lim);
		}
		if (up < v) {
			koff[up] = sadd(p, koff[up], total, lim);
			kwall[up] = sadd(p, kwall[up], wall, lim);
		}
	}
	free(koff);
	free(kwall);
	free(krun);
	if (rv)
		*rv = run;
	return cv;
}

int64_t *profile_node_cpu(const struct recording *r, const struct rd_thread *t)
{
	struct profile scratch;
	memset(&scratch, 0, sizeof scratch);
	return t->nodes && t->nnodes ? cpu_values(&scratch, r, t, NULL) : NULL;
}

void profile_count_split(struct profile *p, const struct rd_thread *t)
{
	if (!t->nodes || t->nnodes == 0)
		return;
	if (t->off_ns) {
		p->cpu_threads++;
		if (t->run_ns)
			p->run_threads++;
		return;
	}
	p->cpu_unknown++;
	if (t->cpu_split < 0 && !p->cpu_why)
		p->cpu_why = t->cpu_split;
}

void profile_add_thread(struct profile *p, const struct recording *r, const struct fn_table *ft,
                        const struct rd_thread *t)
{
	if (!t->nodes || t->nnodes == 0)
		return;
	add_values(p, r, ft, t, NULL, 0);
	int64_t *rv, *cv = cpu_values(p, r, t, &rv);
	if (cv)
		add_values(p, r, ft, t, cv, 1);
	if (rv)
		add_values(p, r, ft, t, rv, 2);
	profile_count_split(p, t);
	free(cv);
	free(rv);
}

int profile_cpu_known(const struct profile *p)
{
	return p->cpu_threads > 0 && p->cpu_unknown == 0;
}

int profile_run_known(const struct profile *p)
{
	return profile_cpu_known(p) && p->run_threads == p->cpu_threads;
}

const char *profile_cpu_why(const struct profile *p, char *buf, size_t n)
{
	if (profile_cpu_known(p))
		snprintf(buf, n, "measured");
	else if (p->cpu_why == REC_CPU_UNTIMED)
		snprintf(buf, n, "not measured: record --timing=none times no function (the split is not taken)");
	else if (p->cpu_why == REC_CPU_SECCOMP)
		snprintf(buf, n, "not measured: the program runs under a seccomp filter (sonde makes no system call it might refuse)");
	else if (p->cpu_why < 0)
		snprintf(buf, n, "not measured: perf_event_open refused: %s%s",
		         p->cpu_why >= -4095 ? strerror(-p->cpu_why) : "an error code out of range", /* from the file */
		         p->cpu_why == -13 || p->cpu_why == -1 ? " (kernel.perf_event_paranoid above 2?)" : "");
	else if (p->cpu_threads)
		snprintf(buf, n, "measured for %u of %u threads only", p->cpu_threads, p->cpu_threads + p->cpu_unknown);
	else
		snprintf(buf, n, "not measured (a trace, or a recording older than the split)");
	return buf;
}

/* growth.c — what the threads' calling-context node pools did past their
 * start size (rt/cct_grow.c grows them while the program runs): the line
 * `sonde record` ends with, and the META lines of profile.sonde that
 * `sonde info` shows.  Read after the audit (audit.c): every thread's
 * nodes_cap is bounded then. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "record/record.h"

struct growth {
	uint64_t steps, refused, cap, start_nodes, max_nodes, nodes, lost;
	uint32_t grown; /* threads whose pool grew */
};

static void growth_of(struct session *s, struct growth *g)
{
	struct sonde_session_hdr *h = s->hdr;
	memset(g, 0, sizeof *g);
	g->steps = atomic_load(&h->grow_steps);
	g->refused = atomic_load(&h->grow_refused);
	g->cap = h->mem_cap;
	uint64_t hdr = (sizeof(struct sonde_thread) + 63) & ~(uint64_t)63;
	g->start_nodes = s->thread_region > hdr ? (s->thread_region - hdr) / sizeof(struct sonde_node) : 0;
	for (uint32_t i = 0, n = sess_nthreads(h); i < n; i++) {
		uint64_t off = h->threads_off[i];
		if (!off || !sess_inside(s->size, off, sizeof(struct sonde_thread)))
			continue;
		struct sonde_thread *t = sess_ptr(h, off);
		g->nodes += t->nodes_used;
		g->lost += t->lost[SONDE_LOST_CCT_NODES];
		if (t->nodes_cap > g->start_nodes)
			g->grown++;
		if (t->nodes_cap > g->max_nodes)
			g->max_nodes = t->nodes_cap;
	}
}

static double mib(uint64_t nodes)
{
	return (double)nodes * sizeof(struct sonde_node) / (1 << 20);
}

int session_growth_line(struct session *s, char *buf, size_t n)
{
	struct growth g;
	growth_of(s, &g);
	if (!g.grown && !(g.refused && g.lost))
		return 0;
	int k = snprintf(buf, n, "calling-context trees: %" PRIu64 " nodes; %u thread%s grew past the start size "
	                 "(--buffer-size, %.0f MiB of nodes a thread), the largest to %.0f MiB",
	                 g.nodes, g.grown, g.grown == 1 ? "" : "s", mib(g.start_nodes), mib(g.max_nodes));
	if (g.refused && g.lost && k > 0 && (size_t)k < n) {
		if (g.cap && g.cap < s->size)
			snprintf(buf + k, n - (size_t)k, "; the session memory cap (%.0f MiB) was reached: %" PRIu64
			         " calls were charged to their callers (raise it with --max-memory)",
			         (double)g.cap / (1 << 20), g.lost);
		else /* SONDE_BENCH_SESSION's small sessions (bench/, valgrind) */
			snprintf(buf + k, n - (size_t)k, "; the session memory (%.0f MiB) was full: %" PRIu64
			         " calls were charged to their callers", (double)s->size / (1 << 20), g.lost);
	}
	return 1;
}

void session_growth_meta(struct session *s, struct meta_buf *mb)
{
	struct growth g;
	growth_of(s, &g);
	char v[32];
	snprintf(v, sizeof v, "%" PRIu64, g.cap);
	meta_add(mb, "mem_cap", v);
	snprintf(v, sizeof v, "%" PRIu64, g.steps);
	meta_add(mb, "cct_grow_steps", v);
	snprintf(v, sizeof v, "%" PRIu64, g.refused);
	meta_add(mb, "cct_grow_refused", v);
	snprintf(v, sizeof v, "%" PRIu64, g.max_nodes);
	meta_add(mb, "cct_pool_max_nodes", v);
}

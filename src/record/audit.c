/* audit.c — after the program tree has ended and before anything is written:
 * every count, offset and index the program's side left in the session
 * memory is checked against what sonde mapped, and an impossible one is put
 * right in place (clamped, or the part it leads to left out) and counted as
 * SONDE_LOST_SESSION_DAMAGE.  The writers that follow (profile_out.c,
 * locks_out.c, analysis/domain_out.c, the summary) then read only values
 * that lead inside the mapping.  The program may have died half-way through
 * an update, or written over the memory itself: sonde trusts nothing the
 * program wrote (docs/ARCHITECTURE.md, "The session memory and what each
 * side trusts"). */
#include <stdlib.h>
#include <string.h>

#include "record/record.h"

static void clamp32(uint32_t *v, uint32_t max, uint64_t *bad)
{
	if (*v > max) {
		*v = max;
		++*bad;
	}
}

/* The calling-context tree of t: nodes 1..used-1 with parent < index (a
 * node is allocated after its parent) and a function of a known module.
 * The tree is cut at the first impossible node; if anything was wrong, the
 * child/sibling links are rebuilt from the parents (no cycle can remain).
 * A thread that may still be in its hooks (live: its process has not ended,
 * an image exec'd in an attached tree since the attach, a daemon left
 * running) links new nodes and moves children to the front while this
 * runs: its links are left as they are, neither checked nor rewritten (a
 * rewrite under its hooks could make a cycle its own walks would spin in);
 * the writer makes its copy a tree (convert.c, conv_cct_tree). */
static void audit_cct(struct sonde_session_hdr *h, struct sonde_thread *t, int live, uint64_t *bad)
{
	struct sonde_node *nodes = thread_nodes(h, t);
	uint32_t used = t->nodes_used, nm = atomic_load(&h->nmodules);
	int rebuild = nodes[0].next_sibling != 0 || (nodes[0].first_child &&
	              (nodes[0].first_child >= used || nodes[nodes[0].first_child].parent != 0));
	for (uint32_t n = 1; n < used; n++) {
		struct sonde_node *nd = &nodes[n];
		uint32_t mod = SONDE_FUNC_MOD(nd->func), num = SONDE_FUNC_NUM(nd->func);
		if (nd->parent >= n || mod >= nm || (num != SONDE_UNNUMBERED && num >= h->modules[mod].nfuncs)) {
			++*bad;
			used = n;
			rebuild = 1;
			break;
		}
		if ((nd->first_child && (nd->first_child >= used || nodes[nd->first_child].parent != n)) ||
		    (nd->next_sibling && (nd->next_sibling >= used || nodes[nd->next_sibling].parent != nd->parent)))
			rebuild = 1;
	}
	if (live)
		return; /* (an impossible node counted: the writer's copy is cut there, the session is not) */
	if (!rebuild) { /* links point to the right parents; now make sure each node is reached once */
		uint8_t *seen = calloc(used ? used : 1, 1);
		uint64_t reached = 0;
		if (!seen) {
			rebuild = 1;
		} else {
			for (uint32_t n = 0; n < used && !rebuild; n++)
				for (uint32_t c = nodes[n].first_child; c; c = nodes[c].next_sibling) {
					if (seen[c]) {
						rebuild = 1;
						break;
					}
					seen[c] = 1;
					reached++;
				}
			if (reached != (used ? used - 1 : 0))
				rebuild = 1;
			free(seen);
		}
		if (rebuild)
			++*bad;
	}
	if (rebuild) {
		nodes[0].first_child = nodes[0].next_sibling = 0;
		for (uint32_t n = 1; n < used; n++)
			nodes[n].first_child = nodes[n].next_sibling = 0;
		for (uint32_t n = used; n-- > 1;) {
			nodes[n].next_sibling = nodes[nodes[n].parent].first_child;
			nodes[nodes[n].parent].first_child = n;
		}
		t->nodes_used = used;
	}
	if (t->cur_node >= used)
		t->cur_node = 0;
}

uint64_t session_audit(struct session *s, uint64_t span_ticks)
{
	struct sonde_session_hdr *h = s->hdr;
	uint64_t size = s->size, bad = 0;
	if (h->size != size) {
		h->size = size;
		bad++;
	}
	uint32_t v;
	v = atomic_load(&h->nprocs);
	clamp32(&v, SONDE_MAX_PROCS, &bad);
	atomic_store(&h->nprocs, v);
	v = atomic_load(&h->nthreads);
	clamp32(&v, SONDE_MAX_THREADS, &bad);
	atomic_store(&h->nthreads, v);
	v = atomic_load(&h->nmodules);
	clamp32(&v, SONDE_MAX_MODULES, &bad);
	atomic_store(&h->nmodules, v);
	uint32_t nprocs = atomic_load(&h->nprocs), nthreads = atomic_load(&h->nthreads);
	uint32_t nmods = atomic_load(&h->nmodules);
	/* An event lost is a hook that ran, and a hook takes more than a tick:
	 * no thread loses more events than ticks went by, no session more than
	 * that times its threads. */
	for (int k = 0; k < SONDE_LOST_COUNT_; k++)
		if (atomic_load(&h->lost[k]) > span_ticks * (nthreads ? nthreads : 1)) {
			atomic_store(&h->lost[k], 0);
			bad++;
		}

	for (uint32_t i = 0; i < nprocs; i++) {
		struct sonde_proc *p = &h->procs[i];
		p->exe[sizeof p->exe - 1] = 0;
		clamp32(&p->cmdline_len, sizeof p->cmdline, &bad);
	}
	for (uint32_t i = 0; i < nmods; i++) {
		struct sonde_module *m = &h->modules[i];
		m->path[sizeof m->path - 1] = 0;
		if (m->proc >= nprocs || m->nfuncs > SONDE_MAX_FUNCS_PER_MODULE ||
		    (m->nfuncs && !sess_inside(size, m->funcs_off, (uint64_t)m->nfuncs * 8))) {
			m->nfuncs = 0;
			m->proc = 0;
			bad++;
		}
		if (m->filter_off && !sess_inside(size, m->filter_off, ((uint64_t)m->nfuncs + 4) / 4)) {
			m->filter_off = 0;
			bad++;
		}
		if (m->dormant > m->nfuncs) {
			m->dormant = 0;
			bad++;
		}
		clamp32(&m->build_id_len, sizeof m->build_id, &bad);
	}
	for (uint32_t i = 0; i < nthreads; i++) {
		uint64_t off = h->threads_off[i];
		if (!off)
			continue;
		if (off < sizeof *h || !sess_fits(size, off, sizeof(struct sonde_thread), _Alignof(struct sonde_thread))) {
			h->threads_off[i] = 0;
			bad++;
			continue;
		}
		struct sonde_thread *t = sess_ptr(h, off);
		t->comm[sizeof t->comm - 1] = 0;
		if (t->proc >= nprocs) {
			t->proc = 0;
			bad++;
		}
		clamp32(&t->depth, SONDE_STACK_MAX, &bad);
		for (int k = 0; k < SONDE_LOST_COUNT_; k++)
			if (t->lost[k] > span_ticks) {
				t->lost[k] = 0;
				bad++;
			}
		/* the pool may have grown past the thread's region (rt/cct_grow.c):
		 * bounded by the session, wherever it lies */
		if (t->nodes_cap > SONDE_NODES_MAX ||
		    !sess_fits(size, t->nodes_off, (uint64_t)t->nodes_cap * sizeof(struct sonde_node), _Alignof(struct sonde_node))) {
			t->nodes_cap = t->nodes_used = 0;
			bad++;
		}
		clamp32(&t->nodes_used, t->nodes_cap, &bad);
		if (t->nodes_used) /* live: in a process not seen to end */
			audit_cct(h, t, atomic_load(&t->state) == SONDE_T_LIVE && !h->procs[t->proc].end_tsc, &bad);
		for (uint32_t k = 0; k < t->depth; k++)
			if (t->stack[k].node != 0xffffffffu && t->stack[k].node >= t->nodes_used) {
				t->stack[k].node = 0xffffffffu;
				bad++;
			}
		if (t->ring_off && !sess_fits(size, t->ring_off, 64, 8)) {
			t->ring_off = 0;
			bad++;
		}
		if (t->lock_off && !sess_fits(size, t->lock_off, 64, 8)) {
			t->lock_off = 0;
			bad++;
		}
		for (uint32_t k = 0; k < SONDE_MAX_MODS_PER_THREAD; k++)
			if (t->recs_off[k] && (k >= nmods || !sess_fits(size, t->recs_off[k], ((uint64_t)h->modules[k].nfuncs + 1) * 4, 4))) {
				t->recs_off[k] = 0;
				bad++;
			}
		for (uint32_t k = 0; k < SONDE_MAX_MODS_PER_THREAD; k++)
			if (t->cnt_off[k] && (k >= nmods || !sess_fits(size, t->cnt_off[k], ((uint64_t)h->modules[k].nfuncs + 1) * 8, 8))) {
				t->cnt_off[k] = 0;
				bad++;
			}
	}
	if (bad)
		atomic_fetch_add(&h->lost[SONDE_LOST_SESSION_DAMAGE], bad);
	return bad;
}

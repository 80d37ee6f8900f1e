/* policy.c — record --timing=auto's learned part (instr.h): which switched
 * functions are timed, decided by sonde while the program runs.
 *
 * Each window (INSTR_POLICY_WINDOW_MS) sonde sums, over every thread of the
 * tree, the calls and inclusive ticks its calling-context trees gave each
 * function (the session is sonde's mapping too: read racily, which a policy
 * can bear; every offset bounded), and compares them with the last window's:
 *  - a timed function called at least INSTR_POLICY_CALLS times in the
 *    window, whose calls took at most INSTR_POLICY_SHORT_NS on average, is
 *    switched to counted: the hook's two clock reads would cost more than a
 *    few percent of each call, many times a second;
 *  - a counted one is timed again for one window every INSTR_POLICY_PROBE
 *    windows (staggered by its number, so that few are at a time); found
 *    slow (on average over twice the limit) or rare (called, but under
 *    half the calls) it stays timed, else it is counted again.
 * A switch is one byte of the module's switch array (instr_abi.h), which
 * every process of the tree reads at each call of the function: no code is
 * written while threads run.  Switches and probes are logged for the
 * recording (record_patch.c: META "timing.*"). */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/func_id.h"
#include "common/session.h"
#include "instr/instr.h"

/* The running totals of one module's functions, as last seen. */
struct pol_mod {
	size_t n;
	uint64_t *calls, *ticks;  /* last window's totals */
	uint64_t *now_calls, *now_ticks;
	uint8_t *probing;         /* timed for this window only, to be looked at again */
	uint8_t *switched;        /* switched at least once (timed for part of the recording) */
};

struct instr_policy {
	int on;
	uint64_t t0_ns, t0_tsc, next_ns;
	uint64_t windows, probes;
	struct pol_mod m[SONDE_INSTR_MAX_MODS];
	struct instr_switch *log;
	size_t nlog, cap;
	uint64_t nswitches;
};

struct instr_policy *instr_policy_new(const struct instr_set *set)
{
	if (set->timing != INSTR_TIME_AUTO)
		return NULL;
	struct instr_policy *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->on = 1;
	p->t0_ns = clock_mono_ns();
	p->t0_tsc = clock_ticks();
	p->next_ns = p->t0_ns + INSTR_POLICY_WINDOW_MS * 1000000ull;
	return p;
}

void instr_policy_free(struct instr_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < SONDE_INSTR_MAX_MODS; i++) {
		struct pol_mod *m = &p->m[i];
		free(m->calls);
		free(m->ticks);
		free(m->now_calls);
		free(m->now_ticks);
		free(m->probing);
		free(m->switched);
	}
	free(p->log);
	free(p);
}

static struct pol_mod *pol_mod_of(struct instr_policy *p, size_t i, size_t n)
{
	struct pol_mod *m = &p->m[i];
	if (m->n == n)
		return m;
	if (m->n)
		return NULL; /* (a plan's size does not change) */
	m->calls = calloc(n, 8);
	m->ticks = calloc(n, 8);
	m->now_calls = calloc(n, 8);
	m->now_ticks = calloc(n, 8);
	m->probing = calloc(n, 1);
	m->switched = calloc(n, 1);
	if (!m->calls || !m->ticks || !m->now_calls || !m->now_ticks || !m->probing || !m->switched) {
		p->on = 0; /* no memory: the static choice stays */
		return NULL;
	}
	m->n = n;
	return m;
}

static void note(struct instr_policy *p, uint64_t t_ns, uint32_t mod, uint32_t fn, int to_timed, uint64_t calls,
                 uint64_t mean_ns)
{
	p->nswitches++;
	if (p->nlog == p->cap) {
		if (p->cap >= INSTR_POLICY_LOG_MAX)
			return; /* counted, not kept */
		size_t c = p->cap ? p->cap * 2 : 256;
		struct instr_switch *v = realloc(p->log, c * sizeof *v);
		if (!v)
			return;
		p->log = v;
		p->cap = c;
	}
	p->log[p->nlog++] = (struct instr_switch){ t_ns - p->t0_ns, mod, fn, (uint32_t)to_timed, calls, mean_ns };
}

/* The calls and inclusive ticks of every function, summed over the threads'
 * trees (into each module's now_*): module slots map to plans through
 * their requests. */
static void sum_trees(struct instr_policy *p, struct sonde_session_hdr *h, uint64_t size, const struct sonde_instr *in,
                      const struct instr_set *set)
{
	uint32_t plan_of[SONDE_MAX_MODULES];
	uint32_t nm = sess_nmodules(h);
	for (uint32_t s = 0; s < nm; s++) {
		const struct sonde_module *md = &h->modules[s];
		uint32_t r = md->instr_req, mod = UINT32_MAX;
		if (md->how == SONDE_MOD_PATCHED && r < SONDE_INSTR_MAX_REQS)
			mod = in->reqs[r].mod;
		plan_of[s] = mod < set->n && p->m[mod].n ? mod : UINT32_MAX;
	}
	for (size_t i = 0; i < set->n; i++)
		if (p->m[i].n) {
			memset(p->m[i].now_calls, 0, p->m[i].n * 8);
			memset(p->m[i].now_ticks, 0, p->m[i].n * 8);
		}
	uint32_t nt = sess_nthreads(h);
	for (uint32_t i = 0; i < nt; i++) {
		uint64_t off = atomic_load_explicit((_Atomic uint64_t *)&h->threads_off[i], memory_order_acquire);
		if (!off || off > size || sizeof(struct sonde_thread) > size - off)
			continue;
		const struct sonde_thread *t = sess_ptr(h, off);
		uint64_t no = t->nodes_off;
		uint32_t used = t->nodes_used, cap = t->nodes_cap;
		if (used > cap || !sess_fits(size, no, (uint64_t)cap * sizeof(struct sonde_node), 8))
			continue;
		const struct sonde_node *nd = sess_ptr(h, no);
		for (uint32_t k = 1; k < used; k++) {
			uint32_t f = nd[k].func, s = SONDE_FUNC_MOD(f), num = SONDE_FUNC_NUM(f);
			if (s >= nm || plan_of[s] == UINT32_MAX)
				continue;
			struct pol_mod *m = &p->m[plan_of[s]];
			if (num >= m->n)
				continue;
			m->now_calls[num] += nd[k].calls;
			m->now_ticks[num] += nd[k].ticks;
		}
	}
}

int instr_policy_step(struct instr_policy *p, struct sonde_session_hdr *h, uint64_t size, const struct instr_set *set)
{
	if (!p || !p->on)
		return 0;
	uint64_t now = clock_mono_ns();
	if (now < p->next_ns)
		return 0;
	p->next_ns = now + INSTR_POLICY_WINDOW_MS * 1000000ull;
	if (!h->instr_off || !sess_inside(size, h->instr_off, sizeof(struct sonde_instr)))
		return 0;
	const struct sonde_instr *in = sess_ptr(h, h->instr_off);
	uint64_t tsc = clock_ticks();
	double ns_per_tick = tsc > p->t0_tsc && now > p->t0_ns ? (double)(now - p->t0_ns) / (double)(tsc - p->t0_tsc) : 0;
	if (ns_per_tick <= 0)
		return 0;
	for (size_t i = 0; i < set->n; i++)
		if (set->plans[i].nswitched)
			pol_mod_of(p, i, set->plans[i].nfns);
	if (!p->on)
		return 0;
	sum_trees(p, h, size, in, set);
	uint64_t w = p->windows++;
	int changed = 0;
	for (size_t i = 0; i < set->n; i++) {
		struct pol_mod *m = &p->m[i];
		const struct instr_plan *pl = &set->plans[i];
		const struct sonde_instr_mod *im = &in->mods[i];
		if (!m->n || !im->timed_off || !sess_inside(size, im->timed_off, m->n))
			continue;
		volatile uint8_t *timed = sess_ptr(h, im->timed_off);
		for (size_t f = 0; f < m->n; f++) {
			const struct sonde_instr_fn *fn = &pl->fns[f];
			/* the ones whose stubs have both ways (a live build's re-targeted
			 * ones are int3 sites: instr_build) */
			if (!fn->sw || (fn->retarget && set->live))
				continue;
			uint64_t dc = m->now_calls[f] - m->calls[f], dt = m->now_ticks[f] - m->ticks[f];
			if (m->now_calls[f] < m->calls[f] || m->now_ticks[f] < m->ticks[f])
				dc = dt = 0; /* (a racy read went backwards) */
			uint64_t mean = dc ? (uint64_t)((double)dt * ns_per_tick / (double)dc) : 0;
			if (timed[f]) {
				int was_probe = m->probing[f];
				m->probing[f] = 0;
				if (dc >= INSTR_POLICY_CALLS && mean <= INSTR_POLICY_SHORT_NS) {
					timed[f] = 0;
					if (!was_probe) {
						m->switched[f] = 1;
						note(p, now, (uint32_t)i, (uint32_t)f, 0, dc, mean);
					}
					changed++;
				} else if (was_probe) {
					/* probed: it stays timed if it is slow or rare now, else back
					 * (not called in the window: nothing learned, back too) */
					if (dc && (mean > 2 * INSTR_POLICY_SHORT_NS || dc < INSTR_POLICY_CALLS / 2)) {
						m->switched[f] = 1;
						note(p, now, (uint32_t)i, (uint32_t)f, 1, dc, mean);
					} else {
						timed[f] = 0;
					}
					changed++;
				}
			} else if ((w + f) % INSTR_POLICY_PROBE == INSTR_POLICY_PROBE - 1) {
				timed[f] = 1; /* timed for the next window: a look at it again */
				m->probing[f] = 1;
				m->switched[f] = 1;
				p->probes++;
				changed++;
			}
		}
		memcpy(m->calls, m->now_calls, m->n * 8);
		memcpy(m->ticks, m->now_ticks, m->n * 8);
	}
	return changed;
}

int instr_policy_switched(const struct instr_policy *p, size_t mod, size_t fn)
{
	return p && mod < SONDE_INSTR_MAX_MODS && fn < p->m[mod].n && p->m[mod].switched[fn];
}

const struct instr_switch *instr_policy_log(const struct instr_policy *p, size_t *n, uint64_t *total,
                                            uint64_t *windows, uint64_t *probes)
{
	*n = p ? p->nlog : 0;
	*total = p ? p->nswitches : 0;
	*windows = p ? p->windows : 0;
	*probes = p ? p->probes : 0;
	return p ? p->log : NULL;
}

/* agent_kinds.c — the probe kinds on the agent engine (agent_kinds.h).
 *
 * Every kind is set up by place.c (kind_place), the agent's part of it in
 * agent_sites (place.h): its sites are placed (agent_be.c) and, at the end,
 * what the agent's handlers counted in the shared memory is read into the
 * kind's data (p->data, kind_*.c's; the agent's own, struct adata, is
 * p->edata).  A func probe is one CALL site at the entry (the return is
 * caught by replacing the return address, so .cold parts and tail calls
 * are returns too), func:F+OFF and a line probe a COUNT site at each
 * address; branch, var, assert and time probes add what the agent
 * evaluates at a site (a condition, a bytecode program, a time record); a
 * stack probe's sites copy the stack into the thread's stack ring, which
 * agent_stack.c unwinds.  Their JSON and table are their kind's, on the
 * agent's numbers, plus the sites and why any is an int3.  Removing,
 * disabling and enabling a probe (the manager's hooks) work on the same
 * numbers. */
#include "probe/agent/agent_kinds.h"

#include "common/json.h"
#include "probe/agent/agent_plugin.h"
#include "sonde/probe.h"
#include "probe/agent/agent_expr.h"
#include "probe/agent/agent_record.h"
#include "probe/agent/agent_stack.h"
#include "probe/agent/agent_var.h"
#include "probe/callstats.h"
#include "probe/engine.h"
#include "probe/expr.h"
#include "probe/kind.h"
#include "probe/place.h"
#include "probe/probe.h"
#include "sym/vars.h"

#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <time.h>

static double ticks_per_ns;
int agent_time_slots;         /* time probes numbered in this session (pa_time.slot1) */
struct clock_point agent_c0;  /* the start of the session: the agent's clock ticks from here */
static const struct kind_ops agent_func, agent_line, agent_branch, agent_var, agent_assert, agent_time,
	agent_stack_ops, agent_plugin;
static void time_collect(struct probe *p, struct adata *d);

static void site_counters(const struct pa_site *s, struct abase *o);
uint32_t agent_stack_copy = PA_STK_COPY_DEF; /* --stack-copy: bytes a stack probe's hit copies */

void agent_sleep_ms(int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000 };
	nanosleep(&ts, NULL);
}

/* The agent's own state of p (p->edata), made on first use. */
static struct adata *adata_of(struct probe *p, char *err, size_t n)
{
	if (!p->edata && !(p->edata = calloc(1, sizeof(struct adata))))
		snprintf(err, n, "out of memory");
	return p->edata;
}

static int add_site(struct adata *d, uint64_t addr, uint32_t kind, uint64_t fn, uint64_t fn_size, char *err, size_t n)
{
	int *v = realloc(d->sites, (size_t)(d->nsites + 1) * sizeof *v);
	struct abase *bv = v ? realloc(d->base, (size_t)(d->nsites + 1) * sizeof *bv) : NULL;
	if (v)
		d->sites = v;
	if (!bv) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	d->base = bv;
	char why[160];
	int idx = agent_be_place(&agent_sess, addr, kind, fn, fn_size, why, sizeof why, err, n);
	if (idx < 0)
		return -1;
	const struct pa_site *s = &agent_sess.pa->sites[idx];
	struct abase *b = &d->base[d->nsites];
	site_counters(s, b);
	b->hits = agent_sess.hits_base;
	d->sites[d->nsites++] = idx;
	if (why[0]) {
		d->nint3++;
		if (!d->why_int3[0])
			snprintf(d->why_int3, sizeof d->why_int3, "%s", why);
	}
	return 0;
}

/* The run-time start of la's function. */
static uint64_t fn_start(const struct loc_addr *la)
{
	return la->mod && la->fn.size ? la->fn.start + la->mod->bias : 0;
}

/* --- var ----------------------------------------------------------------- */

/* The expression of p at la compiled for the agent (a var probe's: one
 * variable; an assert probe's: agent_expr.c): 0 and *x (its kind_var
 * expression) and the program; -1 with why when the expression is wrong
 * there (as on any engine), -2 when the agent cannot run it. */
int agent_var_compile_at(const struct spec *sp, const struct loc_addr *la, struct expr **x, struct pa_var *prog,
                          const char **no_value, char *why, size_t n)
{
	*x = NULL;
	struct vars *vs = module_vars(la->mod);
	if (!vs) {
		snprintf(why, n, "no DWARF debug information in %s", la->mod->path);
		return -1;
	}
	if (!(*x = expr_compile(sp->args, vs, la->addr - la->mod->bias, why, n)))
		return -1;
	if (!strcmp(sp->kind, "assert"))
		return agent_expr_compile(*x, la->mod->bias, la->mod->lo, la->mod->hi, prog, why, n) ? -2 : 0;
	const struct var_ref *r = expr_single_var(*x);
	if (!r) {
		snprintf(why, n, "an expression of several variables");
		return -2;
	}
	if (agent_var_compile(r, la->mod->bias, la->mod->lo, la->mod->hi, prog, why, n))
		return -2;
	struct vars_shape sh;
	vars_shape(r, &sh);
	if (sh.no_value)
		*no_value = sh.no_value;
	return 0;
}

/* Why some of the values were not there. */
static const char *var_why(const struct adata *d, const struct pa_var *v)
{
	return v->read_errors ? "cannot read memory (a bad address)"
	       : v->bad_prog ? "the agent refused the program (bounds)"
	       : v->div_zero ? "division by zero"
	       : d->no_value ? d->no_value : "optimized out here";
}

/* A failure the agent kept, and the site (role) it happened at. */
struct afail { const struct pa_fail *f; int role; };

static int fail_cmp(const void *a, const void *b)
{
	const struct afail *x = a, *y = b;
	return x->f->t < y->f->t ? -1 : x->f->t > y->f->t;
}

/* The agent's numbers of p's assert sites into kind_var's: the counts, and
 * the first failures of all the sites in the order they happened. */
static void assert_collect(struct probe *p, struct adata *d)
{
	uint64_t ev = 0, fails = 0, unav = 0;
	const char *why = NULL;
	int nf = 0;
	struct afail *all = calloc((size_t)d->nsites * PA_FAIL_MAX + 1, sizeof *all);
	for (int i = 0; i < d->nsites; i++) {
		const struct pa_var *v = &agent_sess.pa->sites[d->sites[i]].var;
		uint64_t u = v->unavailable + v->read_errors + v->bad_prog + v->div_zero;
		ev += __atomic_load_n(&v->count, __ATOMIC_RELAXED);
		fails += __atomic_load_n(&v->failures, __ATOMIC_RELAXED);
		if (u && !why)
			why = var_why(d, v);
		unav += u;
		uint32_t k = __atomic_load_n(&v->nfail, __ATOMIC_ACQUIRE);
		for (uint32_t f = 0; all && f < k && f < PA_FAIL_MAX; f++)
			if (__atomic_load_n(&v->fail[f].ready, __ATOMIC_ACQUIRE))
				all[nf++] = (struct afail){ &v->fail[f], i };
	}
	assert_set(p, ev, fails, unav, why);
	if (!all)
		return;
	qsort(all, (size_t)nf, sizeof *all, fail_cmp);
	for (int q = 0; q < nf && q < PA_FAIL_MAX; q++) {
		int64_t vals[PA_VAR_SAVE];
		memcpy(vals, all[q].f->vals, sizeof vals);
		expr_set_values_dbl(var_site_expr(p, all[q].role), vals, all[q].f->mask & ((1u << PA_VAR_SAVE) - 1),
		                    agent_sess.pa->sites[d->sites[all[q].role]].var.fsave);
		assert_first(p, all[q].role, (long)all[q].f->tid);
	}
	free(all);
}

/* The agent's statistics of p's var sites into kind_var's. */
static void var_collect(struct probe *p, struct adata *d)
{
	if (p->ops == &agent_assert) {
		assert_collect(p, d);
		return;
	}
	var_reset(p);
	for (int i = 0; i < d->nsites; i++) {
		const struct pa_var *v = &agent_sess.pa->sites[d->sites[i]].var;
		uint64_t count = __atomic_load_n(&v->count, __ATOMIC_ACQUIRE);
		if (v->type == PA_VT_FLOAT) { /* src/rt/probe_float.c's */
			struct var_fagg f = {
				.count = count, .min = v->fmin, .max = v->fmax, .last = v->flast, .sum = v->fsum,
				.hist = v->hist, .why = v->flost ? "a value dropped (the agent's lock busy)" : var_why(d, v),
				.unavailable = v->unavailable + v->read_errors + v->bad_prog + v->div_zero + v->flost,
			};
			var_merge_float(p, &f);
			continue;
		}
		struct var_agg a = {
			.count = count, .min = v->min, .max = v->max, .last = v->last,
			.sum = (__int128)(((unsigned __int128)v->sum_hi << 64) | v->sum_lo), .hist = v->hist,
			.unavailable = v->unavailable + v->read_errors + v->bad_prog + v->div_zero,
			.why = var_why(d, v),
		};
		var_merge(p, &a);
	}
}

static uint64_t ns_of(uint64_t ticks)
{
	return ticks_per_ns > 0 ? (uint64_t)((double)ticks / ticks_per_ns) : ticks;
}

/* A site's counters now, as a probe's base holds them. */
static void site_counters(const struct pa_site *s, struct abase *o)
{
	o->hits = __atomic_load_n(&s->hits, __ATOMIC_RELAXED);
	o->returns = __atomic_load_n(&s->returns, __ATOMIC_RELAXED);
	o->ticks_total = __atomic_load_n(&s->ticks_total, __ATOMIC_RELAXED);
	o->callers_lost = __atomic_load_n(&s->callers_lost, __ATOMIC_RELAXED);
	o->taken = __atomic_load_n(&s->taken, __ATOMIC_RELAXED);
	o->stack_taken = __atomic_load_n(&s->stack_taken, __ATOMIC_RELAXED);
	o->stack_lost = __atomic_load_n(&s->stack_lost, __ATOMIC_RELAXED);
	o->stack_ticks = __atomic_load_n(&s->stack_ticks, __ATOMIC_RELAXED);
	o->stack_walked = __atomic_load_n(&s->stack_walked, __ATOMIC_RELAXED);
	o->stack_walk_ticks = __atomic_load_n(&s->stack_walk_ticks, __ATOMIC_RELAXED);
	for (int c = 0; c < PA_CALLERS; c++)
		o->callers[c] = __atomic_load_n(&s->callers[c].n, __ATOMIC_RELAXED);
}

/* The counters of p's sites, into p->hits and its kind's data. */
void agent_collect(struct probe *p)
{
	struct adata *d = p->edata; /* none for sys: sonde's own samples (kind_sys.c), no sites */
	const struct pa_hdr *h = agent_sess.pa;
	if (!d || d->frozen || !h)
		return;
	p->hits = 0;
	d->nint3 = 0;
	struct call_stats *cs = p->ops == &agent_func ? func_stats(p) : NULL;
	int at_offset = p->sp.off != 0;
	if (cs) {
		callstats_free(cs);
		callstats_init(cs);
	}
	if (p->ops == &agent_var || p->ops == &agent_assert)
		var_collect(p, d);
	if (p->ops == &agent_time)
		time_collect(p, d);
	uint64_t taken = 0, stk_taken = 0, stk_lost = 0, stk_ticks = 0, stk_walked = 0, stk_walk_ticks = 0;
	for (int i = 0; i < d->nsites; i++) {
		const struct pa_site *s = &h->sites[d->sites[i]];
		if (s->mode == PA_MODE_INT3 && !d->nint3++ && !d->why_int3[0])
			snprintf(d->why_int3, sizeof d->why_int3, "another probe's site was placed inside its jump");
		const struct abase *b = &d->base[i];
		struct abase now;
		if (d->paused)
			now = d->paused[i];
		else
			site_counters(s, &now);
		uint64_t hits = now.hits - b->hits;
		p->hits += hits;
		taken += now.taken - b->taken;
		stk_taken += now.stack_taken - b->stack_taken;
		stk_lost += now.stack_lost - b->stack_lost;
		stk_ticks += now.stack_ticks - b->stack_ticks;
		stk_walked += now.stack_walked - b->stack_walked;
		stk_walk_ticks += now.stack_walk_ticks - b->stack_walk_ticks;
		if (!cs)
			continue;
		cs->calls += hits;
		if (at_offset)
			continue;
		cs->returns += now.returns - b->returns;
		cs->total += ns_of(now.ticks_total - b->ticks_total);
		uint64_t mn = ns_of(s->ticks_min), mx = ns_of(s->ticks_max);
		if (s->returns && (!cs->min || mn < cs->min))
			cs->min = mn;
		if (mx > cs->max)
			cs->max = mx;
		for (int c = 0; c < PA_CALLERS; c++)
			if (s->callers[c].ret && now.callers[c] > b->callers[c])
				callstats_caller_n(cs, s->callers[c].ret, now.callers[c] - b->callers[c]);
		cs->lost += now.callers_lost - b->callers_lost;
	}
	if (p->ops == &agent_plugin && d->plugin1)
		/* Its hits are its pre handler's runs, which the agent counts per
		 * probe (src/rt/probe_plugin.c), by the plugin the hit took before
		 * anything was counted: the site's counter is not the probe's
		 * alone.  A site record taken again after a deletion (agent_be.c)
		 * still counts a hit of the probe before, from a thread that was
		 * inside the old placement; to the new probe it would be a hit
		 * without its pre call.  While the probe is disabled nothing runs
		 * its handlers: its hits stop there, as the other kinds'. */
		p->hits = __atomic_load_n(&agent_be_plugins(&agent_sess)->probes[d->plugin1 - 1].hits, __ATOMIC_ACQUIRE);
	if (p->ops == &agent_branch)
		branch_set(p, taken, p->hits >= taken ? p->hits - taken : 0);
	if (p->ops == &agent_stack_ops && p->data) {
		/* Its hits are its stacks: those unwound (agent_stack.c) and those the agent dropped (a
		 * site shared with another probe counts on after agent_remove stopped the copies; a copy
		 * still in a ring is counted once drained). */
		uint64_t hits = stack_set_agent(p, stk_lost, stk_taken, ns_of(stk_ticks), agent_stack_copy);
		stack_set_walked(p, stk_walked, ns_of(stk_walk_ticks));
		p->hits = hits;
	}
}

static void sites_json(struct adata *d, struct json *j)
{
	json_int(j, "sites", d->nsites);
	json_int(j, "int3_sites", d->nint3);
	if (d->nint3)
		json_str(j, "int3_reason", d->why_int3);
}

/* The kind p is of (kind_*.c): its data is p->data, its output p's. */
static const struct kind_ops *kind_of(const struct probe *p)
{
	return kind_find(p->ops->name);
}

/* A probe's output: its kind's (a func probe's without the exits, which
 * are the ptrace engine's), then its sites and why any is an int3. */
static void agent_json(struct probe *p, struct json *j)
{
	struct adata *d = p->edata;
	if (!d)
		return;
	if (p->ops != &agent_func)
		kind_of(p)->json(p, j);
	else if (func_stats(p))
		func_stats_json(p, func_stats(p), j);
	sites_json(d, j);
}

static void agent_table(struct probe *p, FILE *f)
{
	if (p->edata)
		kind_of(p)->table(p, f);
}

/* A plugin probe's fini, in sonde, while the shared area (its result) is
 * still mapped. */
void agent_plugin_settle(struct engine *e)
{
	/* 1 s for them all: a handler that blocks, a program that died inside one */
	uint64_t deadline = now_ns() + 1000000000ull;
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		struct adata *d = p->edata;
		if (p->ops != &agent_plugin || !d || !p->data || !d->plugin1)
			continue;
		const struct pa_pprobe *pp = &agent_be_plugins(&agent_sess)->probes[d->plugin1 - 1];
		for (int k = 0; __atomic_load_n(&pp->done, __ATOMIC_ACQUIRE) < p->hits && now_ns() < deadline; k++) {
			if (k < 2000) {
				sched_yield();   /* a thread preempted between its two counts needs a CPU */
				continue;
			}
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
}

void agent_plugin_fini(struct probe *p)
{
	if (p->ops != &agent_plugin || !p->data)
		return;
	kind_plugin.free(p);
	p->data = NULL;
}

/* Both the kind's data and the agent's. */
static void afree(struct probe *p)
{
	kind_of(p)->free(p);
	p->data = NULL;
	struct adata *d = p->edata;
	if (d) {
		free(d->sites);
		free(d->base);
		free(d->paused);
		free(d->prep);
		free(d);
	}
	p->edata = NULL;
}

/* --- branch: a site at the conditional jump of the line, whose condition
 * the agent evaluates on the flags at each hit (taken / not taken). */

/* The x86 condition of the conditional jump in code[0..len) (PA_CC_* for
 * jrcxz/jecxz), or -1. */
static int jcc_cond(const uint8_t *code, int len)
{
	int i = 0, a32 = 0;
	while (i < len && (code[i] == 0x2e || code[i] == 0x3e || code[i] == 0xf2 || code[i] == 0x67)) {
		a32 |= code[i] == 0x67;
		i++;
	}
	if (i >= len)
		return -1;
	uint8_t b = code[i];
	if (b >= 0x70 && b <= 0x7f)
		return b & 0xf;
	if (b == 0x0f && i + 1 < len && code[i + 1] >= 0x80 && code[i + 1] <= 0x8f)
		return code[i + 1] & 0xf;
	if (b == 0xe3)
		return a32 ? PA_CC_ECXZ : PA_CC_RCXZ;
	return -1; /* loop, loope, loopne */
}

/* --- time: each site of the probe keeps its own numbers in its time
 * record (pa_time, rt/probes.c time_hit); the latest hit per thread is the
 * probe's (its slot in every thread's memory in the agent). */

/* Clock ticks of the agent's sites into now_ns's clock. */
static uint64_t mono_of(uint64_t ticks)
{
	if (!ticks || ticks_per_ns <= 0)
		return 0;
	return agent_c0.mono_ns + (uint64_t)((double)(int64_t)(ticks - agent_c0.ticks) / ticks_per_ns);
}

/* The agent's numbers of p's time sites into kind_time's. */
static void time_collect(struct probe *p, struct adata *d)
{
	uint64_t hist[64] = { 0 }, first = 0, last = 0;
	struct time_agg a = { .hist = hist };
	for (int i = 0; i < d->nsites; i++) {
		const struct pa_time *t = &agent_sess.pa->sites[d->sites[i]].time;
		uint64_t f = __atomic_load_n(&t->first, __ATOMIC_RELAXED), l = __atomic_load_n(&t->last, __ATOMIC_RELAXED);
		uint64_t k = __atomic_load_n(&t->n, __ATOMIC_RELAXED);
		if (f && (!first || f < first))
			first = f;
		if (l > last)
			last = l;
		if (k && (!a.n || t->min_ns < a.min))
			a.min = t->min_ns;
		if (t->max_ns > a.max)
			a.max = t->max_ns;
		a.n += k;
		a.total += t->total_ns;
		for (int b = 0; b < 64; b++)
			hist[b] += t->hist[b];
	}
	a.first = mono_of(first);
	a.last = mono_of(last);
	time_set(p, d->tprev_id, &a);
}

/* A time probe goes: the one that measured from it stops (kind_time.c:
 * intervals only from a previous probe still in), and its sites stop timing. */
static void time_removed(struct engine *e, struct probe *p, struct adata *d)
{
	for (int i = 0; i < d->nsites; i++)
		__atomic_store_n(&agent_sess.pa->sites[d->sites[i]].time.slot1, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *q = e->probes[i];
		struct adata *qd = q->ops == &agent_time ? q->edata : NULL;
		if (!qd || qd->tprev != p)
			continue;
		for (int k = 0; k < qd->nsites; k++)
			__atomic_store_n(&agent_sess.pa->sites[qd->sites[k]].time.prev1, 0, __ATOMIC_RELEASE);
		qd->tprev = NULL;
	}
}

/* --- stack: each site copies the registers and the stack at a hit into
 * the thread's stack ring (src/rt/probe_stack.c); agent_stack.c unwinds the
 * copies into kind_stack.c's table, whose output is the probe's. */

static void stack_table_after(struct probe *p, FILE *f)
{
	kind_stack.table_after(p, f);
}

int agent_probe_stack(struct probe *p, const int **sites)
{
	struct adata *d = p->ops == &agent_stack_ops ? p->edata : NULL;
	if (!d || d->frozen || !p->data)
		return 0;
	*sites = d->sites;
	return d->nsites;
}

/* The stack rings' offset in the area (0: none). */
uint64_t agent_stk_off(void)
{
	return agent_sess.stacks ? pa_area_size(PA_MAX_SITES) + (agent_sess.record ? pa_rec_size() : 0) : 0;
}

/* --- the sites (place.h): kind_place sets every kind up; the agent places
 * each site (agent_be.c) with what its record needs, and keeps what it
 * counts per probe in p->edata. */

/* Before the first site: the agent's refusals, then its adata. */
static int ag_begin(struct engine *e, struct probe *p, int nsites, char *err, size_t n)
{
	if (p->ops == &agent_time && agent_time_slots >= PA_TIME_MAX) {
		snprintf(err, n, "at most %d time probes in a session on the agent engine (use --engine=ptrace)",
		         PA_TIME_MAX);
		return -1;
	}
	if (p->ops == &agent_stack_ops && !agent_sess.stacks) {
		snprintf(err, n, "the session began without stack rings (a stack probe added later: --engine=ptrace "
		         "runs it)");
		return -1;
	}
	struct adata *d = adata_of(p, err, n);
	if (!d)
		return -1;
	if (p->ops == &agent_var || p->ops == &agent_assert || p->ops == &agent_branch) {
		if (!(d->prep = calloc((size_t)nsites, sizeof *d->prep))) {
			snprintf(err, n, "out of memory");
			return -1;
		}
	} else if (p->ops == &agent_time) {
		/* The previous one: kind_time.c's rule (time_data_new), among the agent's probes. */
		for (int i = e->nprobes - 1; i >= 0 && !d->tprev; i--) {
			struct probe *q = e->probes[i];
			if (q != p && q->ops == &agent_time && !q->removed && q->edata)
				d->tprev = q;
		}
		d->tprev_id = d->tprev ? d->tprev->id : 0;
		d->tslot = ++agent_time_slots;
		agent_calibrate();
	} else if (p->ops == &agent_stack_ops && agent_sess.stack_walk)
		agent_stack_table(e, agent_sess.pa, agent_stk_off(), NULL);
	return 0;
}

/* A var or assert probe's expression at s and the agent's program of it
 * (kept for ag_place). */
static struct expr *ag_compile(struct engine *e, struct probe *p, const struct probe_site *s, char *err, size_t n)
{
	(void)e;
	struct adata *d = p->edata;
	struct expr *x;
	char why[300];
	int rc = agent_var_compile_at(&p->sp, &s->la, &x, &d->prep[s->i].var, &d->no_value, why, sizeof why);
	if (!rc)
		return x;
	snprintf(err, n, "%s%s", rc == -2 ? "cannot run on the agent: " : "", why);
	expr_free(x);
	return NULL;
}

/* A branch probe's jump (place.c's), if the agent evaluates its condition
 * (kept for ag_place). */
static int ag_branch(struct engine *e, struct probe *p, struct probe_site *s, char *err, size_t n)
{
	struct adata *d = p->edata;
	if (site_branch_local(e, p, s, err, n))
		return -1;
	uint8_t code[16];
	uint64_t len = s->next - s->la.addr;
	int cc = len <= sizeof code && !engine_read_code(e, s->la.addr, code, (size_t)len) ? jcc_cond(code, (int)len)
	                                                                                    : -1;
	if (cc < 0) {
		snprintf(err, n, "'%s' at 0x%llx: the agent does not evaluate it (use --engine=ptrace)", s->insn,
		         (unsigned long long)s->la.addr);
		return -1;
	}
	d->prep[s->i].cc = cc;
	return 0;
}

/* plugin (ABI 2): its hits call the plugin's handlers in the program
 * (agent_plugin.c, src/rt/probe_plugin.c); its context is in sonde. */
static int ag_plugin_ctx(struct engine *e, struct probe *p, uint64_t addr, char *err, size_t n)
{
	(void)e;
	struct adata *d = adata_of(p, err, n);
	if (!d)
		return -1;
	int k = agent_plugin_start(p, &agent_sess, addr, err, n);
	d->plugin1 = k + 1;
	return k < 0 ? -1 : 0;
}

/* A site of the agent's: a func's CALL at the entry (the return is caught
 * by replacing the return address, so .cold parts and tail calls are
 * returns too), a COUNT elsewhere, with the record of the kind. */
static int ag_place(struct engine *e, struct probe *p, struct probe_site *s, char *err, size_t n)
{
	(void)e;
	struct adata *d = p->edata;
	uint32_t kind = PA_KIND_COUNT;
	struct pa_time tm = { .slot1 = (uint32_t)d->tslot, .min_ns = UINT64_MAX };
	switch (s->what) {
	case SITE_CALL: kind = PA_KIND_CALL; break;
	case SITE_VALUE:
		kind = PA_KIND_VAR;
		agent_sess.next_var = &d->prep[s->i].var;
		break;
	case SITE_TIME:
		kind = PA_KIND_TIME;
		if (d->tprev)
			tm.prev1 = (uint32_t)((struct adata *)d->tprev->edata)->tslot;
		agent_sess.next_time = &tm;
		break;
	case SITE_STACK:
		kind = PA_KIND_STACK;
		agent_sess.next_stack = agent_stack_copy;
		break;
	case SITE_PLUGIN:
		kind = PA_KIND_PLUGIN;
		agent_sess.next_plugin1 = (uint32_t)d->plugin1;
		agent_sess.next_post = s->want_post;
		break;
	default: break;
	}
	int rc = add_site(d, s->la.addr, kind, fn_start(&s->la), s->la.fn.size, err, n);
	agent_sess.next_var = NULL;
	agent_sess.next_time = NULL;
	agent_sess.next_stack = 0;
	agent_sess.next_plugin1 = 0;
	agent_sess.next_post = 0;
	if (!rc && s->what == SITE_BRANCH)
		__atomic_store_n(&agent_sess.pa->sites[d->sites[d->nsites - 1]].branch_cc1, (uint32_t)d->prep[s->i].cc + 1,
		                 __ATOMIC_RELEASE);
	return rc;
}

/* p->where, and why any site is an int3. */
static void ag_placed(struct engine *e, struct probe *p, char *w, size_t wn)
{
	(void)e;
	struct adata *d = p->edata;
	free(d->prep);
	d->prep = NULL;
	size_t l = strlen(w);
	if (d->nint3 && l < wn)
		snprintf(w + l, wn - l, "; int3%s: %s", d->nint3 == d->nsites ? "" : " at some sites", d->why_int3);
}

const struct site_ops agent_sites = {
	.can = SITE_CAN_OFFSET,
	.begin = ag_begin,
	.compile = ag_compile,
	.branch = ag_branch,
	.plugin_ctx = ag_plugin_ctx,
	.place = ag_place,
	.placed = ag_placed,
};

/* The agent's kinds: set up by kind_place, their output their kind's and
 * the sites (a line probe's has no table column, as on ptrace). */
#define AGENT_KIND .needs_location = 1, .setup = kind_place, .json = agent_json, .free = afree
static const struct kind_ops agent_func = { .name = "func", AGENT_KIND, .table = agent_table };
static const struct kind_ops agent_line = { .name = "line", AGENT_KIND };
static const struct kind_ops agent_branch = { .name = "branch", AGENT_KIND, .table = agent_table };
static const struct kind_ops agent_var = { .name = "var", AGENT_KIND, .table = agent_table };
static const struct kind_ops agent_assert = { .name = "assert", AGENT_KIND, .table = agent_table };
static const struct kind_ops agent_time = { .name = "time", AGENT_KIND, .table = agent_table };
static const struct kind_ops agent_stack_ops = {
	.name = "stack", AGENT_KIND, .table = agent_table, .table_after = stack_table_after,
};
static const struct kind_ops agent_plugin = { .name = "plugin", AGENT_KIND, .table = agent_table };
#undef AGENT_KIND

const struct kind_ops *agent_kind(const char *name)
{
	if (!strcmp(name, "var"))
		return &agent_var;
	if (!strcmp(name, "assert"))
		return &agent_assert;
	if (!strcmp(name, "func"))
		return &agent_func;
	if (!strcmp(name, "line"))
		return &agent_line;
	if (!strcmp(name, "branch"))
		return &agent_branch;
	if (!strcmp(name, "time"))
		return &agent_time;
	if (!strcmp(name, "stack"))
		return &agent_stack_ops;
	if (!strcmp(name, "plugin"))
		return &agent_plugin; /* ABI 2 (probe.c sends ABI-1 plugins to ptrace) */
	if (!strcmp(name, "sys"))
		return &kind_sys; /* sampled from /proc by sonde, as on ptrace: nothing runs in the target */
	return NULL;
}

/* Ticks per ns from the start of the session to now; the agent's time
 * sites get it as their multiplier (ns per tick << 32). */
void agent_calibrate(void)
{
	struct clock_point c1;
	clock_point_take(&c1);
	double r = clock_ticks_per_ns(&agent_c0, &c1);
	if (r <= 0 && agent_sess.pa) { /* too close to the start for a time probe's first intervals */
		struct timespec ts = { 0, 20 * 1000000 };
		nanosleep(&ts, NULL);
		clock_point_take(&c1);
		r = clock_ticks_per_ns(&agent_c0, &c1);
	}
	if (r > 0)
		ticks_per_ns = r;
	if (r > 0 && agent_sess.pa)
		__atomic_store_n(&agent_sess.pa->time_mult, (uint64_t)(4294967296.0 / r), __ATOMIC_RELAXED);
}

void agent_remove(struct engine *e, struct probe *p)
{
	struct adata *d = p->edata; /* none for sys */
	if (!d)
		return;
	agent_calibrate();
	if (p->ops == &agent_stack_ops) {
		/* Its sites take no more stacks (a site may stay for another probe); a copy under way
		 * takes microseconds: after 2 ms its record is in, and the probe's stacks are drained
		 * (one later than that is not counted, in its hits either). */
		for (int i = 0; i < d->nsites; i++)
			__atomic_store_n(&agent_sess.pa->sites[d->sites[i]].stack_bytes, 0, __ATOMIC_RELEASE);
		agent_sleep_ms(2);
		agent_stack_drain(e, agent_sess.pa, agent_stk_off());
	}
	agent_collect(p);
	d->frozen = 1;
	if (p->ops == &agent_time)
		time_removed(e, p, d);
	if (p->ops == &agent_plugin) /* its handlers are no longer called (a site may stay for another probe) */
		for (int i = 0; i < d->nsites; i++)
			__atomic_store_n(&agent_sess.pa->sites[d->sites[i]].plugin1, 0, __ATOMIC_RELEASE);
	char err[300];
	for (int i = 0; i < d->nsites; i++)
		agent_be_unref(&agent_sess, d->sites[i], err, sizeof err);
}

/* disable / enable (manager.c): the sites stay in; at the disable the
 * sites' counters are kept and the probe's numbers are computed from them
 * (they stop there); at the enable its bases move up by what the sites
 * counted in between, so its numbers go on from where they stopped.  A
 * hit counts if it came before the disable's reading or after the
 * enable's.  Var, assert, time and plugin probes' own numbers are made in
 * the target by their records' programs: the records are marked off
 * (struct pa_site.off) first, so those stop with the hits that ran before;
 * the enable marks them on after the bases moved.  A plugin probe the other
 * way round (read, then off; on, then read): a hit takes its plugin before
 * it counts (probes.c's plugin_of), so one that found the probe off and
 * counted before the disable's reading (or after the enable's) would be a
 * hit without its pre call; this way there is never a pre call fewer than
 * hits, at most one in flight more. */
int agent_enable(struct engine *e, struct probe *p, int on, char *err, size_t n)
{
	(void)e;
	struct adata *d = p->edata; /* none for sys */
	if (!d || !agent_sess.pa) {
		snprintf(err, n, "the agent engine cannot disable %s probes (del removes one; --engine=ptrace disables any)",
		         p->ops->name);
		return -1;
	}
	int plugin = p->ops == &agent_plugin;
	int own = plugin || p->ops == &agent_var || p->ops == &agent_assert || p->ops == &agent_time ||
	          p->ops == &agent_stack_ops; /* the records run this probe's programs */
	if (!on) {
		struct abase *v = calloc((size_t)(d->nsites ? d->nsites : 1), sizeof *v);
		if (!v) {
			snprintf(err, n, "out of memory");
			return -1;
		}
		for (int i = 0; own && !plugin && i < d->nsites; i++)
			__atomic_store_n(&agent_sess.pa->sites[d->sites[i]].off, 1, __ATOMIC_SEQ_CST);
		for (int i = 0; i < d->nsites; i++)
			site_counters(&agent_sess.pa->sites[d->sites[i]], &v[i]);
		for (int i = 0; plugin && i < d->nsites; i++)
			__atomic_store_n(&agent_sess.pa->sites[d->sites[i]].off, 1, __ATOMIC_SEQ_CST);
		d->paused = v;
		return 0;
	}
	for (int i = 0; plugin && i < d->nsites; i++)
		__atomic_store_n(&agent_sess.pa->sites[d->sites[i]].off, 0, __ATOMIC_SEQ_CST);
	for (int i = 0; i < d->nsites; i++) {
		struct abase now, *b = &d->base[i];
		const struct abase *was = &d->paused[i];
		site_counters(&agent_sess.pa->sites[d->sites[i]], &now);
		b->hits += now.hits - was->hits;
		b->returns += now.returns - was->returns;
		b->ticks_total += now.ticks_total - was->ticks_total;
		b->callers_lost += now.callers_lost - was->callers_lost;
		b->taken += now.taken - was->taken;
		b->stack_taken += now.stack_taken - was->stack_taken;
		b->stack_lost += now.stack_lost - was->stack_lost;
		b->stack_ticks += now.stack_ticks - was->stack_ticks;
		b->stack_walked += now.stack_walked - was->stack_walked;
		b->stack_walk_ticks += now.stack_walk_ticks - was->stack_walk_ticks;
		for (int c = 0; c < PA_CALLERS; c++)
			b->callers[c] += now.callers[c] - was->callers[c];
	}
	for (int i = 0; own && !plugin && i < d->nsites; i++)
		__atomic_store_n(&agent_sess.pa->sites[d->sites[i]].off, 0, __ATOMIC_SEQ_CST);
	free(d->paused);
	d->paused = NULL;
	return 0;
}

/* --- --record (agent_record.c) -------------------------------------------- */

int agent_probe_recs(struct probe *p, const int **sites, enum arec_what *what)
{
	struct adata *d = p->edata; /* none for sys */
	*what = AREC_NONE;
	if (!d || d->frozen)
		return 0;
	if (p->ops == &agent_func)
		*what = p->sp.off ? AREC_HIT : AREC_SLICE;
	else if (p->ops == &agent_line)
		*what = AREC_HIT;
	else if (p->ops == &agent_branch)
		*what = AREC_BRANCH;
	else if (p->ops == &agent_var)
		*what = AREC_VAR;
	else if (p->ops == &agent_assert)
		*what = AREC_ASSERT;
	else if (p->ops == &agent_time)
		*what = AREC_TIME;
	else if (p->ops == &agent_plugin || p->ops == &agent_stack_ops)
		*what = AREC_HIT;
	*sites = d->sites;
	return d->nsites;
}

void agent_assert_values(struct probe *p, int role, const int64_t *vals, uint32_t mask, char *buf, size_t n)
{
	struct adata *d = p->edata;
	buf[0] = 0;
	if (!d || !p->data || (p->ops != &agent_var && p->ops != &agent_assert) || role < 0 || role >= d->nsites)
		return;
	struct expr *x = var_site_expr(p, role);
	if (x) {
		expr_set_values_dbl(x, vals, mask, agent_sess.pa->sites[d->sites[role]].var.fsave);
		expr_values(x, buf, n);
	}
}

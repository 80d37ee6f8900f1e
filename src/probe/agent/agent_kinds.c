/* agent_kinds.c — the probe kinds on the agent engine (agent_kinds.h).
 *
 * The kinds here only place sites (agent_be.c) and, at the end, read what
 * the agent's handlers counted in the shared memory: a func probe is one
 * CALL site at the entry (the return is caught by replacing the return
 * address, so .cold parts and tail calls are returns too), a line probe a
 * COUNT site at each address of the line; branch, var, assert and time
 * probes add what the agent evaluates at a site (a condition, a bytecode
 * program, a time record); a stack probe's sites copy the stack into the
 * thread's stack ring, which agent_stack.c unwinds.  Their JSON and table
 * are the ptrace kinds' (callstats.c for func, kind_line.c, kind_var.c,
 * kind_time.c, kind_stack.c for the others, handed the agent's numbers),
 * plus the sites and why any is an int3.  Removing, disabling and enabling
 * a probe (the manager's hooks) work on the same numbers. */
#include "probe/agent/agent_kinds.h"

#include "common/json.h"
#include "probe/agent/agent_plugin.h"
#include "sonde/probe.h"
#include "probe/agent/agent_expr.h"
#include "probe/agent/agent_record.h"
#include "probe/agent/agent_stack.h"
#include "probe/agent/agent_var.h"
#include "probe/engine.h"
#include "probe/expr.h"
#include "probe/kind.h"
#include "probe/probe.h"
#include "probe/resolve.h"
#include "sym/vars.h"

#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <time.h>

static double ticks_per_ns;
int agent_time_slots;         /* time probes numbered in this session (pa_time.slot1) */
struct clock_point agent_c0;  /* the start of the session: the agent's clock ticks from here */
static const struct kind_ops agent_time;
static void time_collect(struct probe *p, struct adata *d);

static void site_counters(const struct pa_site *s, struct abase *o);
uint32_t agent_stack_copy = PA_STK_COPY_DEF; /* --stack-copy: bytes a stack probe's hit copies */

void agent_sleep_ms(int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000 };
	nanosleep(&ts, NULL);
}

static struct adata *adata_new(struct probe *p)
{
	struct adata *d = calloc(1, sizeof *d);
	if (d)
		callstats_init(&d->cs);
	p->data = d;
	return d;
}

/* A probe at a location: its addresses (*v, *nv: the caller frees them)
 * and its adata; NULL with err set (nothing to free). */
static struct adata *adata_at_locations(struct probe *p, struct loc_addr **v, int *nv, char *err, size_t n)
{
	if (resolve_location(p->e, &p->sp, v, nv, err, n))
		return NULL;
	struct adata *d = adata_new(p);
	if (!d) {
		snprintf(err, n, "out of memory");
		free(*v);
	}
	return d;
}

static int add_site(struct probe *p, struct adata *d, uint64_t addr, uint32_t kind, uint64_t fn, uint64_t fn_size,
                    char *err, size_t n)
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
	(void)p;
	return 0;
}

/* The run-time start of la's function. */
static uint64_t fn_start(const struct loc_addr *la)
{
	return la->mod && la->fn.size ? la->fn.start + la->mod->bias : 0;
}

static void where_suffix(struct probe *p, struct adata *d)
{
	if (!d->nint3 || !p->where)
		return;
	char w[600];
	snprintf(w, sizeof w, "%s; int3%s: %s", p->where, d->nint3 == d->nsites ? "" : " at some sites", d->why_int3);
	free(p->where);
	p->where = strdup(w);
}

static int func_setup(struct probe *p, char *err, size_t n)
{
	struct loc_addr la;
	if (resolve_function_offset(p->e, &p->sp, &la, err, n))
		return -1;
	struct adata *d = adata_new(p);
	if (!d) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	d->at_offset = p->sp.off != 0;
	if (add_site(p, d, la.addr, d->at_offset ? PA_KIND_COUNT : PA_KIND_CALL, fn_start(&la), la.fn.size, err, n))
		return -1;
	char w[400];
	resolve_describe(p->e, la.addr, w, sizeof w);
	p->where = strdup(w);
	where_suffix(p, d);
	return 0;
}

/* plugin (ABI 2): a site at each address of the location whose hits call
 * the plugin's handlers in the program (agent_plugin.c, src/rt/probe_plugin.c). */
static int plugin_setup(struct probe *p, char *err, size_t n)
{
	struct loc_addr *v;
	int nv;
	if (plugin_locate(p, &v, &nv, err, n))
		return -1;
	struct adata *d = adata_new(p);
	int rc = d ? 0 : -1, k = -1;
	if (!d)
		snprintf(err, n, "out of memory");
	if (!rc && (k = agent_plugin_start(p, &agent_sess, v[0].addr, &d->pdata, err, n)) < 0)
		rc = -1;
	agent_sess.next_plugin1 = (uint32_t)(k + 1);
	if (d)
		d->plugin1 = k + 1;
	agent_sess.next_post = p->e->plugin->post != NULL;
	for (int i = 0; i < nv && !rc; i++)
		rc = add_site(p, d, v[i].addr, PA_KIND_PLUGIN, fn_start(&v[i]), v[i].fn.size, err, n);
	agent_sess.next_plugin1 = 0;
	agent_sess.next_post = 0;
	if (!rc) {
		resolve_set_where_n(p, v[0].addr, nv);
		where_suffix(p, d);
	}
	free(v);
	return rc;
}

static int line_setup(struct probe *p, char *err, size_t n)
{
	struct loc_addr *v;
	int nv;
	struct adata *d = adata_at_locations(p, &v, &nv, err, n);
	if (!d)
		return -1;
	int rc = 0;
	for (int i = 0; i < nv && !rc; i++)
		rc = add_site(p, d, v[i].addr, PA_KIND_COUNT, fn_start(&v[i]), v[i].fn.size, err, n);
	if (!rc) {
		resolve_set_where_n(p, v[0].addr, nv);
		where_suffix(p, d);
	}
	free(v);
	return rc;
}

/* --- var ----------------------------------------------------------------- */

static void sites_json(struct adata *d, struct json *j);

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

static void var_free_vdata(struct probe *p, struct adata *d)
{
	if (!d || !d->vdata)
		return;
	void *own = p->data;
	p->data = d->vdata;
	kind_var.free(p);
	p->data = own;
	d->vdata = NULL;
}

/* var_setup_sites' compiler on the agent: the expression and its bytecode. */
struct vcompile {
	const struct spec *sp;
	struct pa_var *progs;   /* one per site */
	const char *no_value;
};

static int vcompile(void *ctx, int i, const struct loc_addr *la, struct expr **x, char *err, size_t n)
{
	struct vcompile *c = ctx;
	struct pa_var *g = realloc(c->progs, (size_t)(i + 1) * sizeof *g);
	if (!g) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	c->progs = g;
	memset(&g[i], 0, sizeof g[i]);
	char why[300];
	int rc = agent_var_compile_at(c->sp, la, x, &g[i], &c->no_value, why, sizeof why);
	if (rc)
		snprintf(err, n, "%s%s", rc == -2 ? "cannot run on the agent: " : "", why);
	return rc ? -1 : 0;
}

static int var_setup(struct probe *p, char *err, size_t n)
{
	struct loc_addr *v;
	int nv;
	struct vcompile c = { .sp = &p->sp };
	int rc = var_setup_sites(p, &v, &nv, vcompile, &c, err, n);
	if (!v) {
		free(c.progs);
		return -1;
	}
	void *vdata = p->data;
	struct adata *d = adata_new(p);
	if (!d) {
		p->data = vdata;
		kind_var.free(p);
		p->data = NULL;
		free(c.progs);
		free(v);
		snprintf(err, n, "out of memory");
		return -1;
	}
	d->vdata = vdata;
	d->no_value = c.no_value;
	d->is_assert = !strcmp(p->sp.kind, "assert");
	for (int i = 0; i < nv && !rc; i++) {
		agent_sess.next_var = &c.progs[i];
		rc = add_site(p, d, v[i].addr, PA_KIND_VAR, fn_start(&v[i]), v[i].fn.size, err, n);
		agent_sess.next_var = NULL;
	}
	if (!rc) {
		void *own = p->data;
		p->data = vdata;
		resolve_set_where(p, v[0].addr, expr_describe(var_site_expr(p, 0)));
		p->data = own;
		where_suffix(p, d);
	}
	free(c.progs);
	free(v);
	return rc;
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
	void *own = p->data;
	p->data = d->vdata;
	if (d->is_assert) {
		assert_collect(p, d);
		p->data = own;
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
	p->data = own;
}

/* var and branch probes keep the ptrace engine's statistics (kind_var.c,
 * kind_line.c) in d->vdata / d->ldata: their output is those kinds', run
 * on them, then the sites. */
static void borrowed_json(struct probe *p, struct json *j, const struct kind_ops *k, void *inner)
{
	struct adata *d = p->data;
	p->data = inner;
	k->json(p, j);
	p->data = d;
	sites_json(d, j);
}

static void borrowed_table(struct probe *p, FILE *f, const struct kind_ops *k, void *inner)
{
	struct adata *d = p->data;
	p->data = inner;
	if (k->table)
		k->table(p, f);
	p->data = d;
}

/* The ptrace kind whose numbers a var, assert, time, plugin or stack probe
 * of the agent keeps, and those numbers (NULL when it has none). */
static const struct kind_ops *borrowed_kind(struct probe *p, void **inner)
{
	const struct adata *d = p->data;
	*inner = !d ? NULL : d->vdata ? d->vdata : d->tdata ? d->tdata : d->pdata ? d->pdata : d->sdata;
	if (!*inner)
		return NULL;
	return d->vdata ? (d->is_assert ? &kind_assert : &kind_var) : d->tdata ? &kind_time :
	       d->pdata ? &kind_plugin : &kind_stack;
}

static void own_json(struct probe *p, struct json *j)
{
	void *inner;
	const struct kind_ops *k = borrowed_kind(p, &inner);
	if (k)
		borrowed_json(p, j, k, inner);
}

static void own_table(struct probe *p, FILE *f)
{
	void *inner;
	const struct kind_ops *k = borrowed_kind(p, &inner);
	if (k)
		borrowed_table(p, f, k, inner);
}

static uint64_t ns_of(uint64_t ticks)
{
	return ticks_per_ns > 0 ? (uint64_t)((double)ticks / ticks_per_ns) : ticks;
}

/* The counters of p's sites, into p->hits and d->cs. */
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

void agent_collect(struct probe *p)
{
	struct adata *d = p->data;
	if (!d || p->ops == &kind_sys) /* sys: sonde's own samples (kind_sys.c), no sites */
		return;
	const struct pa_hdr *h = agent_sess.pa;
	if (d->frozen || !h)
		return;
	p->hits = 0;
	d->nint3 = 0;
	callstats_free(&d->cs);
	callstats_init(&d->cs);
	if (d->vdata)
		var_collect(p, d);
	if (d->tdata)
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
		if (p->ops->name[0] != 'f')
			continue;
		d->cs.calls += hits;
		if (d->at_offset)
			continue;
		d->cs.returns += now.returns - b->returns;
		d->cs.total += ns_of(now.ticks_total - b->ticks_total);
		uint64_t mn = ns_of(s->ticks_min), mx = ns_of(s->ticks_max);
		if (s->returns && (!d->cs.min || mn < d->cs.min))
			d->cs.min = mn;
		if (mx > d->cs.max)
			d->cs.max = mx;
		for (int c = 0; c < PA_CALLERS; c++)
			if (s->callers[c].ret && now.callers[c] > b->callers[c])
				callstats_caller_n(&d->cs, s->callers[c].ret, now.callers[c] - b->callers[c]);
		d->cs.lost += now.callers_lost - b->callers_lost;
	}
	if (d->pdata && d->plugin1)
		/* Its hits are its pre handler's runs, which the agent counts per
		 * probe (src/rt/probe_plugin.c), by the plugin the hit took before
		 * anything was counted: the site's counter is not the probe's
		 * alone.  A site record taken again after a deletion (agent_be.c)
		 * still counts a hit of the probe before, from a thread that was
		 * inside the old placement; to the new probe it would be a hit
		 * without its pre call.  While the probe is disabled nothing runs
		 * its handlers: its hits stop there, as the other kinds'. */
		p->hits = __atomic_load_n(&agent_be_plugins(&agent_sess)->probes[d->plugin1 - 1].hits, __ATOMIC_ACQUIRE);
	if (d->ldata) {
		p->data = d->ldata;
		branch_set(p, taken, p->hits >= taken ? p->hits - taken : 0);
		p->data = d;
	}
	if (d->sdata) {
		/* Its hits are its stacks: those unwound (agent_stack.c) and those the agent dropped (a
		 * site shared with another probe counts on after agent_remove stopped the copies; a copy
		 * still in a ring is counted once drained). */
		p->data = d->sdata;
		uint64_t hits = stack_set_agent(p, stk_lost, stk_taken, ns_of(stk_ticks), agent_stack_copy);
		stack_set_walked(p, stk_walked, ns_of(stk_walk_ticks));
		p->data = d;
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

static void func_json(struct probe *p, struct json *j)
{
	struct adata *d = p->data;
	if (!d)
		return;
	func_stats_json(p, &d->cs, j);
	sites_json(d, j);
}

static void func_table(struct probe *p, FILE *f)
{
	struct adata *d = p->data;
	if (d)
		func_stats_table(p, &d->cs, d->at_offset, f);
}

static void line_json(struct probe *p, struct json *j)
{
	struct adata *d = p->data;
	if (!d)
		return;
	json_int(j, "addresses", d->nsites);
	sites_json(d, j);
}

/* A plugin probe's fini, in sonde, while the shared area (its result) is
 * still mapped. */
void agent_plugin_settle(struct engine *e)
{
	/* 1 s for them all: a handler that blocks, a program that died inside one */
	uint64_t deadline = now_ns() + 1000000000ull;
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		struct adata *d = p->data;
		if (!p->ops || p->ops->setup != plugin_setup || !d || !d->pdata || !d->plugin1)
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
	if (p->ops->setup != plugin_setup) /* a sys probe's data is kind_sys.c's, not an adata */
		return;
	struct adata *d = p->data;
	if (!d || !d->pdata)
		return;
	p->data = d->pdata;
	kind_plugin.free(p);
	p->data = d;
	d->pdata = NULL;
}

static void afree(struct probe *p)
{
	struct adata *d = p->data;
	if (!d)
		return;
	agent_plugin_fini(p);
	if (d->sdata) {
		p->data = d->sdata;
		kind_stack.free(p);
		p->data = d;
	}
	callstats_free(&d->cs);
	var_free_vdata(p, d);
	if (d->tdata) {
		p->data = d->tdata;
		kind_time.free(p);
		p->data = d;
	}
	if (d->ldata) {
		p->data = d->ldata;
		kind_branch.free(p);
		p->data = d;
	}
	free(d->sites);
	free(d->base);
	free(d->paused);
	free(d);
}

/* --- branch: a site at the conditional jump of the line, whose condition
 * the agent evaluates on the flags at each hit (taken / not taken). */

/* The x86 condition of a conditional jump (PA_CC_* for jrcxz/jecxz), or -1. */
static int jcc_cond(const struct arch_insn *in)
{
	int i = 0, a32 = 0;
	while (i < in->len && (in->bytes[i] == 0x2e || in->bytes[i] == 0x3e || in->bytes[i] == 0xf2 ||
	                       in->bytes[i] == 0x67)) {
		a32 |= in->bytes[i] == 0x67;
		i++;
	}
	if (i >= in->len)
		return -1;
	uint8_t b = in->bytes[i];
	if (b >= 0x70 && b <= 0x7f)
		return b & 0xf;
	if (b == 0x0f && i + 1 < in->len && in->bytes[i + 1] >= 0x80 && in->bytes[i + 1] <= 0x8f)
		return in->bytes[i + 1] & 0xf;
	if (b == 0xe3)
		return a32 ? PA_CC_ECXZ : PA_CC_RCXZ;
	return -1; /* loop, loope, loopne */
}

static int branch_setup(struct probe *p, char *err, size_t n)
{
	struct loc_addr *v;
	int nv;
	struct adata *d = adata_at_locations(p, &v, &nv, err, n);
	if (!d)
		return -1;
	int rc = 0;
	/* kind_line.c's counts and output, under d. */
	if (!rc) {
		p->data = NULL;
		rc = line_data_new(p, nv);
		d->ldata = p->data;
		p->data = d;
		if (rc)
			snprintf(err, n, "out of memory");
	}
	uint64_t first = 0;
	for (int i = 0; i < nv && !rc; i++) {
		struct arch_insn in;
		if ((rc = branch_find_jcc(p, &v[i], &in, err, n)))
			break;
		int cc = jcc_cond(&in);
		if (cc < 0) {
			snprintf(err, n, "'%s' at 0x%llx: the agent does not evaluate it (use --engine=ptrace)", in.text,
			         (unsigned long long)in.addr);
			rc = -1;
			break;
		}
		uint64_t fn = v[i].mod && v[i].fn.size ? v[i].fn.start + v[i].mod->bias : 0;
		if ((rc = add_site(p, d, in.addr, PA_KIND_COUNT, fn, v[i].fn.size, err, n)))
			break;
		__atomic_store_n(&agent_sess.pa->sites[d->sites[d->nsites - 1]].branch_cc1, (uint32_t)cc + 1, __ATOMIC_RELEASE);
		if (!first) {
			first = in.addr;
			p->data = d->ldata;
			branch_set_insn(p, in.text);
			p->data = d;
		}
	}
	if (!rc) {
		resolve_set_where_n(p, first, nv);
		where_suffix(p, d);
	}
	free(v);
	return rc;
}

static void branch_json(struct probe *p, struct json *j)
{
	struct adata *d = p->data;
	if (d && d->ldata)
		borrowed_json(p, j, &kind_branch, d->ldata);
}

static void branch_table(struct probe *p, FILE *f)
{
	struct adata *d = p->data;
	if (d && d->ldata)
		borrowed_table(p, f, &kind_branch, d->ldata);
}

/* --- time: each site of the probe keeps its own numbers in its time
 * record (pa_time, rt/probes.c time_hit); the latest hit per thread is the
 * probe's (its slot in every thread's memory in the agent). */

static int time_setup(struct probe *p, char *err, size_t n)
{
	struct loc_addr *v;
	int nv;
	struct adata *d = adata_at_locations(p, &v, &nv, err, n);
	if (!d)
		return -1;
	int rc = 0;
	if (!rc && agent_time_slots >= PA_TIME_MAX) {
		snprintf(err, n, "at most %d time probes in a session on the agent engine (use --engine=ptrace)",
		         PA_TIME_MAX);
		rc = -1;
	}
	if (!rc) {
		p->data = NULL;
		rc = time_data_new(p);
		d->tdata = p->data;
		p->data = d;
		if (rc)
			snprintf(err, n, "out of memory");
	}
	if (rc) {
		free(v);
		return -1;
	}
	/* The previous one: kind_time.c's rule (time_data_new), among the agent's probes. */
	for (int i = p->e->nprobes - 1; i >= 0 && !d->tprev; i--) {
		struct probe *q = p->e->probes[i];
		if (q != p && q->ops == &agent_time && !q->removed && q->data)
			d->tprev = q;
	}
	d->tprev_id = d->tprev ? d->tprev->id : 0;
	d->tslot = ++agent_time_slots;
	struct pa_time tm = { .slot1 = (uint32_t)d->tslot, .min_ns = UINT64_MAX };
	if (d->tprev)
		tm.prev1 = (uint32_t)((struct adata *)d->tprev->data)->tslot;
	agent_calibrate();
	for (int i = 0; i < nv && !rc; i++) {
		agent_sess.next_time = &tm;
		rc = add_site(p, d, v[i].addr, PA_KIND_TIME, fn_start(&v[i]), v[i].fn.size, err, n);
		agent_sess.next_time = NULL;
	}
	if (!rc) {
		resolve_set_where(p, v[0].addr, NULL);
		where_suffix(p, d);
	}
	free(v);
	return rc;
}

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
	void *own = p->data;
	p->data = d->tdata;
	time_set(p, d->tprev_id, &a);
	p->data = own;
}

/* A time probe goes: the one that measured from it stops (kind_time.c:
 * intervals only from a previous probe still in), and its sites stop timing. */
static void time_removed(struct engine *e, struct probe *p, struct adata *d)
{
	for (int i = 0; i < d->nsites; i++)
		__atomic_store_n(&agent_sess.pa->sites[d->sites[i]].time.slot1, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *q = e->probes[i];
		struct adata *qd = q->ops == &agent_time ? q->data : NULL;
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

static int stack_setup(struct probe *p, char *err, size_t n)
{
	if (!agent_sess.stacks) {
		snprintf(err, n, "the session began without stack rings (a stack probe added later: --engine=ptrace "
		         "runs it)");
		return -1;
	}
	struct loc_addr *v;
	int nv;
	struct adata *d = adata_at_locations(p, &v, &nv, err, n);
	if (!d)
		return -1;
	int rc = 0;
	if (!rc) {
		p->data = NULL;
		rc = stack_data_new(p, err, n);
		d->sdata = p->data;
		p->data = d;
	}
	if (!rc && agent_sess.stack_walk)
		agent_stack_table(p->e, agent_sess.pa, agent_stk_off(), NULL);
	agent_sess.next_stack = agent_stack_copy;
	for (int i = 0; i < nv && !rc; i++)
		rc = add_site(p, d, v[i].addr, PA_KIND_STACK, fn_start(&v[i]), v[i].fn.size, err, n);
	agent_sess.next_stack = 0;
	if (!rc) {
		resolve_set_where_n(p, v[0].addr, nv);
		where_suffix(p, d);
	}
	free(v);
	return rc;
}

static void stack_table_after(struct probe *p, FILE *f)
{
	struct adata *d = p->data;
	if (!d || !d->sdata)
		return;
	p->data = d->sdata;
	kind_stack.table_after(p, f);
	p->data = d;
}

static const struct kind_ops agent_stack_ops = {
	.name = "stack", .needs_location = 1, .setup = stack_setup, .json = own_json, .table = own_table,
	.table_after = stack_table_after, .free = afree,
};

int agent_probe_stack(struct probe *p, const int **sites, void **sdata)
{
	struct adata *d = p->ops == &agent_stack_ops ? p->data : NULL;
	if (!d || d->frozen || !d->sdata)
		return 0;
	*sites = d->sites;
	*sdata = d->sdata;
	return d->nsites;
}

/* The stack rings' offset in the area (0: none). */
uint64_t agent_stk_off(void)
{
	return agent_sess.stacks ? pa_area_size(PA_MAX_SITES) + (agent_sess.record ? pa_rec_size() : 0) : 0;
}

static const struct kind_ops agent_plugin = {
	.name = "plugin", .needs_location = 1, .setup = plugin_setup, .json = own_json, .table = own_table,
	.free = afree,
};

static const struct kind_ops agent_time = {
	.name = "time", .needs_location = 1, .setup = time_setup, .json = own_json, .table = own_table,
	.free = afree,
};

static const struct kind_ops agent_branch = {
	.name = "branch", .needs_location = 1, .setup = branch_setup, .json = branch_json, .table = branch_table,
	.free = afree,
};

static const struct kind_ops agent_func = {
	.name = "func", .needs_location = 1, .setup = func_setup, .json = func_json, .table = func_table, .free = afree,
};
static const struct kind_ops agent_line = {
	.name = "line", .needs_location = 1, .setup = line_setup, .json = line_json, .free = afree,
};

static const struct kind_ops agent_var = {
	.name = "var", .needs_location = 1, .setup = var_setup, .json = own_json, .table = own_table, .free = afree,
};

static const struct kind_ops agent_assert = {
	.name = "assert", .needs_location = 1, .setup = var_setup, .json = own_json, .table = own_table,
	.free = afree,
};

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
	struct adata *d = p->data;
	if (!d || p->ops == &kind_sys)
		return;
	agent_calibrate();
	if (d->sdata) {
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
	if (d->tdata)
		time_removed(e, p, d);
	if (d->pdata) /* its handlers are no longer called (a site may stay for another probe) */
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
	struct adata *d = p->ops == &kind_sys ? NULL : p->data; /* a sys probe's data is kind_sys.c's */
	if (!d || !agent_sess.pa) {
		snprintf(err, n, "the agent engine cannot disable %s probes (del removes one; --engine=ptrace disables any)",
		         p->ops->name);
		return -1;
	}
	void *inner;
	int own = borrowed_kind(p, &inner) != NULL; /* the records run this probe's programs */
	int plugin = own && d->pdata;
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
	struct adata *d = p->data;
	*what = AREC_NONE;
	if (!d || d->frozen || p->ops == &kind_sys)
		return 0;
	if (p->ops == &agent_func)
		*what = d->at_offset ? AREC_HIT : AREC_SLICE;
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
	else if (p->ops->setup == plugin_setup || p->ops == &agent_stack_ops)
		*what = AREC_HIT;
	*sites = d->sites;
	return d->nsites;
}

void agent_assert_values(struct probe *p, int role, const int64_t *vals, uint32_t mask, char *buf, size_t n)
{
	struct adata *d = p->data;
	buf[0] = 0;
	if (!d || !d->vdata || role < 0 || role >= d->nsites)
		return;
	void *own = p->data;
	p->data = d->vdata;
	struct expr *x = var_site_expr(p, role);
	if (x) {
		expr_set_values_dbl(x, vals, mask, agent_sess.pa->sites[d->sites[role]].var.fsave);
		expr_values(x, buf, n);
	}
	p->data = own;
}

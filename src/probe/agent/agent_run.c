/* agent_run.c — `sonde probe` on the agent backend (agent_run.h).
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
 * plus the sites and why any is an int3. */
#include "probe/agent/agent_run.h"

#include "arch/arch.h"
#include "common/clock.h"
#include "common/json.h"
#include "probe/agent/agent_be.h"
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
#include "probe/manager.h"
#include "probe/modules.h"
#include "probe/probe.h"
#include "probe/probe_engine.h"
#include "probe/record.h"
#include "probe/resolve.h"
#include "probe/spec.h"
#include "sym/cache.h"
#include "sym/vars.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A site's counters when a probe started using it: a probe counts from
 * there (sites are shared, and reused after a removal). */
struct abase {
	uint64_t hits, returns, ticks_total, callers_lost, taken;
	uint64_t stack_taken, stack_lost, stack_ticks;
	uint64_t callers[PA_CALLERS];
};

struct adata {
	int *sites;
	struct abase *base;
	int nsites;
	int frozen;             /* removed: the counts were taken then */
	struct abase *paused;   /* disabled: the sites' counters then, per site (the numbers stop there) */
	int nint3;
	char why_int3[160];
	int at_offset;          /* func:F+OFF: calls only */
	struct call_stats cs;   /* func: filled at the end */
	void *vdata;            /* var, assert: kind_var.c's statistics (its p->data), filled by collect */
	int is_assert;
	void *ldata;            /* branch: kind_line.c's counts (its p->data) */
	void *tdata;            /* time: kind_time.c's numbers (its p->data), filled by collect */
	struct probe *tprev;    /* time: the time probe the intervals start from, or NULL */
	int tslot, tprev_id;    /* time: its number + 1 in the agent (pa_time.slot1), tprev's id */
	const char *no_value;   /* var: why a site has no value (vars.c's static text) */
	void *pdata;            /* plugin: kind_plugin.c's context (its p->data), agent_plugin.c */
	void *sdata;            /* stack: kind_stack.c's table (its p->data), filled by agent_stack.c */
};

static struct agent_be be;
static double ticks_per_ns;
static int time_slots;         /* time probes numbered in this session (pa_time.slot1) */
static struct clock_point c0;  /* the start of the session: the agent's clock ticks from here */
static const struct kind_ops agent_time;
static void calibrate(void);
static void time_collect(struct probe *p, struct adata *d);

static void site_counters(const struct pa_site *s, struct abase *o);
static uint32_t stack_copy = PA_STK_COPY_DEF; /* --stack-copy: bytes a stack probe's hit copies */

static void sleep_ms(int ms)
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
	int idx = agent_be_place(&be, addr, kind, fn, fn_size, why, sizeof why, err, n);
	if (idx < 0)
		return -1;
	const struct pa_site *s = &be.pa->sites[idx];
	struct abase *b = &d->base[d->nsites];
	site_counters(s, b);
	b->hits = be.hits_base;
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
	if (!rc && (k = agent_plugin_start(p, &be, v[0].addr, &d->pdata, err, n)) < 0)
		rc = -1;
	be.next_plugin1 = (uint32_t)(k + 1);
	be.next_post = p->e->plugin->post != NULL;
	for (int i = 0; i < nv && !rc; i++)
		rc = add_site(p, d, v[i].addr, PA_KIND_PLUGIN, fn_start(&v[i]), v[i].fn.size, err, n);
	be.next_plugin1 = 0;
	be.next_post = 0;
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
	if (resolve_location(p->e, &p->sp, &v, &nv, err, n))
		return -1;
	struct adata *d = adata_new(p);
	int rc = d ? 0 : -1;
	if (!d)
		snprintf(err, n, "out of memory");
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
static int var_compile_at(const struct spec *sp, const struct loc_addr *la, struct expr **x, struct pa_var *prog,
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

static int var_setup(struct probe *p, char *err, size_t n)
{
	if (!p->sp.args) {
		snprintf(err, n, "missing expression (%s:LOCATION:EXPR)", p->sp.kind);
		return -1;
	}
	struct loc_addr *v;
	int nv;
	if (resolve_location(p->e, &p->sp, &v, &nv, err, n))
		return -1;
	struct pa_var *progs = calloc((size_t)nv, sizeof *progs);
	const char *no_value = NULL;
	int rc = progs && !var_data_new(p, nv) ? 0 : -1;
	if (rc)
		snprintf(err, n, "out of memory");
	void *vdata = p->data;
	for (int i = 0; i < nv && !rc; i++) {
		struct expr *x;
		char why[300];
		rc = var_compile_at(&p->sp, &v[i], &x, &progs[i], &no_value, why, sizeof why);
		var_site_set(p, i, x, v[i].mod);
		if (rc)
			snprintf(err, n, "%s%s", rc == -2 ? "cannot run on the agent: " : "", why);
	}
	struct adata *d = adata_new(p);
	if (!d) {
		p->data = vdata;
		kind_var.free(p);
		p->data = NULL;
		free(progs);
		free(v);
		snprintf(err, n, "out of memory");
		return -1;
	}
	d->vdata = vdata;
	d->no_value = no_value;
	d->is_assert = !strcmp(p->sp.kind, "assert");
	for (int i = 0; i < nv && !rc; i++) {
		be.next_var = &progs[i];
		rc = add_site(p, d, v[i].addr, PA_KIND_VAR, fn_start(&v[i]), v[i].fn.size, err, n);
		be.next_var = NULL;
	}
	if (!rc) {
		void *own = p->data;
		p->data = vdata;
		resolve_set_where(p, v[0].addr, expr_describe(var_site_expr(p, 0)));
		p->data = own;
		where_suffix(p, d);
	}
	free(progs);
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
		const struct pa_var *v = &be.pa->sites[d->sites[i]].var;
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
		                    be.pa->sites[d->sites[all[q].role]].var.fsave);
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
		const struct pa_var *v = &be.pa->sites[d->sites[i]].var;
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
	for (int c = 0; c < PA_CALLERS; c++)
		o->callers[c] = __atomic_load_n(&s->callers[c].n, __ATOMIC_RELAXED);
}

static void collect(struct probe *p)
{
	struct adata *d = p->data;
	if (!d || p->ops == &kind_sys) /* sys: sonde's own samples (kind_sys.c), no sites */
		return;
	const struct pa_hdr *h = be.pa;
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
	uint64_t taken = 0, stk_taken = 0, stk_lost = 0, stk_ticks = 0;
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
		uint64_t hits = stack_set_agent(p, stk_lost, stk_taken, ns_of(stk_ticks), stack_copy);
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
static void plugin_fini(struct probe *p)
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
	plugin_fini(p);
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
	if (resolve_location(p->e, &p->sp, &v, &nv, err, n))
		return -1;
	struct adata *d = adata_new(p);
	int rc = d ? 0 : -1;
	if (!d)
		snprintf(err, n, "out of memory");
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
		__atomic_store_n(&be.pa->sites[d->sites[d->nsites - 1]].branch_cc1, (uint32_t)cc + 1, __ATOMIC_RELEASE);
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
	if (resolve_location(p->e, &p->sp, &v, &nv, err, n))
		return -1;
	struct adata *d = adata_new(p);
	int rc = d ? 0 : -1;
	if (!d)
		snprintf(err, n, "out of memory");
	if (!rc && time_slots >= PA_TIME_MAX) {
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
	d->tslot = ++time_slots;
	struct pa_time tm = { .slot1 = (uint32_t)d->tslot, .min_ns = UINT64_MAX };
	if (d->tprev)
		tm.prev1 = (uint32_t)((struct adata *)d->tprev->data)->tslot;
	calibrate();
	for (int i = 0; i < nv && !rc; i++) {
		be.next_time = &tm;
		rc = add_site(p, d, v[i].addr, PA_KIND_TIME, fn_start(&v[i]), v[i].fn.size, err, n);
		be.next_time = NULL;
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
	return c0.mono_ns + (uint64_t)((double)(int64_t)(ticks - c0.ticks) / ticks_per_ns);
}

/* The agent's numbers of p's time sites into kind_time's. */
static void time_collect(struct probe *p, struct adata *d)
{
	uint64_t hist[64] = { 0 }, first = 0, last = 0;
	struct time_agg a = { .hist = hist };
	for (int i = 0; i < d->nsites; i++) {
		const struct pa_time *t = &be.pa->sites[d->sites[i]].time;
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
		__atomic_store_n(&be.pa->sites[d->sites[i]].time.slot1, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *q = e->probes[i];
		struct adata *qd = q->ops == &agent_time ? q->data : NULL;
		if (!qd || qd->tprev != p)
			continue;
		for (int k = 0; k < qd->nsites; k++)
			__atomic_store_n(&be.pa->sites[qd->sites[k]].time.prev1, 0, __ATOMIC_RELEASE);
		qd->tprev = NULL;
	}
}

/* --- stack: each site copies the registers and the stack at a hit into
 * the thread's stack ring (src/rt/probe_stack.c); agent_stack.c unwinds the
 * copies into kind_stack.c's table, whose output is the probe's. */

static int stack_setup(struct probe *p, char *err, size_t n)
{
	if (!be.stacks) {
		snprintf(err, n, "the session began without stack rings (a stack probe added later: --engine=ptrace "
		         "runs it)");
		return -1;
	}
	struct loc_addr *v;
	int nv;
	if (resolve_location(p->e, &p->sp, &v, &nv, err, n))
		return -1;
	struct adata *d = adata_new(p);
	int rc = d ? 0 : -1;
	if (!d)
		snprintf(err, n, "out of memory");
	if (!rc) {
		p->data = NULL;
		rc = stack_data_new(p, err, n);
		d->sdata = p->data;
		p->data = d;
	}
	be.next_stack = stack_copy;
	for (int i = 0; i < nv && !rc; i++)
		rc = add_site(p, d, v[i].addr, PA_KIND_STACK, fn_start(&v[i]), v[i].fn.size, err, n);
	be.next_stack = 0;
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
static uint64_t stk_off(void)
{
	return be.stacks ? pa_area_size(PA_MAX_SITES) + (be.record ? pa_rec_size() : 0) : 0;
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

static const struct kind_ops *agent_kind(const char *name)
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

/* The program file of a launch: argv0 as execvp finds it. */
static char *exe_path(const char *argv0)
{
	if (strchr(argv0, '/'))
		return realpath(argv0, NULL);
	const char *path = getenv("PATH");
	for (const char *d = path ? path : "/usr/bin:/bin"; *d;) {
		size_t l = strcspn(d, ":");
		char buf[4096];
		snprintf(buf, sizeof buf, "%.*s/%s", (int)l, l ? d : ".", argv0);
		if (access(buf, X_OK) == 0)
			return realpath(buf, NULL);
		d += l;
		if (*d)
			d++;
	}
	return NULL;
}

/* Whether var spec sp compiles for the agent at every address of its
 * location, found in the program's files before the session (the running
 * process's modules, or the program file of a launch); why if not.  An
 * expression that is wrong on any engine (no such variable) is the
 * agent's to report; a location not found there goes to ptrace. */
static int var_compiles(const struct spec *sp, pid_t pid, const char *argv0, char *why, size_t n)
{
	struct engine *e = calloc(1, sizeof *e);
	int ok = 0;
	if (!e || !sp->args) {
		free(e);
		return 1;
	}
	if (pid > 0) {
		if (modules_load(&e->mods, pid)) {
			snprintf(why, n, "cannot read the memory map of process %d", (int)pid);
			goto out;
		}
	} else {
		char *path = argv0 ? exe_path(argv0) : NULL;
		e->mods.m = calloc(1, sizeof *e->mods.m);
		e->mods.syms = sym_cache_new();
		if (!path || !e->mods.m || !e->mods.syms) {
			free(path);
			snprintf(why, n, "cannot find the program '%s'", argv0 ? argv0 : "");
			goto out;
		}
		e->mods.m[0] = (struct module){ .path = path, .lo = 0, .hi = UINT64_MAX, .is_main = 1,
		                                .syms = e->mods.syms };
		e->mods.n = 1;
	}
	struct loc_addr *v = NULL;
	int nv = 0;
	char err[300];
	if (sp->loc == LOC_FUNC) {
		struct loc_addr la;
		if (resolve_function_offset(e, sp, &la, err, sizeof err) == 0 && (v = malloc(sizeof *v))) {
			v[0] = la;
			nv = 1;
		}
	} else if (sp->loc == LOC_LINE) {
		for (int i = 0; i < e->mods.n && !nv; i++) {
			struct sym_module *s = module_sym(&e->mods.m[i]);
			uint64_t addrs[256];
			int k = s ? sym_line_addrs(s, sp->file, sp->line, addrs, 256) : -1;
			if (k > 256)
				k = 256;
			if (k > 0 && (v = calloc((size_t)k, sizeof *v)))
				for (int j = 0; j < k; j++)
					v[nv++] = (struct loc_addr){ .addr = addrs[j] + e->mods.m[i].bias, .mod = &e->mods.m[i] };
		}
		snprintf(err, sizeof err, "the location is not in the program's files");
	} else {
		snprintf(err, sizeof err, "an address location");
	}
	if (!nv)
		snprintf(why, n, "%s", err);
	ok = nv > 0;
	for (int i = 0; i < nv && ok; i++) {
		struct expr *x;
		struct pa_var prog;
		const char *nvw = NULL;
		ok = var_compile_at(sp, &v[i], &x, &prog, &nvw, why, n) != -2;
		expr_free(x);
	}
	free(v);
out:
	modules_free(&e->mods);
	free(e);
	return ok;
}

int agent_runs_all(const char *const *specs, int nspecs, pid_t pid, const char *argv0, char *why, size_t wn)
{
	why[0] = 0;
	for (int i = 0; i < nspecs; i++) {
		struct spec sp;
		char err[200];
		if (specs[i][0] == '@' || spec_parse(specs[i], &sp, err, sizeof err))
			return 0;
		int ok = agent_kind(sp.kind) != NULL;
		if (ok && (!strcmp(sp.kind, "var") || !strcmp(sp.kind, "assert"))) {
			char w[300];
			ok = var_compiles(&sp, pid, argv0, w, sizeof w);
			if (!ok)
				snprintf(why, wn, "probe '%s' cannot run on the agent (%s)", specs[i], w);
		}
		spec_free(&sp);
		if (!ok)
			return 0;
	}
	return 1;
}

/* --- the session ----------------------------------------------------------- */

static volatile sig_atomic_t end_req;

static void on_end(int sig)
{
	(void)sig;
	end_req = 1;
}

/* Ticks per ns from the start of the session to now; the agent's time
 * sites get it as their multiplier (ns per tick << 32). */
static void calibrate(void)
{
	struct clock_point c1;
	clock_point_take(&c1);
	double r = clock_ticks_per_ns(&c0, &c1);
	if (r <= 0 && be.pa) { /* too close to the start for a time probe's first intervals */
		struct timespec ts = { 0, 20 * 1000000 };
		nanosleep(&ts, NULL);
		clock_point_take(&c1);
		r = clock_ticks_per_ns(&c0, &c1);
	}
	if (r > 0)
		ticks_per_ns = r;
	if (r > 0 && be.pa)
		__atomic_store_n(&be.pa->time_mult, (uint64_t)(4294967296.0 / r), __ATOMIC_RELAXED);
}

/* The backend hooks of the manager and the engine (engine.h). */
static void agent_remove(struct engine *e, struct probe *p)
{
	struct adata *d = p->data;
	if (!d || p->ops == &kind_sys)
		return;
	calibrate();
	if (d->sdata) {
		/* Its sites take no more stacks (a site may stay for another probe); a copy under way
		 * takes microseconds: after 2 ms its record is in, and the probe's stacks are drained
		 * (one later than that is not counted, in its hits either). */
		for (int i = 0; i < d->nsites; i++)
			__atomic_store_n(&be.pa->sites[d->sites[i]].stack_bytes, 0, __ATOMIC_RELEASE);
		sleep_ms(2);
		agent_stack_drain(e, be.pa, stk_off());
	}
	collect(p);
	d->frozen = 1;
	if (d->tdata)
		time_removed(e, p, d);
	if (d->pdata) /* its handlers are no longer called (a site may stay for another probe) */
		for (int i = 0; i < d->nsites; i++)
			__atomic_store_n(&be.pa->sites[d->sites[i]].plugin1, 0, __ATOMIC_RELEASE);
	char err[300];
	for (int i = 0; i < d->nsites; i++)
		agent_be_unref(&be, d->sites[i], err, sizeof err);
}

/* Around an interactive add: the threads are stopped only if a site needs
 * it (a jump over several instructions), agent_be_place says. */
static int agent_hold(struct engine *e)
{
	(void)e;
	be.may_hold = 1;
	return 0;
}

static void agent_let_go(struct engine *e)
{
	(void)e;
	agent_be_let_go(&be);
}

/* disable / enable (manager.c): the sites stay in; at the disable the
 * sites' counters are kept and the probe's numbers are computed from them
 * (they stop there); at the enable its bases move up by what the sites
 * counted in between, so its numbers go on from where they stopped.  A
 * hit counts if it came before the disable's reading or after the
 * enable's.  Var, assert, time and plugin probes' own numbers are made in
 * the target by their records' programs: the records are marked off
 * (struct pa_site.off) first, so those stop with the hits that ran before;
 * the enable marks them on after the bases moved. */
static int agent_enable(struct engine *e, struct probe *p, int on, char *err, size_t n)
{
	(void)e;
	struct adata *d = p->ops == &kind_sys ? NULL : p->data; /* a sys probe's data is kind_sys.c's */
	if (!d || !be.pa) {
		snprintf(err, n, "the agent engine cannot disable %s probes (del removes one; --engine=ptrace disables any)",
		         p->ops->name);
		return -1;
	}
	void *inner;
	int own = borrowed_kind(p, &inner) != NULL; /* the records run this probe's programs */
	if (!on) {
		struct abase *v = calloc((size_t)(d->nsites ? d->nsites : 1), sizeof *v);
		if (!v) {
			snprintf(err, n, "out of memory");
			return -1;
		}
		for (int i = 0; own && i < d->nsites; i++)
			__atomic_store_n(&be.pa->sites[d->sites[i]].off, 1, __ATOMIC_SEQ_CST);
		for (int i = 0; i < d->nsites; i++)
			site_counters(&be.pa->sites[d->sites[i]], &v[i]);
		d->paused = v;
		return 0;
	}
	for (int i = 0; i < d->nsites; i++) {
		struct abase now, *b = &d->base[i];
		const struct abase *was = &d->paused[i];
		site_counters(&be.pa->sites[d->sites[i]], &now);
		b->hits += now.hits - was->hits;
		b->returns += now.returns - was->returns;
		b->ticks_total += now.ticks_total - was->ticks_total;
		b->callers_lost += now.callers_lost - was->callers_lost;
		b->taken += now.taken - was->taken;
		b->stack_taken += now.stack_taken - was->stack_taken;
		b->stack_lost += now.stack_lost - was->stack_lost;
		b->stack_ticks += now.stack_ticks - was->stack_ticks;
		for (int c = 0; c < PA_CALLERS; c++)
			b->callers[c] += now.callers[c] - was->callers[c];
	}
	for (int i = 0; own && i < d->nsites; i++)
		__atomic_store_n(&be.pa->sites[d->sites[i]].off, 0, __ATOMIC_SEQ_CST);
	free(d->paused);
	d->paused = NULL;
	return 0;
}


/* Interactive commands from fd (manager.c), read without blocking: 1 when
 * they say quit or end. */
static int commands(struct engine *e, int fd, char *buf, size_t cap, size_t *have)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	if (poll(&pf, 1, 0) <= 0)
		return 0;
	ssize_t r = read(fd, buf + *have, cap - 1 - *have);
	if (r <= 0) { /* end of input ends the session, as on ptrace */
		if (*have) {
			buf[*have] = 0;
			manager_command(e, buf);
		}
		return 1;
	}
	*have += (size_t)r;
	buf[*have] = 0;
	calibrate();
	for (int i = 0; i < e->nprobes; i++)
		collect(e->probes[i]); /* list and show say the counts so far */
	char *line = buf, *nl;
	int quit = 0;
	while (!quit && (nl = strchr(line, '\n'))) {
		*nl = 0;
		quit = manager_command(e, line);
		line = nl + 1;
	}
	*have -= (size_t)(line - buf);
	memmove(buf, line, *have);
	if (*have == cap - 1)
		*have = 0; /* a line longer than the buffer: dropped */
	return quit;
}

/* The modules read so far go to e->old_mods (the probes that end now name
 * their callers with them); e->mods is empty, to be read again.  The
 * image number for those probes (0: out of memory, forgotten). */
static int mods_retire(struct engine *e)
{
	struct modules *om = realloc(e->old_mods, (size_t)(e->nold_mods + 1) * sizeof *om);
	int image = 0;
	if (om) {
		e->old_mods = om;
		om[e->nold_mods++] = e->mods;
		image = e->nold_mods;
	} else {
		modules_free(&e->mods);
	}
	memset(&e->mods, 0, sizeof e->mods);
	return image;
}

/* --- pending probes (--pending): a site at the dynamic linker's r_brk
 * stops each thread that loads or unloads a library, once the link map is
 * consistent, until sonde has looked for the pending probes' locations in
 * the new objects (probe_area.h PA_KIND_LOAD). */
static int load_site = -1;
static uint32_t loads_handled;

static int load_site_place(char *err, size_t n)
{
	if (load_site >= 0)
		return 0;
	uint64_t brk = __atomic_load_n(&be.pa->r_brk, __ATOMIC_ACQUIRE);
	if (!brk) {
		snprintf(err, n, "the dynamic linker's r_brk of process %d is unknown: libraries loaded later cannot be "
		         "followed", (int)be.pid);
		return -1;
	}
	char why[200];
	int idx = agent_be_place(&be, brk, PA_KIND_LOAD, 0, 0, why, sizeof why, err, n);
	if (idx < 0)
		return -1;
	load_site = idx;
	loads_handled = __atomic_load_n(&be.pa->loads, __ATOMIC_ACQUIRE);
	return 0;
}

/* Libraries came or went since the last look: the pending probes are
 * tried in the objects mapped now, then the loading thread goes on. */
/* A placed probe whose first site's bytes are no longer the agent's: the
 * library it was in is gone. */
static int probe_unloaded(struct probe *p)
{
	struct adata *d = p->data;
	if (p->removed || p->pending || p->ops == &kind_sys || !d || d->frozen || !d->nsites)
		return 0;
	return !agent_be_site_live(&be, d->sites[0]);
}

static void loads_serve(struct engine *e)
{
	if (load_site < 0)
		return;
	uint32_t l = __atomic_load_n(&be.pa->loads, __ATOMIC_ACQUIRE);
	if (l == loads_handled)
		return;
	/* A library went (dlclose): its probes end, counted so far; with
	 * --pending the same specs wait for it to come back (new ids). */
	int n0 = e->nprobes, gone = 0;
	char *was = calloc((size_t)n0 + 1, 1); /* all found before any is removed: sites may be shared */
	for (int i = 0; was && i < n0; i++)
		gone += was[i] = (char)probe_unloaded(e->probes[i]);
	if (gone) {
		calibrate();
		int image = mods_retire(e);
		for (int i = 0; i < n0; i++) {
			struct probe *p = e->probes[i];
			if (!was[i])
				continue;
			agent_remove(e, p); /* counts taken; the agent finds its bytes gone and writes nothing */
			p->removed = 1;
			p->ended = "unloaded";
			p->image = image;
			char err[600];
			if (e->pending_ok && !manager_add(e, p->spec, err, sizeof err) && e->warn)
				e->warn(p, err);
		}
		modules_load(&e->mods, be.pid);
	}
	free(was);
	if (manager_pending(e) && modules_load(&e->mods, be.pid) == 0) {
		be.may_hold = 1;
		manager_retry_pending(e);
		agent_be_let_go(&be);
	}
	loads_handled = l;
	__atomic_store_n(&be.pa->loads_seen, l, __ATOMIC_RELEASE);
	syscall(SYS_futex, &be.pa->loads_seen, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

/* --- exec: the program's agent comes back in the new image (the session
 * kept through the exec functions, src/rt/probe_exec.c) and waits there
 * until the probes are placed again: the old image's probes keep their
 * counts and end ("exec"), the same specs are added anew (new ids). */
static uint32_t execs_handled;

static void execs_serve(struct engine *e)
{
	uint32_t x = __atomic_load_n(&be.pa->execs, __ATOMIC_ACQUIRE);
	if (x == execs_handled)
		return;
	calibrate();
	agent_stack_drain(e, be.pa, stk_off()); /* the old image's stacks, while its modules are known */
	int n0 = e->nprobes;
	int image = mods_retire(e);
	int *again = calloc((size_t)n0 + 1, sizeof *again);
	for (int i = 0; i < n0; i++) {
		struct probe *p = e->probes[i];
		if (p->removed || p->image)
			continue;
		struct adata *d = p->ops == &kind_sys ? NULL : p->data;
		if (d) {
			collect(p);
			d->frozen = 1;
		}
		p->removed = 1;
		p->ended = "exec";
		p->image = image;
		if (again)
			again[i] = 1;
	}
	char err[600];
	agent_plugin_exec(&be);
	int ok = agent_be_exec_reset(&be, err, sizeof err) == 0 && modules_load(&e->mods, be.pid) == 0;
	load_site = -1;
	if (!ok && e->warn && n0)
		e->warn(e->probes[0], "the program exec'd and its new image cannot be read: its probes end there");
	for (int i = 0; ok && again && i < n0; i++) {
		if (!again[i])
			continue;
		struct probe *q = manager_add(e, e->probes[i]->spec, err, sizeof err);
		if (q && !q->pending && e->placed_later)
			e->placed_later(q, "the program exec'd");
		else if (!q && e->warn)
			e->warn(e->probes[i], err);
	}
	free(again);
	if (ok && manager_pending(e) && load_site_place(err, sizeof err) && e->warn && n0)
		e->warn(e->probes[0], err);
	be.threads_stopped = 0;
	loads_handled = __atomic_load_n(&be.pa->loads, __ATOMIC_ACQUIRE);
	execs_handled = x;
	__atomic_store_n(&be.pa->exec_go, x, __ATOMIC_RELEASE);
	syscall(SYS_futex, &be.pa->exec_go, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

/* sys probes' samples, when their interval has passed (now ~0: the last). */
static void sys_ticks(struct engine *e, uint64_t now)
{
	for (int i = 0; i < e->nprobes; i++)
		if (!e->probes[i]->removed && e->probes[i]->ops->tick)
			e->probes[i]->ops->tick(e->probes[i], now);
}


/* SIGPIPE is ignored from the launch to the end of the session: a write of
 * sonde's to the agent's pipe after the program died (a failed placement,
 * the program killed meanwhile) is an error of that write, never sonde's
 * death by SIGPIPE with probes left in. */
static struct sigaction old_pipe, old_int, old_term, old_hup;

/* A session that ends before the program ran: a launched program never
 * does (killed before the agent would let it go at the end of the
 * session), an attached one is left as it was. */
static void give_up(void)
{
	agent_be_let_go(&be);
	if (be.launched)
		kill(be.pid, SIGKILL);
	agent_be_end(&be);
	if (be.launched)
		agent_be_reap(&be);
	sigaction(SIGPIPE, &old_pipe, NULL);
}

static int ag_open(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &old_pipe);
	be.pipe_ignored = old_pipe.sa_handler == SIG_IGN;
	clock_point_take(&c0);
	be.record = o->record_dir != NULL;
	/* Stack rings when a stack probe may come (256 MiB of the memfd, its pages used only by the
	 * threads that take stacks). */
	stack_copy = o->stack_copy && o->stack_copy <= PA_STK_COPY_MAX ? o->stack_copy : PA_STK_COPY_DEF;
	be.stacks = o->in_fd >= 0;
	for (int i = 0; i < o->nspecs; i++) {
		const char *sp = o->specs[i][0] == '@' ? library_find(&e->lib, o->specs[i] + 1) : o->specs[i];
		be.stacks |= sp && !strncmp(sp, "stack:", 6);
	}
	int rc = o->argv ? agent_be_launch(&be, o->argv, o->rt_path, err, n)
	                 : agent_be_attach(&be, o->pid, o->rt_path, err, n);
	e->t.pid = be.pid;
	e->t.launched = be.launched;
	if (rc) {
		if (be.launched && be.pid > 0 && !agent_be_gone(&be))
			kill(be.pid, SIGKILL);
		if (be.launched && be.pid > 0)
			agent_be_reap(&be);
		sigaction(SIGPIPE, &old_pipe, NULL);
		return -1;
	}
	e->t.memfd = be.memfd;
	e->priv = &be;
	time_slots = 0;
	be.pa->time_gen = now_ns() | 1;
	if (modules_load(&e->mods, be.pid)) {
		snprintf(err, n, "cannot read the memory map of process %d", (int)be.pid);
		rc = -1;
	}
	if (!rc && o->record_dir && precorder_open(e, o->record_dir, err, n))
		rc = -1;
	if (!rc && !be.launched)
		rc = agent_be_hold(&be, err, n);
	if (rc)
		give_up();
	return rc;
}

static int ag_place(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	int rc = 0;
	e->start_ns = now_ns();
	e->pending_ok = o->pending;
	load_site = -1;
	execs_handled = 0;
	for (int i = 0; i < o->nspecs && !rc; i++)
		if (!manager_add(e, o->specs[i], err, n))
			rc = -1;
	if (!rc && o->pending && load_site_place(err, n)) /* libraries that come, and go */
		rc = -1;
	if (rc) {
		give_up();
		return -1;
	}
	agent_be_let_go(&be);
	return 0;
}

static int ag_run(struct engine *e, const struct probe_opts *o, char *err, size_t n)
{
	(void)err;
	(void)n;
	struct sigaction sa = { .sa_handler = on_end };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	if (o->placed)
		o->placed(e);
	agent_be_go(&be);
	uint64_t deadline = o->duration > 0 ? e->start_ns + (uint64_t)(o->duration * 1e9) : 0;
	static char cmd[4096];
	size_t have = 0;
	int quit = 0;
	uint64_t cal_ns = now_ns();
	while (!end_req && !quit && !agent_be_gone(&be) && !(deadline && now_ns() >= deadline)) {
		if (o->in_fd >= 0)
			quit = commands(e, o->in_fd, cmd, sizeof cmd, &have);
		if (load_site < 0 && manager_pending(e)) { /* one added interactively */
			char lerr[300];
			if (load_site_place(lerr, sizeof lerr))
				for (int i = 0; i < e->nprobes; i++)
					if (e->probes[i]->pending && !e->probes[i]->removed) {
						e->probes[i]->pending = 0;
						engine_probe_failed(e, e->probes[i], "%s", lerr);
					}
		}
		execs_serve(e);
		loads_serve(e);
		sys_ticks(e, now_ns());
		if (now_ns() - cal_ns >= 1000000000ull) { /* each second (the loop may not sleep: --record) */
			calibrate(); /* time probes' intervals: a finer ns per tick as the session goes on */
			cal_ns = now_ns();
		}
		/* --record: a ring that had 1024 events or more is drained again at once (the
		 * program makes events faster than every 2 ms can take) */
		uint64_t stacks = agent_stack_drain(e, be.pa, stk_off());
		if (agent_record_drain(e, be.pa, pa_area_size(PA_MAX_SITES)) < PA_REC_EVENTS / 64 && stacks < 64)
			sleep_ms(e->rec || be.stacks ? 2 : 5);
		else
			sched_yield();
	}
	e->end_ns = now_ns();
	if (!agent_be_gone(&be))
		sys_ticks(e, ~0ull); /* the last sample, the process still there */
	agent_be_end(&be);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	if (be.launched && end_req)
		sleep_ms(20); /* a Ctrl-C from the terminal reached the program too: its end is said */
	if (be.launched && agent_be_gone(&be))
		agent_be_reap(&be);
	else
		e->detached = !agent_be_gone(&be); /* it runs on, every site removed */
	e->t.gone = be.gone;
	e->t.status = be.status;
	if (be.gone && !be.launched) {
		/* not sonde's child: what its exit() said, through the agent */
		if (__atomic_load_n(&be.pa->exited, __ATOMIC_ACQUIRE))
			e->t.status = (__atomic_load_n(&be.pa->exit_code, __ATOMIC_RELAXED) & 0xff) << 8;
		else
			e->t.status_unknown = 1;
	}
	sigaction(SIGPIPE, &old_pipe, NULL);
	return 0;
}

static void ag_collect(struct engine *e)
{
	calibrate();
	agent_stack_drain(e, be.pa, stk_off()); /* the stacks left (before collect: they are stack probes' hits) */
	for (int i = 0; i < e->nprobes; i++)
		collect(e->probes[i]);
	agent_record_drain(e, be.pa, pa_area_size(PA_MAX_SITES)); /* what is left (after collect: its assert values) */
	if (agent_stack_bad())
		fprintf(stderr, "sonde: warning: %llu stack records of the program's memory were not the agent's "
		        "(dropped)\n", (unsigned long long)agent_stack_bad());
	if (e->rec && agent_record_dropped())
		fprintf(stderr, "sonde: warning: %llu probe events were not recorded (the program wrote them faster "
		        "than sonde read them; counted as lost in the recording)\n",
		        (unsigned long long)agent_record_dropped());
}

static void ag_close(struct engine *e)
{
	for (int i = 0; i < e->nold_mods; i++)
		modules_free(&e->old_mods[i]);
	free(e->old_mods);
	e->old_mods = NULL;
	e->nold_mods = 0;
	for (int i = 0; i < e->nprobes; i++)
		plugin_fini(e->probes[i]);
	e->t.memfd = -1;
	e->priv = NULL;
	agent_be_free(&be);
}

static int ag_read_code(struct engine *e, uint64_t addr, void *buf, size_t n)
{
	return agent_be_read_code(e->priv, addr, buf, n);
}

/* ABI-1 plugins (handlers in sonde) and expressions the agent's bytecode
 * does not have stay on ptrace; the others run here. */
static int ag_can_run(struct engine *e, const struct probe_opts *o, char *why, size_t wn)
{
	why[0] = 0;
	if (o->plugin_abi && o->plugin_abi != SONDE_PROBE_ABI2)
		return 0;
	const char *spec_of[64];
	int ns = o->nspecs < 64 ? o->nspecs : 64;
	for (int i = 0; i < ns; i++)
		spec_of[i] = o->specs[i][0] == '@' ? library_find(&e->lib, o->specs[i] + 1) : o->specs[i];
	return agent_runs_all(spec_of, ns, o->pid, o->argv ? o->argv[0] : NULL, why, wn);
}

const struct probe_engine_ops agent_engine = {
	.name = "agent",
	.kinds = "func line branch var assert time sys stack plugin",
	.runs = "func, line, branch, var, assert, time, sys, stack and plugin probes (SONDE_PROBE_ABI2 plugins) "
	        "(use --engine=ptrace)",
	.modes = PE_LAUNCH | PE_ATTACH | PE_INTERACTIVE | PE_PENDING | PE_RECORD | PE_PLUGIN,
	.can_run = ag_can_run,
	.open = ag_open,
	.place = ag_place,
	.run = ag_run,
	.collect = ag_collect,
	.close = ag_close,
	.kind = agent_kind,
	.remove = agent_remove,
	.enable = agent_enable,
	.hold = agent_hold,
	.let_go = agent_let_go,
	.read_code = ag_read_code,
};

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
		expr_set_values_dbl(x, vals, mask, be.pa->sites[d->sites[role]].var.fsave);
		expr_values(x, buf, n);
	}
	p->data = own;
}

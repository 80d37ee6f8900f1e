/* kind_remote.c — the probe kinds of remote targets (remote_run.h): func,
 * line, var and assert, with the same JSON fields and table as their local
 * counterparts.  var and assert keep kind_var.c's statistics and output
 * (they only evaluate the expression through the remote registers and
 * memory); func and line keep their own small state here, because a remote
 * func probe catches returns differently: a breakpoint at the return address
 * (read from the link register on aarch64 and MIPS, from the stack on
 * x86-64) while a call is pending, matched to its call by stack pointer. */
#include "probe/remote_run.h"

#include "common/json.h"
#include "probe/callstats.h"
#include "probe/engine.h"
#include "probe/expr.h"
#include "probe/kind.h"
#include "probe/output.h"
#include "probe/probe.h"
#include "probe/spec.h"
#include "sym/vars.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- line ---------------------------------------------------------------- */

struct rline { int naddrs; };

static int line_setup(struct rsess *s, struct probe *p, char *err, size_t n)
{
	uint64_t *v;
	int nv;
	if (rs_resolve(s, &p->sp, &v, &nv, err, n))
		return -1;
	struct rline *d = calloc(1, sizeof *d);
	int rc = (p->data = d) ? 0 : -1;
	for (int i = 0; i < nv && !rc; i++)
		rc = rs_site_add(s, p, v[i], i, err, n);
	if (!rc) {
		char w[400];
		rs_describe(s, v[0], w, sizeof w);
		if (nv > 1) {
			size_t l = strlen(w);
			snprintf(w + l, sizeof w - l, " and %d more", nv - 1);
		}
		p->where = strdup(w);
		d->naddrs = nv;
	}
	free(v);
	return rc;
}

static void line_hit(struct rsess *s, struct probe *p, int role, uint64_t pc, uint64_t now)
{
	(void)s; (void)role; (void)pc; (void)now;
	p->hits++;
}

static void line_json(struct probe *p, struct json *j)
{
	struct rline *d = p->data;
	json_int(j, "addresses", d ? d->naddrs : 0);
}

static void line_free(struct probe *p)
{
	free(p->data);
}

static const struct kind_ops rline_ops = { .name = "line", .needs_location = 1, .json = line_json, .free = line_free };

/* --- var and assert ---------------------------------------------------------- */

static int var_setup(struct rsess *s, struct probe *p, char *err, size_t n)
{
	if (!p->sp.args) {
		snprintf(err, n, "missing expression (%s:LOCATION:EXPR)", p->sp.kind);
		return -1;
	}
	if (!s->vars) {
		snprintf(err, n, "no variables in the program (%s)", s->vars_err ? s->vars_err : "no DWARF");
		return -1;
	}
	uint64_t *v;
	int nv;
	if (rs_resolve(s, &p->sp, &v, &nv, err, n))
		return -1;
	int rc = var_data_new(p, nv);
	if (rc)
		snprintf(err, n, "out of memory");
	for (int i = 0; i < nv && !rc; i++) {
		struct expr *x = expr_compile(p->sp.args, s->vars, v[i] - s->bias, err, n);
		var_site_set(p, i, x, NULL);
		if (!x)
			rc = -1;
	}
	for (int i = 0; i < nv && !rc; i++)
		rc = rs_site_add(s, p, v[i], i, err, n);
	if (!rc) {
		char w[600];
		rs_describe(s, v[0], w, sizeof w);
		size_t l = strlen(w);
		snprintf(w + l, sizeof w - l, "; %s", expr_describe(var_site_expr(p, 0)));
		p->where = strdup(w);
	}
	free(v);
	return rc;
}

/* 0 with *v set, or -1 when the value was unavailable (counted). */
static int eval(struct rsess *s, struct probe *p, int role, struct expr_val *v)
{
	struct var_env env;
	char err[256];
	p->hits++;
	rs_env(s, &env);
	if (!expr_eval_env(var_site_expr(p, role), &env, v, err, sizeof err))
		return 0;
	var_unavailable(p, err);
	return -1;
}

static void var_hit(struct rsess *s, struct probe *p, int role, uint64_t pc, uint64_t now)
{
	(void)pc; (void)now;
	struct expr_val v;
	if (!eval(s, p, role, &v))
		var_account(p, &v);
}

static void assert_hit(struct rsess *s, struct probe *p, int role, uint64_t pc, uint64_t now)
{
	(void)pc; (void)now;
	struct expr_val v;
	if (eval(s, p, role, &v))
		return;
	assert_count(p);
	if (v.is_float ? v.f == 0 : v.i == 0)
		assert_failed(p, role, s->c.thread);
}

/* --- func ---------------------------------------------------------------- */

enum { ROLE_ENTRY, ROLE_RETURN };

struct rframe { long thread; uint64_t sp, ret, t; };

struct rfunc {
	struct call_stats cs;
	struct rframe *f; int nf, capf;     /* pending calls */
	struct rsess *s;                    /* names the callers at output time */
};

static int func_setup(struct rsess *s, struct probe *p, char *err, size_t n)
{
	if (p->sp.loc != LOC_FUNC || p->sp.off) {
		snprintf(err, n, "func probes take a function name");
		return -1;
	}
	uint64_t *v;
	int nv;
	if (rs_resolve(s, &p->sp, &v, &nv, err, n))
		return -1;
	struct rfunc *d = calloc(1, sizeof *d);
	int rc = (p->data = d) ? 0 : -1;
	if (d) {
		callstats_init(&d->cs);
		d->s = s;
	}
	if (!rc)
		rc = rs_site_add(s, p, v[0], ROLE_ENTRY, err, n);
	if (!rc) {
		char w[400];
		rs_describe(s, v[0], w, sizeof w);
		size_t l = strlen(w);
		snprintf(w + l, sizeof w - l, ", returns at the return address (%s)",
		         s->c.arch->ra >= 0 ? "link register" : "stack");
		p->where = strdup(w);
	}
	free(v);
	return rc;
}

static int read_ptr(struct rsess *s, uint64_t addr, uint64_t *v)
{
	uint8_t b[8];
	int w = s->c.arch->ptr_size;
	if (remote_read(&s->c, addr, b, (size_t)w))
		return -1;
	*v = 0;
	for (int i = 0; i < w; i++)
		*v |= (uint64_t)b[s->c.big_endian ? w - 1 - i : i] << (8 * i);
	return 0;
}

static void func_entry(struct rsess *s, struct probe *p, struct rfunc *d, uint64_t now)
{
	const struct rarch *a = s->c.arch;
	uint64_t sp, ret;
	p->hits++;
	callstats_call(&d->cs);
	if (remote_reg(&s->c, a->sp, &sp) ||
	    (a->ra >= 0 ? remote_reg(&s->c, a->ra, &ret) : read_ptr(s, sp, &ret)))
		return; /* no return address: the call is counted, its return is not timed */
	callstats_caller(&d->cs, ret);
	int pending = 0;
	for (int i = 0; i < d->nf; i++)
		pending |= d->f[i].ret == ret;
	char err[200];
	if (!pending && rs_site_add(s, p, ret, ROLE_RETURN, err, sizeof err))
		return;
	if (d->nf == d->capf) {
		int cap = d->capf ? d->capf * 2 : 16;
		struct rframe *v = realloc(d->f, (size_t)cap * sizeof *v);
		if (!v)
			return;
		d->f = v;
		d->capf = cap;
	}
	d->f[d->nf++] = (struct rframe){ s->c.thread, sp, ret, now };
}

static void func_return(struct rsess *s, struct probe *p, struct rfunc *d, uint64_t pc, uint64_t now)
{
	uint64_t sp;
	if (remote_reg(&s->c, s->c.arch->sp, &sp))
		return;
	/* The innermost pending call of this thread that returns here with this
	 * stack pointer; calls deeper in the stack that never returned (longjmp)
	 * are dropped.  Another pass through the return address (a loop calling
	 * from there, a recursive call's own return) matches nothing. */
	for (int i = d->nf - 1; i >= 0; i--) {
		struct rframe *f = &d->f[i];
		if (f->thread != s->c.thread || f->ret != pc || f->sp + (uint64_t)s->c.arch->ret_sp_adj != sp)
			continue;
		callstats_return(&d->cs, now - f->t);
		int k = 0;
		for (int j = 0; j < d->nf; j++)
			if (j != i && !(d->f[j].thread == f->thread && d->f[j].sp < f->sp))
				d->f[k++] = d->f[j];
		d->nf = k;
		break;
	}
	int pending = 0;
	for (int i = 0; i < d->nf; i++)
		pending |= d->f[i].ret == pc;
	if (!pending)
		rs_site_del(s, p, pc, ROLE_RETURN);
}

static void func_hit(struct rsess *s, struct probe *p, int role, uint64_t pc, uint64_t now)
{
	struct rfunc *d = p->data;
	if (role == ROLE_ENTRY)
		func_entry(s, p, d, now);
	else
		func_return(s, p, d, pc, now);
}

static const char *name_of(void *arg, uint64_t ret, char *buf, size_t n)
{
	snprintf(buf, n, "%s", rs_func_name(arg, ret));
	return buf;
}

static void func_json(struct probe *p, struct json *j)
{
	struct rfunc *d = p->data;
	if (d)
		callstats_json(&d->cs, j, name_of, d->s);
}

static void func_table(struct probe *p, FILE *f)
{
	struct rfunc *d = p->data;
	if (d)
		callstats_table(&d->cs, f, name_of, d->s);
}

static void func_free(struct probe *p)
{
	struct rfunc *d = p->data;
	if (!d)
		return;
	free(d->f);
	callstats_free(&d->cs);
	free(d);
}

static const struct kind_ops rfunc_ops = {
	.name = "func", .needs_location = 1, .json = func_json, .table = func_table, .free = func_free,
};

static const struct rkind kinds[] = {
	{ "func", &rfunc_ops, func_setup, func_hit },
	{ "line", &rline_ops, line_setup, line_hit },
	{ "var", &kind_var, var_setup, var_hit },
	{ "assert", &kind_assert, var_setup, assert_hit },
};

const struct rkind *rkind_find(const char *name)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (!strcmp(kinds[i].name, name))
			return &kinds[i];
	return NULL;
}

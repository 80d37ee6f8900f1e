/* place.c — the kinds' setup, the same on every engine (place.h): the
 * spec checked for its kind, its location found by the engine, the kind's
 * data (kind_*.c), each site prepared (a branch's jump found, a variable's
 * expression compiled) and placed by the engine, p->where said. */
#include "probe/place.h"

#include "arch/remote_arch.h"
#include "probe/engine.h"
#include "probe/expr.h"
#include "probe/kind.h"
#include "probe/probe.h"
#include "probe/probe_engine.h"
#include "probe/resolve.h"
#include "probe/spec.h"
#include "sonde/probe.h"
#include "sym/vars.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The spec's form for its kind, before anything is looked up. */
static int check_spec(struct engine *e, const struct site_ops *so, const struct spec *sp, char *err, size_t n)
{
	const char *k = sp->kind;
	if (!strcmp(k, "func")) {
		int ok = sp->loc == LOC_FUNC || (sp->loc == LOC_ADDR && (so->can & SITE_CAN_FUNC_ADDR));
		if (!ok || (sp->off && !(so->can & SITE_CAN_OFFSET))) {
			snprintf(err, n, "func probes take a function name");
			return -1;
		}
	} else if (!strcmp(k, "branch") && sp->loc != LOC_LINE) {
		snprintf(err, n, "branch probes take a source line (branch:FILE:LINE)");
		return -1;
	} else if ((!strcmp(k, "var") || !strcmp(k, "assert")) && !sp->args) {
		snprintf(err, n, "missing expression (%s:LOCATION:EXPR)", k);
		return -1;
	} else if (!strcmp(k, "plugin") && !e->plugin) {
		snprintf(err, n, "plugin probes need --plugin FILE.so");
		return -1;
	}
	return 0;
}

static int locate(struct engine *e, const struct site_ops *so, struct probe *p, int func, struct loc_addr **v,
                  int *nv, char *err, size_t n)
{
	if (so->locate)
		return so->locate(e, p, func, v, nv, err, n);
	if (!func)
		return resolve_location(e, &p->sp, v, nv, err, n);
	if (!(*v = calloc(1, sizeof **v))) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	*nv = 1;
	if (resolve_function_offset(e, &p->sp, *v, err, n)) {
		free(*v);
		*v = NULL;
		return -1;
	}
	return 0;
}

static enum site_what what_of(const struct spec *sp)
{
	const char *k = sp->kind;
	return !strcmp(k, "func")   ? sp->off ? SITE_COUNT : SITE_CALL
	     : !strcmp(k, "branch") ? SITE_BRANCH
	     : !strcmp(k, "time")   ? SITE_TIME
	     : !strcmp(k, "var") || !strcmp(k, "assert") ? SITE_VALUE
	     : !strcmp(k, "stack")  ? SITE_STACK
	     : !strcmp(k, "plugin") ? SITE_PLUGIN : SITE_COUNT;
}

/* The kind's data into p->data, for nv sites at v. */
static int data_new(struct engine *e, const struct site_ops *so, struct probe *p, enum site_what w,
                    const struct loc_addr *v, int nv, char *err, size_t n)
{
	int rc;
	switch (w) {
	case SITE_CALL: rc = func_data_new(p, 0); break;
	case SITE_COUNT: rc = strcmp(p->sp.kind, "func") ? line_data_new(p, nv) : func_data_new(p, 1); break;
	case SITE_BRANCH: rc = branch_data_new(p, nv); break;
	case SITE_TIME: rc = time_data_new(p); break;
	case SITE_VALUE: rc = var_data_new(p, nv); break;
	case SITE_STACK:
		return so->stack_namer ? stack_data_new_named(p, so->stack_namer, err, n) : stack_data_new(p, err, n);
	case SITE_PLUGIN:
		return so->plugin_ctx ? so->plugin_ctx(e, p, v[0].addr, err, n)
		                      : plugin_ctx_new(p, v[0].addr, NULL, NULL, err, n);
	default: rc = -1;
	}
	if (rc)
		snprintf(err, n, "out of memory");
	return rc;
}

/* SITE_VALUE: the expression at s, kept in kind_var's site i. */
static int compile(struct engine *e, const struct site_ops *so, struct probe *p, struct probe_site *s, char *err, size_t n)
{
	if (so->compile)
		s->x = so->compile(e, p, s, err, n);
	else if (!s->la.mod)
		snprintf(err, n, "no variables at 0x%llx", (unsigned long long)s->la.addr);
	else
		s->x = expr_compile(p->sp.args, module_vars(s->la.mod), s->la.addr - s->la.mod->bias, err, n);
	var_site_set(p, s->i, s->x, s->la.mod);
	return s->x ? 0 : -1;
}

int site_branch_local(struct engine *e, struct probe *p, struct probe_site *s, char *err, size_t n)
{
	(void)e;
	struct arch_insn in;
	if (branch_find_jcc(p, &s->la, &in, err, n))
		return -1;
	s->la.addr = in.addr;
	s->next = in.addr + (uint64_t)in.len;
	snprintf(s->insn, sizeof s->insn, "%s", in.text);
	return 0;
}

int site_branch_keep(struct probe *p, struct probe_site *s, const struct rbranch *b, char *err, size_t n)
{
	struct rbranch *v = realloc(p->edata, (size_t)(s->i + 1) * sizeof *v);
	if (!v) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	p->edata = v;
	v[s->i] = *b;
	s->la.addr = b->addr;
	s->next = b->next;
	snprintf(s->insn, sizeof s->insn, "%s", b->text);
	return 0;
}

int kind_place(struct probe *p, char *err, size_t n)
{
	struct engine *e = p->e;
	const struct site_ops *so = e->ops ? e->ops->sites : NULL;
	if (!so || !so->place) {
		snprintf(err, n, "the %s engine places no sites", e->ops ? e->ops->name : "session's");
		return -1;
	}
	if (check_spec(e, so, &p->sp, err, n))
		return -1;
	enum site_what what = what_of(&p->sp);
	struct loc_addr *v = NULL;
	int nv = 0;
	if (locate(e, so, p, what == SITE_CALL || !strcmp(p->sp.kind, "func"), &v, &nv, err, n))
		return -1;
	int rc = nv > 0 ? data_new(e, so, p, what, v, nv, err, n) : -1;
	if (nv <= 0)
		snprintf(err, n, "no address for the location");
	if (!rc && so->begin)
		rc = so->begin(e, p, nv, err, n);
	uint64_t first = 0;
	for (int i = 0; i < nv && !rc; i++) {
		struct probe_site s = { .la = v[i], .i = i, .what = what };
		s.want_post = what == SITE_PLUGIN && e->plugin && e->plugin->post;
		if (what == SITE_BRANCH) {
			rc = (so->branch ? so->branch : site_branch_local)(e, p, &s, err, n);
			if (!rc && branch_site(p, i, s.next, s.insn)) {
				snprintf(err, n, "out of memory");
				rc = -1;
			}
		} else if (what == SITE_VALUE)
			rc = compile(e, so, p, &s, err, n);
		if (!rc)
			rc = so->place(e, p, &s, err, n);
		if (!rc && i == 0)
			first = s.la.addr;
	}
	if (!rc) {
		char w[1024];
		if (so->describe)
			so->describe(e, first, w, sizeof w);
		else
			resolve_describe(e, first, w, sizeof w);
		size_t l = strlen(w);
		if (nv > 1 && l < sizeof w)
			l += (size_t)snprintf(w + l, sizeof w - l, " and %d more", nv - 1);
		if (what == SITE_VALUE && l < sizeof w)
			snprintf(w + l, sizeof w - l, "; %s", expr_describe(var_site_expr(p, 0)));
		if (so->placed)
			so->placed(e, p, w, sizeof w);
		free(p->where);
		p->where = strdup(w);
	}
	free(v);
	return rc;
}

/* kernel_var.c — var:/assert: in a kernel module (kernel_var.h).  Each
 * address of the probe is a site: its expression compiled with
 * expr_compile_names, whose names are the .ko's variables there (vars.c on
 * the relocated DWARF, kmod.c); each variable becomes one fetch argument
 * (kfetch.c) of the site's kprobe_events probe (kprobe_events.c), so the
 * kernel reads it at the hit into the hit's record.  A record's raw data
 * is bounded by the event's own format (its fields' offsets and sizes);
 * the expression is then evaluated over those values, and the value
 * counted by kind_var (or the assertion by kind_assert): the output is
 * theirs.  A global's address is its section's in the loaded module
 * (/sys/module/NAME/sections/SECTION) plus its offset there. */
#include "probe/kernel/kernel_var.h"

#include "probe/expr.h"
#include "probe/kernel/kfetch.h"
#include "probe/kernel/kprobe_events.h"
#include "probe/kind.h"
#include "probe/probe.h"
#include "sym/sym.h"
#include "sym/vars.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A variable of a site's expression: fetch argument k of its probe. */
struct kname {
	struct ksite *s;
	struct var_ref *r;
	int k, enc, size;
	char desc[320];
};

struct ksite {
	struct kvar *v;
	uint64_t pc;                 /* its address in the object's DWARF */
	char where[PATH_MAX + 32];   /* its probe's place (kprobe_events / uprobe_events) */
	char what[256];              /* ... as told in errors */
	struct expr_names names;     /* ctx: this site */
	char *arg[KPE_MAX_ARGS];     /* the fetch arguments, in the order of the expression's names */
	int narg;
	char args[KPE_MAX_ARGS * 64 + 1];   /* "a0=... a1=...", told */
	struct kpe_event ev;
	const unsigned char *raw;    /* the record being evaluated */
	size_t nraw;
};

struct kvar {
	struct probe *p;
	struct vars *vs;             /* the object's variables */
	kfetch_addr_fn addr_of;      /* a global's address: module_addr, file_addr */
	struct sym_kmod *k;          /* a module's: its .ko and name */
	const char *mod;
	uint64_t delta;              /* an object's: link address minus file offset of the probed segment */
	int user;                    /* uprobe_events (an object), else kprobe_events (a module) */
	int assert;
	char *expr;                  /* the expression, compiled at each site by kvar_site */
	struct ksite *s;
	int ns;
};

/* A global's DWARF address in the running module. */
static int module_addr(void *ctx, uint64_t a, uint64_t *at, int *how, char *err, size_t n)
{
	struct kvar *v = ctx;
	char sec[64], path[160], b[64];
	uint64_t off;
	if (sym_kmod_data(v->k, a, sec, sizeof sec, &off)) {
		snprintf(err, n, "address 0x%llx is in no data section of the module", (unsigned long long)a);
		return -1;
	}
	snprintf(path, sizeof path, "/sys/module/%s/sections/%s", v->mod, sec);
	FILE *f = fopen(path, "r");
	unsigned long long base = 0;
	int ok = f && fgets(b, sizeof b, f) && sscanf(b, "%llx", &base) == 1 && base;
	if (f)
		fclose(f);
	if (!ok) {
		snprintf(err, n, "cannot read where %s's %s is (%s)", v->mod, sec, path);
		return -1;
	}
	*at = base + off;
	*how = KF_KERNEL;
	return 0;
}

/* A global's link address in a probed object: its offset from where the
 * probed segment's file offset 0 is mapped (a uprobe's "@+OFFSET": the
 * kernel adds the hit's address minus the probe's file offset).  (One the
 * object's code reaches through its GOT, vars.c has made the slot's
 * address, dereferenced: kfetch.c reads the slot.) */
static int file_addr(void *ctx, uint64_t a, uint64_t *at, int *how, char *err, size_t n)
{
	struct kvar *v = ctx;
	(void)err;
	(void)n;
	*at = a - v->delta;
	*how = KF_FILE;
	return 0;
}

static int name_compile(void *ctx, uint64_t pc, const char *path, void **ref, char *err, size_t n)
{
	struct ksite *s = ctx;
	char e[300], fa[256];
	struct vars *vs = s->v->vs;
	if (s->narg == KPE_MAX_ARGS) {
		snprintf(err, n, "more than %d variables in one kernel probe", KPE_MAX_ARGS);
		return -1;
	}
	struct kname *k = calloc(1, sizeof *k);
	if (!k) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	k->s = s;
	if (vars_compile(vs, pc, path, &k->r, e, sizeof e) ||
	    kfetch_arg(k->r, s->v->addr_of, s->v, fa, sizeof fa, &k->enc, &k->size, e, sizeof e)) {
		snprintf(err, n, "'%s'%s%s%s: %s", path, k->r ? " (" : "", k->r ? vars_describe(k->r) : "", k->r ? ")" : "",
		         e);
		vars_free(k->r);
		free(k);
		return -1;
	}
	if (!(s->arg[s->narg] = strdup(fa))) {
		vars_free(k->r);
		free(k);
		snprintf(err, n, "out of memory");
		return -1;
	}
	k->k = s->narg++;
	snprintf(k->desc, sizeof k->desc, "%s: %s (a%d=%s)", path, vars_describe(k->r), k->k, fa);
	*ref = k;
	return 0;
}

/* Fetch argument k's value in the record being evaluated. */
static int name_read(void *ctx, void *ref, struct expr_val *out, char *err, size_t n)
{
	struct ksite *s = ctx;
	struct kname *k = ref;
	uint32_t off = s->ev.off[k->k], size = s->ev.size[k->k];
	if ((size_t)off + size > s->nraw || size > 8 || !size) {
		snprintf(err, n, "a record too short for its fields");
		return -1;
	}
	uint64_t u = 0;
	memcpy(&u, s->raw + off, (size_t)size);   /* little-endian: the low bytes */
	memset(out, 0, sizeof *out);
	if (k->enc == VAR_FLOAT) {
		out->is_float = 1;
		if (size == 4) {
			float f;
			uint32_t w = (uint32_t)u;
			memcpy(&f, &w, 4);
			out->f = f;
		} else {
			double d;
			memcpy(&d, &u, 8);
			out->f = d;
		}
		return 0;
	}
	if (k->enc == VAR_INT && size < 8 && (u >> (size * 8 - 1)) & 1)
		u |= ~0ull << (size * 8);   /* sign-extended */
	out->i = (int64_t)u;
	return 0;
}

static const char *name_describe(void *ctx, void *ref)
{
	(void)ctx;
	return ((struct kname *)ref)->desc;
}

static void name_free(void *ctx, void *ref)
{
	(void)ctx;
	struct kname *k = ref;
	vars_free(k->r);
	free(k);
}

/* A new kvar for p's nloc sites of expr: NULL with err. */
static struct kvar *kvar_alloc(struct probe *p, int nloc, const char *expr, char *err, size_t n)
{
	struct kvar *v = calloc(1, sizeof *v);
	if (!v || !(v->s = calloc((size_t)nloc, sizeof *v->s)) || !(v->expr = strdup(expr))) {
		snprintf(err, n, "out of memory");
		kvar_free(v);
		return NULL;
	}
	v->p = p;   /* from here kvar_free frees the sites' expressions */
	v->assert = !strcmp(p->sp.kind, "assert");
	v->ns = nloc;
	return v;
}

struct expr *kvar_site(struct kvar *v, int i, char *err, size_t n)
{
	if (!v || i < 0 || i >= v->ns) {
		snprintf(err, n, "no site %d", i);
		return NULL;
	}
	struct ksite *s = &v->s[i];
	char e[400], name[64];
	s->v = v;
	s->names = (struct expr_names){ name_compile, name_read, name_describe, name_free, s };
	struct expr *x = expr_compile_names(v->expr, &s->names, s->pc, e, sizeof e);
	var_site_set(v->p, i, x, NULL);
	if (!x) {
		snprintf(err, n, "%s: %s", s->what, e);
		return NULL;
	}
	/* kprobe_profile names an event without its group: the pid in the name too */
	snprintf(name, sizeof name, "s%d_p%d_%d", (int)getpid(), v->p->id, i);
	if (kpe_add(v->user, name, s->where, (const char *const *)s->arg, s->narg, &s->ev, err, n))
		return NULL;
	size_t l = 0;
	for (int a = 0; a < s->narg && l < sizeof s->args; a++)
		l += (size_t)snprintf(s->args + l, sizeof s->args - l, "%sa%d=%s", a ? " " : "", a, s->arg[a]);
	return x;
}

struct kvar *kvar_new_kmod(struct probe *p, struct sym_kmod *k, const char *mod, const struct sym_kloc *loc, int nloc,
                           const char *expr, char *err, size_t n)
{
	struct kvar *v = kvar_alloc(p, nloc, expr, err, n);
	if (!v)
		return NULL;
	v->k = k;
	v->mod = mod;
	v->addr_of = module_addr;
	if (!(v->vs = sym_kmod_vars(k, err, n))) {
		kvar_free(v);
		return NULL;
	}
	for (int i = 0; i < nloc; i++) {
		struct ksite *s = &v->s[i];
		s->pc = loc[i].pc;
		snprintf(s->where, sizeof s->where, "%.60s:%.150s+%llu", mod, loc[i].func, (unsigned long long)loc[i].off);
		snprintf(s->what, sizeof s->what, "%.60s:%.150s+0x%llx", mod, loc[i].func, (unsigned long long)loc[i].off);
	}
	return v;
}

struct kvar *kvar_new_user(struct probe *p, struct sym_module *m, const char *path, const uint64_t *pc,
                           const uint64_t *off, int nloc, const char *expr, char *err, size_t n)
{
	const char *why = NULL;
	if (strpbrk(path, " \t\n")) {
		snprintf(err, n, "%.200s: a path with white space cannot be given to uprobe_events", path);
		return NULL;
	}
	struct kvar *v = kvar_alloc(p, nloc, expr, err, n);
	if (!v)
		return NULL;
	v->user = 1;
	v->addr_of = file_addr;
	v->delta = nloc ? pc[0] - off[0] : 0;
	if (!(v->vs = sym_vars(m, &why))) {
		snprintf(err, n, "%.200s: %s", path, why ? why : "no DWARF");
		kvar_free(v);
		return NULL;
	}
	for (int i = 0; i < nloc; i++) {
		struct ksite *s = &v->s[i];
		s->pc = pc[i];
		snprintf(s->where, sizeof s->where, "%s:0x%llx", path, (unsigned long long)off[i]);
		snprintf(s->what, sizeof s->what, "0x%llx", (unsigned long long)pc[i]);
	}
	return v;
}

int kvar_id(const struct kvar *v, int i)
{
	return v && i >= 0 && i < v->ns ? v->s[i].ev.id : 0;
}

const char *kvar_args(const struct kvar *v, int i)
{
	return v && i >= 0 && i < v->ns ? v->s[i].args : "";
}

void kvar_sample(struct kvar *v, int i, long tid, const unsigned char *raw, size_t n)
{
	if (!v || i < 0 || i >= v->ns)
		return;
	struct ksite *s = &v->s[i];
	struct expr_val x;
	s->raw = raw;
	s->nraw = n;
	if (!var_eval_env(v->p, i, NULL, &x)) {
		if (v->assert)
			assert_account(v->p, i, tid, &x);
		else
			var_account(v->p, &x);
	}
	s->raw = NULL;
	s->nraw = 0;
}

int kvar_missed(const struct kvar *v, uint64_t *missed)
{
	*missed = 0;
	for (int i = 0; v && i < v->ns; i++) {
		uint64_t m;
		if (kpe_missed(v->s[i].ev.name, &m))
			return -1;
		*missed += m;
	}
	return v ? 0 : -1;
}

void kvar_free(struct kvar *v)
{
	if (!v)
		return;
	/* the expressions first: their names are the sites' */
	for (int i = 0; v->p && v->p->data && i < v->ns; i++) {
		expr_free(var_site_expr(v->p, i));
		var_site_set(v->p, i, NULL, NULL);
	}
	for (int i = 0; v->s && i < v->ns; i++)
		for (int a = 0; a < v->s[i].narg; a++)
			free(v->s[i].arg[a]);
	free(v->s);
	free(v->expr);
	free(v);
}

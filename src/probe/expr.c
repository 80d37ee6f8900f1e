/* expr.c — expressions over program variables for var and assert probes:
 * || && ! == != < <= > >= + - * / %, unary -, parentheses, integer and
 * floating literals, and variables (DWARF access paths such as p->f, a[i],
 * s.x, *p) read through src/sym/vars, or names of another debug format
 * compiled and read by the caller (expr_compile_names: the 8051's CDB).
 * && and || short-circuit. */
#include "probe/expr.h"

#include "probe/engine.h"
#include "proc/modules.h"
#include "probe/probe.h"
#include "probe/ptrace/step.h"
#include "proc/target.h"
#include "sym/vars.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_NUM = EXPR_NUM, N_VAR = EXPR_VAR, N_NOT = EXPR_NOT, N_NEG = EXPR_NEG, N_BIN = EXPR_BIN };
enum {
	OP_OR = EXPR_OR, OP_AND = EXPR_AND, OP_EQ = EXPR_EQ, OP_NE = EXPR_NE, OP_LT = EXPR_LT, OP_LE = EXPR_LE,
	OP_GT = EXPR_GT, OP_GE = EXPR_GE, OP_ADD = EXPR_ADD, OP_SUB = EXPR_SUB, OP_MUL = EXPR_MUL, OP_DIV = EXPR_DIV,
	OP_MOD = EXPR_MOD
};

struct expr {
	int type, op;
	struct expr *a, *b;
	struct expr_val v;      /* N_NUM, and the last value of N_VAR */
	int have;               /* N_VAR evaluated in the last run */
	struct var_ref *ref;
	const struct expr_names *names; /* N_VAR of expr_compile_names: uref is the caller's */
	void *uref;
	char *name;
	char *desc;             /* top node: description of the variables */
};

struct parser {
	const char *s;
	struct vars *vars;
	const struct expr_names *names;
	uint64_t pc;
	char *err;
	size_t n;
	int failed;
	int depth;              /* nesting of parentheses and unary operators */
	int nodes;              /* operators so far */
};

/* Bounds that keep the recursive parser, evaluator and destructor off the
 * end of the stack whatever the text (30000 parentheses or 60000 minus
 * signs crashed sonde, with an attached target keeping its int3s). */
#define EXPR_MAX_DEPTH 64
#define EXPR_MAX_NODES 1024

static void skip(struct parser *p)
{
	while (isspace((unsigned char)*p->s))
		p->s++;
}

static struct expr *node(int type)
{
	struct expr *x = calloc(1, sizeof *x);
	if (x)
		x->type = type;
	return x;
}

static struct expr *bin_node(int op, struct expr *a, struct expr *b)
{
	struct expr *x = node(N_BIN);
	if (!x) {
		expr_free(a);
		expr_free(b);
		return NULL;
	}
	x->type = N_BIN;
	x->op = op;
	x->a = a;
	x->b = b;
	return x;
}

static struct expr *parse_or(struct parser *p);

static int accept(struct parser *p, const char *t)
{
	skip(p);
	size_t l = strlen(t);
	if (strncmp(p->s, t, l))
		return 0;
	/* "<" must not eat "<=", "=" never alone, "!" must not eat "!=" */
	if (l == 1 && (t[0] == '<' || t[0] == '>' || t[0] == '!') && p->s[1] == '=')
		return 0;
	if (l == 1 && (t[0] == '&' || t[0] == '|'))
		return 0;
	p->s += l;
	return 1;
}

static struct expr *fail(struct parser *p, const char *msg)
{
	if (!p->failed)
		snprintf(p->err, p->n, "%s at '%.20s'", msg, *p->s ? p->s : "end of expression");
	p->failed = 1;
	return NULL;
}

/* A binary node, counted against EXPR_MAX_NODES. */
static struct expr *bin(struct parser *p, int op, struct expr *a, struct expr *b)
{
	if (++p->nodes > EXPR_MAX_NODES) {
		expr_free(a);
		expr_free(b);
		return fail(p, "expression too long (at most 1024 operators)");
	}
	return bin_node(op, a, b);
}

/* Enter one level of nesting: 0, or -1 (failed) beyond EXPR_MAX_DEPTH. */
static int nest(struct parser *p)
{
	if (++p->depth > EXPR_MAX_DEPTH) {
		fail(p, "expression nested too deeply (at most 64 levels)");
		return -1;
	}
	return 0;
}

static struct expr *parse_path(struct parser *p)
{
	const char *st = p->s;
	if (*p->s == '*')
		p->s++;
	while (*p->s == '*')
		p->s++;
	if (!isalpha((unsigned char)*p->s) && *p->s != '_')
		return fail(p, "expected a variable");
	while (isalnum((unsigned char)*p->s) || *p->s == '_')
		p->s++;
	for (;;) {
		if (p->s[0] == '-' && p->s[1] == '>') {
			p->s += 2;
		} else if (p->s[0] == '.' && (isalpha((unsigned char)p->s[1]) || p->s[1] == '_')) {
			p->s += 1;
		} else if (p->s[0] == '[') {
			const char *c = strchr(p->s, ']');
			if (!c)
				return fail(p, "missing ]");
			p->s = c + 1;
			continue;
		} else {
			break;
		}
		while (isalnum((unsigned char)*p->s) || *p->s == '_')
			p->s++;
	}
	struct expr *x = node(N_VAR);
	if (!x)
		return fail(p, "out of memory");
	x->type = N_VAR;
	x->name = strndup(st, (size_t)(p->s - st));
	char e[256];
	if (p->names) {
		if (p->names->compile(p->names->ctx, p->pc, x->name, &x->uref, e, sizeof e)) {
			if (!p->failed)
				snprintf(p->err, p->n, "%s", e);
			p->failed = 1;
			free(x->name);
			free(x);
			return NULL;
		}
		x->names = p->names;
		return x;
	}
	if (!p->vars) {
		free(x->name);
		free(x);
		return fail(p, "no DWARF variable information for this code (built without -g?)");
	}
	if (vars_compile(p->vars, p->pc, x->name, &x->ref, e, sizeof e)) {
		if (!p->failed)
			snprintf(p->err, p->n, "%s", e);
		p->failed = 1;
		free(x->name);
		free(x);
		return NULL;
	}
	return x;
}

static struct expr *parse_primary(struct parser *p)
{
	skip(p);
	if (accept(p, "(")) {
		if (nest(p))
			return NULL;
		struct expr *x = parse_or(p);
		p->depth--;
		if (x && !accept(p, ")")) {
			expr_free(x);
			return fail(p, "missing )");
		}
		return x;
	}
	if (isdigit((unsigned char)*p->s) || (*p->s == '.' && isdigit((unsigned char)p->s[1]))) {
		struct expr *x = node(N_NUM);
		if (!x)
			return fail(p, "out of memory");
		x->type = N_NUM;
		char *e1, *e2;
		long long iv = strtoll(p->s, &e1, 0);
		long double fv = strtold(p->s, &e2);
		if (e2 > e1) {
			x->v.is_float = 1;
			x->v.f = fv;
			p->s = e2;
		} else {
			x->v.i = iv;
			p->s = e1;
		}
		if (*p->s == 'f' || *p->s == 'F' || *p->s == 'L' || *p->s == 'l' || *p->s == 'u' || *p->s == 'U')
			p->s++;
		return x;
	}
	return parse_path(p);
}

static struct expr *parse_unary(struct parser *p)
{
	skip(p);
	int t = -1;
	if (accept(p, "!"))
		t = N_NOT;
	else if (accept(p, "-"))
		t = N_NEG;
	if (t >= 0) {
		if (nest(p) || ++p->nodes > EXPR_MAX_NODES)
			return p->failed ? NULL : fail(p, "expression too long (at most 1024 operators)");
		struct expr *a = parse_unary(p);
		p->depth--;
		if (!a)
			return NULL;
		struct expr *x = node(t);
		if (!x) {
			expr_free(a);
			return fail(p, "out of memory");
		}
		x->type = t;
		x->a = a;
		return x;
	}
	return parse_primary(p);
}

static struct expr *parse_mul(struct parser *p)
{
	struct expr *x = parse_unary(p);
	while (x) {
		int op;
		if (accept(p, "*")) op = OP_MUL;
		else if (accept(p, "/")) op = OP_DIV;
		else if (accept(p, "%")) op = OP_MOD;
		else break;
		struct expr *b = parse_unary(p);
		if (!b) { expr_free(x); return NULL; }
		x = bin(p, op, x, b);
	}
	return x;
}

static struct expr *parse_add(struct parser *p)
{
	struct expr *x = parse_mul(p);
	while (x) {
		int op;
		if (accept(p, "+")) op = OP_ADD;
		else if (accept(p, "-")) op = OP_SUB;
		else break;
		struct expr *b = parse_mul(p);
		if (!b) { expr_free(x); return NULL; }
		x = bin(p, op, x, b);
	}
	return x;
}

static struct expr *parse_cmp(struct parser *p)
{
	struct expr *x = parse_add(p);
	while (x) {
		int op;
		if (accept(p, "==")) op = OP_EQ;
		else if (accept(p, "!=")) op = OP_NE;
		else if (accept(p, "<=")) op = OP_LE;
		else if (accept(p, ">=")) op = OP_GE;
		else if (accept(p, "<")) op = OP_LT;
		else if (accept(p, ">")) op = OP_GT;
		else break;
		struct expr *b = parse_add(p);
		if (!b) { expr_free(x); return NULL; }
		x = bin(p, op, x, b);
	}
	return x;
}

static struct expr *parse_and(struct parser *p)
{
	struct expr *x = parse_cmp(p);
	while (x && accept(p, "&&")) {
		struct expr *b = parse_cmp(p);
		if (!b) { expr_free(x); return NULL; }
		x = bin(p, OP_AND, x, b);
	}
	return x;
}

static struct expr *parse_or(struct parser *p)
{
	struct expr *x = parse_and(p);
	while (x && accept(p, "||")) {
		struct expr *b = parse_and(p);
		if (!b) { expr_free(x); return NULL; }
		x = bin(p, OP_OR, x, b);
	}
	return x;
}

static void describe(struct expr *x, char *buf, size_t n)
{
	if (!x)
		return;
	if (x->type == N_VAR) {
		size_t l = strlen(buf);
		snprintf(buf + l, n - l, "%s%s", l ? "; " : "",
		         x->names ? x->names->describe(x->names->ctx, x->uref) : vars_describe(x->ref));
	}
	describe(x->a, buf, n);
	describe(x->b, buf, n);
}

static struct expr *compile(struct parser p, const char *text, char *err, size_t n)
{
	if (!text || !*text) {
		snprintf(err, n, "missing expression");
		return NULL;
	}
	struct expr *x = parse_or(&p);
	skip(&p);
	if (x && *p.s) {
		expr_free(x);
		x = NULL;
		fail(&p, "unexpected text");
	}
	if (x) {
		char d[512] = "";
		describe(x, d, sizeof d);
		x->desc = strdup(d);
	}
	return x;
}

struct expr *expr_compile(const char *text, struct vars *v, uint64_t link_pc, char *err, size_t n)
{
	return compile((struct parser){ .s = text, .vars = v, .pc = link_pc, .err = err, .n = n }, text, err, n);
}

struct expr *expr_compile_names(const char *text, const struct expr_names *names, uint64_t pc, char *err, size_t n)
{
	return compile((struct parser){ .s = text, .names = names, .pc = pc, .err = err, .n = n }, text, err, n);
}

struct evalctx {
	struct hit *h;
	struct module *m;
	char *err;
	size_t n;
};

static int env_reg(void *ctx, int r, uint64_t *v)
{
	struct evalctx *c = ctx;
	return arch_dwarf_reg(c->h->regs, r, v);
}

static int env_fpreg(void *ctx, int r, uint8_t buf[16])
{
	struct evalctx *c = ctx;
	if (hit_fpregs(c->h))
		return -1;
	return arch_dwarf_fpreg(&c->h->fp, r, buf);
}

static int env_mem(void *ctx, uint64_t a, void *b, size_t n)
{
	struct evalctx *c = ctx;
	return target_read(&c->h->e->t, a, b, n);
}

static long double as_f(const struct expr_val *v)
{
	return v->is_float ? v->f : (long double)v->i;
}

static int ev(struct expr *x, struct evalctx *c, const struct var_env *env, struct expr_val *o)
{
	struct expr_val a, b;
	memset(o, 0, sizeof *o);
	switch (x->type) {
	case N_NUM:
		*o = x->v;
		return 0;
	case N_VAR: {
		struct var_value vv;
		if (x->names) {
			if (x->names->read(x->names->ctx, x->uref, o, c->err, c->n))
				return -1;
			x->v = *o;
			x->have = 1;
			return 0;
		}
		if (!env) {
			snprintf(c->err, c->n, "%s: no access to the program's registers and memory", x->name);
			return -1;
		}
		if (vars_eval(x->ref, env, &vv, c->err, c->n))
			return -1;
		if (vv.type == VAR_FLOAT) {
			o->is_float = 1;
			o->f = vv.f;
		} else {
			o->i = vv.type == VAR_INT ? vv.i : (int64_t)vv.u;
		}
		x->v = *o;
		x->have = 1;
		return 0;
	}
	case N_NOT:
		if (ev(x->a, c, env, &a))
			return -1;
		o->i = a.is_float ? a.f == 0 : a.i == 0;
		return 0;
	case N_NEG:
		if (ev(x->a, c, env, &a))
			return -1;
		*o = a;
		if (a.is_float)
			o->f = -a.f;
		else
			o->i = (int64_t)(0 - (uint64_t)a.i);
		return 0;
	}
	if (ev(x->a, c, env, &a))
		return -1;
	int at = a.is_float ? a.f != 0 : a.i != 0;
	if (x->op == OP_AND && !at)
		return 0;
	if (x->op == OP_OR && at) {
		o->i = 1;
		return 0;
	}
	if (ev(x->b, c, env, &b))
		return -1;
	int bt = b.is_float ? b.f != 0 : b.i != 0;
	int fl = a.is_float || b.is_float;
	long double fa = as_f(&a), fb = as_f(&b);
	switch (x->op) {
	case OP_AND: case OP_OR: o->i = bt; return 0;
	case OP_EQ: o->i = fl ? fa == fb : a.i == b.i; return 0;
	case OP_NE: o->i = fl ? fa != fb : a.i != b.i; return 0;
	case OP_LT: o->i = fl ? fa < fb : a.i < b.i; return 0;
	case OP_LE: o->i = fl ? fa <= fb : a.i <= b.i; return 0;
	case OP_GT: o->i = fl ? fa > fb : a.i > b.i; return 0;
	case OP_GE: o->i = fl ? fa >= fb : a.i >= b.i; return 0;
	}
	o->is_float = fl;
	if ((x->op == OP_DIV || x->op == OP_MOD) && (fl ? fb == 0 : b.i == 0)) {
		snprintf(c->err, c->n, "division by zero");
		return -1;
	}
	switch (x->op) {
	case OP_ADD: if (fl) o->f = fa + fb; else o->i = (int64_t)((uint64_t)a.i + (uint64_t)b.i); break;
	case OP_SUB: if (fl) o->f = fa - fb; else o->i = (int64_t)((uint64_t)a.i - (uint64_t)b.i); break;
	case OP_MUL: if (fl) o->f = fa * fb; else o->i = (int64_t)((uint64_t)a.i * (uint64_t)b.i); break;
	case OP_DIV:
		if (fl) o->f = fa / fb;
		else o->i = (a.i == INT64_MIN && b.i == -1) ? a.i : a.i / b.i;
		break;
	case OP_MOD:
		if (fl) { o->is_float = 0; o->i = 0; snprintf(c->err, c->n, "%% on floating values"); return -1; }
		o->i = (a.i == INT64_MIN && b.i == -1) ? 0 : a.i % b.i;
		break;
	}
	return 0;
}

static void clear(struct expr *x)
{
	if (!x)
		return;
	x->have = 0;
	clear(x->a);
	clear(x->b);
}

int expr_eval(const struct expr *cx, struct hit *h, struct module *m, struct expr_val *out,
              char *err, size_t n)
{
	struct evalctx c = { h, m, err, n };
	struct var_env env = { env_reg, env_fpreg, env_mem, &c, m->bias };
	struct expr *x = (struct expr *)cx;
	clear(x);
	return ev(x, &c, &env, out);
}

int expr_eval_env(const struct expr *cx, const struct var_env *env, struct expr_val *out,
                  char *err, size_t n)
{
	struct evalctx c = { NULL, NULL, err, n };
	struct expr *x = (struct expr *)cx;
	clear(x);
	return ev(x, &c, env, out);
}

static void values(const struct expr *x, char *buf, size_t n)
{
	if (!x)
		return;
	if (x->type == N_VAR && x->have) {
		size_t l = strlen(buf);
		if (x->v.is_float)
			snprintf(buf + l, n - l, "%s%s=%Lg", l ? " " : "", x->name, x->v.f);
		else
			snprintf(buf + l, n - l, "%s%s=%lld", l ? " " : "", x->name, (long long)x->v.i);
	}
	values(x->a, buf, n);
	values(x->b, buf, n);
}

void expr_view(const struct expr *x, struct expr_view *out)
{
	*out = (struct expr_view){ .type = x->type, .op = x->op, .a = x->a, .b = x->b, .ref = x->ref };
	if (x->type == N_NUM)
		out->num = x->v;
}

/* In the order of values(): the node, then a, then b. */
static void set_values(struct expr *x, const int64_t *vals, uint32_t have, uint32_t dbl, int *k)
{
	if (!x)
		return;
	if (x->type == N_VAR) {
		int i = (*k)++;
		x->have = i < 32 && (have >> i & 1);
		x->v = (struct expr_val){ .i = x->have ? vals[i] : 0 };
		if (x->have && (dbl >> i & 1)) {
			union { int64_t i; double d; } u = { .i = vals[i] };
			x->v = (struct expr_val){ .is_float = 1, .f = u.d };
		}
	}
	set_values(x->a, vals, have, dbl, k);
	set_values(x->b, vals, have, dbl, k);
}

void expr_set_values(struct expr *x, const int64_t *vals, uint32_t have)
{
	expr_set_values_dbl(x, vals, have, 0);
}

void expr_set_values_dbl(struct expr *x, const int64_t *vals, uint32_t have, uint32_t dbl)
{
	int k = 0;
	set_values(x, vals, have, dbl, &k);
}

void expr_values(const struct expr *x, char *buf, size_t n)
{
	buf[0] = 0;
	values(x, buf, n);
}

const struct var_ref *expr_single_var(const struct expr *x)
{
	return x && x->type == N_VAR ? x->ref : NULL;
}

const char *expr_describe(const struct expr *x)
{
	return x && x->desc ? x->desc : "";
}

void expr_free(struct expr *x)
{
	if (!x)
		return;
	expr_free(x->a);
	expr_free(x->b);
	if (x->ref)
		vars_free(x->ref);
	if (x->names && x->names->free)
		x->names->free(x->names->ctx, x->uref);
	free(x->name);
	free(x->desc);
	free(x);
}

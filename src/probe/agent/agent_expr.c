/* agent_expr.c — assert expressions into the agent's bytecode (agent_expr.h).
 *
 * The tree is walked as expr.c evaluates it: a variable is its location's
 * program (agent_var.c) cut to its size and extended by its type (PA_V_EXT),
 * then kept (PA_V_SAVE) for the failure's text; && and || jump over their
 * right operand (PA_V_JZ, PA_V_JNZ, forward only) as expr.c skips it; the
 * operators are expr.c's on 64-bit signed integers (division by zero: the
 * hit is unavailable, as on ptrace).  Floating-point constants (the long
 * double expr.c parsed, PA_V_FPUSH) and variables (PA_V_FEXT) make it a
 * program the agent's floating-point code runs (var.fprog,
 * src/rt/probe_float.c), with expr.c's promotions. */
#include "probe/agent/agent_expr.h"

#include "common/probe_area.h"
#include "probe/agent/agent_var.h"
#include "probe/expr.h"

#include <stdio.h>
#include <string.h>

struct ec {
	struct pa_var *v;
	uint64_t bias, lo, hi;
	int nvars;
	char *why;
	size_t n;
};

static int emit(struct ec *c, uint8_t op, uint8_t a, int64_t k)
{
	return agent_emit(c->v, op, a, k, "expression", c->why, c->n);
}

/* x's program; *fl: its value is floating (expr.c's promotions, known from
 * the leaves' types). */
static int lower(struct ec *c, const struct expr *x, int depth, int *fl)
{
	int fa = 0, fb = 0;
	*fl = 0;
	struct expr_view w;
	expr_view(x, &w);
	if (depth > 32) {
		snprintf(c->why, c->n, "the expression is nested too deeply");
		return -1;
	}
	switch (w.type) {
	case EXPR_NUM:
		if (w.num.is_float) { /* the long double expr.c parsed: its significand, sign and exponent */
			union { long double f; struct { uint64_t m; uint16_t se; } b; } u = { 0 };
			u.f = w.num.f;
			if (emit(c, PA_V_FPUSH, 0, (int64_t)u.b.m))
				return -1;
			c->v->prog[c->v->nprog - 1].pad[0] = (uint8_t)u.b.se;
			c->v->prog[c->v->nprog - 1].pad[1] = (uint8_t)(u.b.se >> 8);
			c->v->fprog = 1;
			*fl = 1;
			return 0;
		}
		return emit(c, PA_V_PUSH, 0, w.num.i);
	case EXPR_VAR: {
		if (c->nvars >= PA_VAR_SAVE) {
			snprintf(c->why, c->n, "more than %d variables", PA_VAR_SAVE);
			return -1;
		}
		struct pa_var one;
		if (agent_var_compile(w.ref, c->bias, c->lo, c->hi, &one, c->why, c->n))
			return -1;
		for (uint32_t i = 0; i < one.nprog; i++)
			if (emit(c, one.prog[i].op, one.prog[i].a, one.prog[i].k))
				return -1;
		if (one.type == PA_VT_FLOAT) { /* its bits become a floating value, kept as a double's bits */
			c->v->fprog = 1;
			c->v->fsave |= 1u << c->nvars;
			*fl = 1;
			return emit(c, PA_V_FEXT, one.size, 0) || emit(c, PA_V_SAVE, (uint8_t)c->nvars++, 0);
		}
		return emit(c, PA_V_EXT, (uint8_t)(one.size | (one.type == PA_VT_INT ? 0x80 : 0)), 0) ||
		       emit(c, PA_V_SAVE, (uint8_t)c->nvars++, 0);
	}
	case EXPR_NOT:
	case EXPR_NEG:
		if (lower(c, w.a, depth + 1, &fa))
			return -1;
		*fl = w.type == EXPR_NEG && fa;
		return emit(c, w.type == EXPR_NOT ? PA_V_LNOT : PA_V_NEG, 0, 0);
	default:
		break;
	}
	if (lower(c, w.a, depth + 1, &fa))
		return -1;
	if (w.op == EXPR_AND || w.op == EXPR_OR) {
		uint32_t j = c->v->nprog;
		if (emit(c, w.op == EXPR_AND ? PA_V_JZ : PA_V_JNZ, 0, 0) || lower(c, w.b, depth + 1, &fb) ||
		    emit(c, PA_V_BOOL, 0, 0))
			return -1;
		c->v->prog[j].k = (int64_t)(c->v->nprog - j);
		return 0;
	}
	static const uint8_t ops[] = {
		[EXPR_EQ] = PA_V_EQ, [EXPR_NE] = PA_V_NE, [EXPR_LT] = PA_V_LT, [EXPR_LE] = PA_V_LE,
		[EXPR_GT] = PA_V_GT, [EXPR_GE] = PA_V_GE, [EXPR_ADD] = PA_V_PLUS, [EXPR_SUB] = PA_V_MINUS,
		[EXPR_MUL] = PA_V_MUL, [EXPR_DIV] = PA_V_DIV, [EXPR_MOD] = PA_V_MOD,
	};
	if (w.op < 0 || (size_t)w.op >= sizeof ops || !ops[w.op]) {
		snprintf(c->why, c->n, "operator %d", w.op);
		return -1;
	}
	if (lower(c, w.b, depth + 1, &fb))
		return -1;
	if (w.op == EXPR_MOD && (fa || fb)) {
		snprintf(c->why, c->n, "%% of floating-point values");
		return -1;
	}
	*fl = (fa || fb) && (w.op == EXPR_ADD || w.op == EXPR_SUB || w.op == EXPR_MUL || w.op == EXPR_DIV);
	return emit(c, ops[w.op], 0, 0);
}

int agent_expr_compile(const struct expr *x, uint64_t bias, uint64_t mod_lo, uint64_t mod_hi, struct pa_var *out,
                       char *why, size_t n)
{
	memset(out, 0, sizeof *out);
	out->min = INT64_MAX;
	out->max = INT64_MIN;
	out->type = PA_VT_INT;
	out->size = 8;
	out->is_assert = 1;
	why[0] = 0;
	struct ec c = { out, bias, mod_lo, mod_hi, 0, why, n };
	int fl;
	return lower(&c, x, 0, &fl);
}

/* agent_expr.c — assert expressions into the agent's bytecode (agent_expr.h).
 *
 * The tree is walked as expr.c evaluates it: a variable is its location's
 * program (agent_var.c) cut to its size and extended by its type (PA_V_EXT),
 * then kept (PA_V_SAVE) for the failure's text; && and || jump over their
 * right operand (PA_V_JZ, PA_V_JNZ, forward only) as expr.c skips it; the
 * operators are expr.c's on 64-bit signed integers (division by zero: the
 * hit is unavailable, as on ptrace). */
#include "probe/agent_expr.h"

#include "common/probe_area.h"
#include "probe/agent_var.h"
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
	if (c->v->nprog >= PA_VAR_PROG_MAX) {
		snprintf(c->why, c->n, "the expression needs more than %d instructions", PA_VAR_PROG_MAX);
		return -1;
	}
	c->v->prog[c->v->nprog++] = (struct pa_vinsn){ .op = op, .a = a, .k = k };
	return 0;
}

static int lower(struct ec *c, const struct expr *x, int depth)
{
	struct expr_view w;
	expr_view(x, &w);
	if (depth > 32) {
		snprintf(c->why, c->n, "the expression is nested too deeply");
		return -1;
	}
	switch (w.type) {
	case EXPR_NUM:
		if (w.num.is_float) {
			snprintf(c->why, c->n, "a floating-point constant");
			return -1;
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
		if (one.type == PA_VT_FLOAT) {
			snprintf(c->why, c->n, "a floating-point variable");
			return -1;
		}
		for (uint32_t i = 0; i < one.nprog; i++)
			if (emit(c, one.prog[i].op, one.prog[i].a, one.prog[i].k))
				return -1;
		return emit(c, PA_V_EXT, (uint8_t)(one.size | (one.type == PA_VT_INT ? 0x80 : 0)), 0) ||
		       emit(c, PA_V_SAVE, (uint8_t)c->nvars++, 0);
	}
	case EXPR_NOT:
	case EXPR_NEG:
		return lower(c, w.a, depth + 1) || emit(c, w.type == EXPR_NOT ? PA_V_LNOT : PA_V_NEG, 0, 0);
	default:
		break;
	}
	if (lower(c, w.a, depth + 1))
		return -1;
	if (w.op == EXPR_AND || w.op == EXPR_OR) {
		uint32_t j = c->v->nprog;
		if (emit(c, w.op == EXPR_AND ? PA_V_JZ : PA_V_JNZ, 0, 0) || lower(c, w.b, depth + 1) ||
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
	return lower(c, w.b, depth + 1) || emit(c, ops[w.op], 0, 0);
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
	return lower(&c, x, 0);
}

/* agent_var.c — DWARF locations into the agent's bytecode (agent_var.h).
 *
 * The DWARF expression is already a stack machine: most operations map to
 * one instruction; DW_OP_fbreg and DW_OP_call_frame_cfa have the frame
 * base's and the CFA's own operations (as vars.c resolved them for this
 * address) put in their place.  What the location designates (a register,
 * an address, a value) is then followed along the access path (members,
 * dereferences, constant indexes) and read with the variable's size. */
#include "probe/agent/agent_var.h"

#include "common/probe_area.h"
#include "sym/vars.h"

#include <dwarf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { K_MEM, K_VAL };  /* the top of the stack: an address, or the value itself */

struct cc {
	struct pa_var *v;
	const struct vars_shape *sh;
	uint64_t bias;
	char *why;
	size_t n;
};

int agent_emit(struct pa_var *v, uint8_t op, uint8_t a, int64_t k, const char *what, char *why, size_t n)
{
	if (v->nprog >= PA_VAR_PROG_MAX) {
		snprintf(why, n, "the %s needs more than %d instructions", what, PA_VAR_PROG_MAX);
		return -1;
	}
	v->prog[v->nprog++] = (struct pa_vinsn){ .op = op, .a = a, .k = k };
	return 0;
}

static int emit(struct cc *c, uint8_t op, uint8_t a, int64_t k)
{
	return agent_emit(c->v, op, a, k, "location", c->why, c->n);
}

static int lower(struct cc *c, const struct vars_op *ops, size_t nops, int depth, int *kind);

/* The address the frame base or the CFA designates, pushed. */
static int push_base(struct cc *c, const struct vars_op *ops, size_t nops, int depth, const char *what)
{
	int kind;
	if (!nops) {
		snprintf(c->why, c->n, "no %s at this address", what);
		return -1;
	}
	if (depth > 3) {
		snprintf(c->why, c->n, "the %s is too deep", what);
		return -1;
	}
	if (lower(c, ops, nops, depth + 1, &kind))
		return -1;
	return 0; /* a register frame base (DW_OP_reg6) pushed its value: the address */
}

static int lower(struct cc *c, const struct vars_op *ops, size_t nops, int depth, int *kind)
{
	*kind = K_MEM;
	for (size_t i = 0; i < nops; i++) {
		const struct vars_op *o = &ops[i];
		uint8_t a = o->atom;
		int rc = 0;
		if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
			rc = emit(c, PA_V_PUSH, 0, a - DW_OP_lit0);
		} else if ((a >= DW_OP_reg0 && a <= DW_OP_reg31) || a == DW_OP_regx) {
			int r = a == DW_OP_regx ? (int)o->n1 : a - DW_OP_reg0;
			/* xmm0-15 (17-32): a float or double variable's whole value */
			int xmm = r >= 17 && r <= 32 && !depth && c->sh->enc == VAR_FLOAT && !c->sh->nsteps;
			if ((r > 16 && !xmm) || i + 1 != nops) {
				snprintf(c->why, c->n, r > 16 ? "the value is in a vector or x87 register"
				                              : "the value is in pieces");
				return -1;
			}
			rc = emit(c, PA_V_REG, (uint8_t)r, 0);
			*kind = K_VAL;
		} else if ((a >= DW_OP_breg0 && a <= DW_OP_breg31) || a == DW_OP_bregx) {
			int r = a == DW_OP_bregx ? (int)o->n1 : a - DW_OP_breg0;
			int64_t off = (int64_t)(a == DW_OP_bregx ? o->n2 : o->n1);
			if (r > 16) {
				snprintf(c->why, c->n, "an address from a vector register");
				return -1;
			}
			rc = emit(c, PA_V_REG, (uint8_t)r, 0) || (off && emit(c, PA_V_ADD, 0, off));
		} else {
			switch (a) {
			case DW_OP_addr: rc = emit(c, PA_V_PUSH, 0, (int64_t)(o->n1 + c->bias)); break;
			case DW_OP_const1u: case DW_OP_const2u: case DW_OP_const4u: case DW_OP_const8u:
			case DW_OP_const1s: case DW_OP_const2s: case DW_OP_const4s: case DW_OP_const8s:
			case DW_OP_constu: case DW_OP_consts:
				rc = emit(c, PA_V_PUSH, 0, (int64_t)o->n1);
				break;
			case DW_OP_fbreg:
				rc = push_base(c, c->sh->fb, c->sh->nfb, depth, "frame base") ||
				     (o->n1 && emit(c, PA_V_ADD, 0, (int64_t)o->n1));
				break;
			case DW_OP_call_frame_cfa:
				rc = push_base(c, c->sh->cfa, c->sh->ncfa, depth, "call frame information");
				break;
			case DW_OP_plus_uconst: rc = emit(c, PA_V_ADD, 0, (int64_t)o->n1); break;
			case DW_OP_deref: rc = emit(c, PA_V_DEREF, 8, 0); break;
			case DW_OP_deref_size:
				if (o->n1 != 1 && o->n1 != 2 && o->n1 != 4 && o->n1 != 8) {
					snprintf(c->why, c->n, "a read of %llu bytes", (unsigned long long)o->n1);
					return -1;
				}
				rc = emit(c, PA_V_DEREF, (uint8_t)o->n1, 0);
				break;
			case DW_OP_dup: rc = emit(c, PA_V_DUP, 0, 0); break;
			case DW_OP_drop: rc = emit(c, PA_V_DROP, 0, 0); break;
			case DW_OP_swap: rc = emit(c, PA_V_SWAP, 0, 0); break;
			case DW_OP_over: rc = emit(c, PA_V_OVER, 0, 0); break;
			case DW_OP_pick:
				if (o->n1 > 1)
					goto unsupported;
				rc = emit(c, o->n1 ? PA_V_OVER : PA_V_DUP, 0, 0);
				break;
			case DW_OP_neg: rc = emit(c, PA_V_NEG, 0, 0); break;
			case DW_OP_not: rc = emit(c, PA_V_NOT, 0, 0); break;
			case DW_OP_plus: rc = emit(c, PA_V_PLUS, 0, 0); break;
			case DW_OP_minus: rc = emit(c, PA_V_MINUS, 0, 0); break;
			case DW_OP_mul: rc = emit(c, PA_V_MUL, 0, 0); break;
			case DW_OP_and: rc = emit(c, PA_V_AND, 0, 0); break;
			case DW_OP_or: rc = emit(c, PA_V_OR, 0, 0); break;
			case DW_OP_xor: rc = emit(c, PA_V_XOR, 0, 0); break;
			case DW_OP_shl: rc = emit(c, PA_V_SHL, 0, 0); break;
			case DW_OP_shr: rc = emit(c, PA_V_SHR, 0, 0); break;
			case DW_OP_shra: rc = emit(c, PA_V_SHRA, 0, 0); break;
			case DW_OP_nop: break;
			case DW_OP_stack_value:
				if (i + 1 != nops) {
					snprintf(c->why, c->n, "the value is in pieces");
					return -1;
				}
				*kind = K_VAL;
				break;
			case DW_OP_piece: case DW_OP_bit_piece:
				snprintf(c->why, c->n, "the value is in pieces");
				return -1;
			case DW_OP_entry_value: case DW_OP_GNU_entry_value:
				snprintf(c->why, c->n, "only the value at the function's entry is described");
				return -1;
			default:
			unsupported:
				snprintf(c->why, c->n, "DWARF operation 0x%x", a);
				return -1;
			}
		}
		if (rc)
			return -1;
	}
	return 0;
}

int agent_var_compile(const struct var_ref *r, uint64_t bias, uint64_t mod_lo, uint64_t mod_hi, struct pa_var *out,
                      char *why, size_t n)
{
	struct vars_shape sh;
	vars_shape(r, &sh);
	memset(out, 0, sizeof *out);
	out->min = INT64_MAX;
	out->max = INT64_MIN;
	struct cc c = { out, &sh, bias, why, n };
	why[0] = 0;
	if (sh.enc == VAR_FLOAT && sh.size != 4 && sh.size != 8) {
		snprintf(why, n, "a floating-point value of %d bytes", sh.size);
		return -1;
	}
	if (sh.size != 1 && sh.size != 2 && sh.size != 4 && sh.size != 8) {
		snprintf(why, n, "a value of %d bytes", sh.size);
		return -1;
	}
	out->type = sh.enc == VAR_FLOAT ? PA_VT_FLOAT : sh.enc == VAR_INT ? PA_VT_INT : PA_VT_UINT;
	out->size = (uint8_t)sh.size;
	if (sh.no_value)
		return emit(&c, PA_V_NOVALUE, 0, 0);
	int kind = K_VAL;
	if (sh.has_const) {
		if (emit(&c, PA_V_PUSH, 0, sh.cval))
			return -1;
	} else if (!sh.nloc) {
		return emit(&c, PA_V_NOVALUE, 0, 0);
	} else if (lower(&c, sh.loc, sh.nloc, 0, &kind)) {
		return -1;
	}
	/* A global of the site's own module (DW_OP_addr): its address is
	 * mapped while the site's code runs, the agent reads it directly. */
	int fixed = sh.nloc == 1 && sh.loc[0].atom == DW_OP_addr && kind == K_MEM;
	uint64_t fixed_addr = fixed ? sh.loc[0].n1 + bias : 0;
	/* The access path: off is added to an address before its next read. */
	int64_t off = 0;
	for (int i = 0; i < sh.nsteps; i++) {
		struct vars_step s;
		vars_step(r, i, &s);
		if (s.kind == VARS_MEMBER) {
			if (kind != K_MEM) {
				snprintf(why, n, "a member of a struct held in registers");
				return -1;
			}
			off += s.off;
			continue;
		}
		if (s.kind == VARS_INDEX && s.idx_is_var) {
			snprintf(why, n, "an index by a variable");
			return -1;
		}
		if (s.kind == VARS_DEREF || s.via_ptr) {
			if (kind == K_MEM) {
				if ((off && emit(&c, PA_V_ADD, 0, off)) || emit(&c, PA_V_DEREF, 8, 0))
					return -1;
			} else if (off) {
				snprintf(why, n, "a member of a value held in registers");
				return -1;
			}
			off = 0;
			kind = K_MEM;
			fixed = 0;
		}
		if (s.kind == VARS_INDEX) {
			if (kind != K_MEM) {
				snprintf(why, n, "an element of an array held in registers");
				return -1;
			}
			off += s.idx * (int64_t)s.esz;
		}
	}
	if (kind != K_MEM)
		return 0;
	uint64_t at = fixed_addr + (uint64_t)off;
	int direct = fixed && at >= mod_lo && at < mod_hi && at + (uint64_t)sh.size <= mod_hi;
	uint8_t a = (uint8_t)(sh.size | (out->type == PA_VT_INT ? 0x80 : 0) | (direct ? 0x40 : 0));
	return (off && emit(&c, PA_V_ADD, 0, off)) || emit(&c, PA_V_DEREF, a, 0) ? -1 : 0;
}

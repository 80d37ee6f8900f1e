/* kfetch.c — a module variable's DWARF location into a kprobe_events fetch
 * argument (kfetch.h).  The location (vars.c resolved it for the probe's
 * address: a location list's entry there, the frame base, the CFA) says
 * where the variable lives: a register, or memory at a register plus an
 * offset (DW_OP_breg, DW_OP_fbreg through the CFA), or at an address
 * (DW_OP_addr, a global: the running module's address of it).  The access
 * path's steps follow: a member adds its offset to the memory place, a
 * dereference reads the pointer there and makes it the new base, a
 * constant index adds index times the element's size.  The fetch
 * arguments nest the same way: "+OFF(FETCHARG)" reads memory at FETCHARG's
 * value plus OFF.  Registers are x86-64's (the kernel's names of pt_regs). */
#include "probe/kernel/kfetch.h"

#include "sym/vars.h"

#include <dwarf.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define K_FETCH_MAX 200   /* the longest argument made (the kernel takes 256 per argument; MAX_ARGSTR_LEN) */

enum { P_REG, P_MEM, P_ABS };

/* Where the value is: in register reg; at the value of base plus off; at abs. */
struct place {
	int kind;
	const char *reg;
	char base[K_FETCH_MAX];
	int64_t off;
	uint64_t abs;
	int how;                 /* abs: KF_KERNEL or KF_FILE */
};

static const char *reg_name(uint64_t r)
{
#if defined(__x86_64__)
	static const char *const names[] = { "ax", "dx", "cx", "bx", "si", "di", "bp", "sp",
	                                     "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" };
	return r < sizeof names / sizeof names[0] ? names[r] : NULL;
#else
	(void)r;
	return NULL;
#endif
}

static int bad_reg(uint64_t r, char *err, size_t n)
{
	snprintf(err, n, "DWARF register %" PRIu64 " has no name in the kernel's fetch arguments%s", r,
#if defined(__x86_64__)
	         ""
#else
	         " (kernel variables: x86-64 only)"
#endif
	);
	return -1;
}

/* One register-relative or register operation into *p: memory at reg +
 * its offset + extra, or (DW_OP_reg, unless as_addr: a frame base's or
 * the CFA's register, whose value is an address) the register itself. */
static int reg_op(const struct vars_op *o, int64_t extra, int as_addr, struct place *p, char *err, size_t n)
{
	uint64_t r;
	int64_t off = 0;
	int isreg = 0;
	if (o->atom >= DW_OP_breg0 && o->atom <= DW_OP_breg31) {
		r = (uint64_t)(o->atom - DW_OP_breg0);
		off = (int64_t)o->n1;
	} else if (o->atom == DW_OP_bregx) {
		r = o->n1;
		off = (int64_t)o->n2;
	} else if (o->atom >= DW_OP_reg0 && o->atom <= DW_OP_reg31) {
		r = (uint64_t)(o->atom - DW_OP_reg0);
		isreg = 1;
	} else if (o->atom == DW_OP_regx) {
		r = o->n1;
		isreg = 1;
	} else {
		snprintf(err, n, "a DWARF location (operation 0x%x) the fetch arguments cannot express", o->atom);
		return -1;
	}
	if (isreg && !as_addr) {   /* the register itself */
		if (!(p->reg = reg_name(r)))
			return bad_reg(r, err, n);
		p->kind = P_REG;
		return 0;
	}
	const char *name = reg_name(r);
	if (!name)
		return bad_reg(r, err, n);
	p->kind = P_MEM;
	snprintf(p->base, sizeof p->base, "%%%s", name);
	p->off = off + extra;
	return 0;
}

/* The place the location designates. */
static int lower(const struct vars_shape *sh, kfetch_addr_fn addr_of, void *ctx, struct place *p, char *err,
                 size_t n)
{
	const struct vars_op *l = sh->loc;
	size_t nl = sh->nloc;
	if (nl == 2 && l[1].atom == DW_OP_stack_value &&
	    (((l[0].atom >= DW_OP_breg0 && l[0].atom <= DW_OP_breg31) && !l[0].n1) ||
	     (l[0].atom == DW_OP_bregx && !l[0].n2))) {
		/* the value is a register's (reg + 0, computed) */
		uint64_t r = l[0].atom == DW_OP_bregx ? l[0].n1 : (uint64_t)(l[0].atom - DW_OP_breg0);
		if (!(p->reg = reg_name(r)))
			return bad_reg(r, err, n);
		p->kind = P_REG;
		return 0;
	}
	if (nl == 2 && l[0].atom == DW_OP_addr && l[1].atom == DW_OP_deref) {
		/* the address read from memory (a GOT slot, vars.c): the variable is where it points */
		if (addr_of(ctx, l[0].n1, &p->abs, &p->how, err, n))
			return -1;
		p->kind = P_MEM;
		snprintf(p->base, sizeof p->base, "@%s0x%" PRIx64, p->how == KF_FILE ? "+" : "", p->abs);
		p->off = 0;
		return 0;
	}
	if (nl != 1) {
		snprintf(err, n, "a computed or split DWARF location (%zu operations) the fetch arguments cannot express",
		         nl);
		return -1;
	}
	if (l[0].atom == DW_OP_addr) {
		p->kind = P_ABS;
		return addr_of(ctx, l[0].n1, &p->abs, &p->how, err, n);
	}
	if (l[0].atom != DW_OP_fbreg)
		return reg_op(&l[0], 0, 0, p, err, n);
	/* the frame base: a register, or the CFA (a register plus an offset at this address) */
	int64_t off = (int64_t)l[0].n1;
	if (sh->nfb == 1 && sh->fb[0].atom == DW_OP_call_frame_cfa) {
		if (sh->ncfa != 1) {
			snprintf(err, n, "no call frame information (CFA) at this address for a stack variable");
			return -1;
		}
		return reg_op(&sh->cfa[0], off, 1, p, err, n);
	}
	if (sh->nfb != 1) {
		snprintf(err, n, "a frame base the fetch arguments cannot express");
		return -1;
	}
	return reg_op(&sh->fb[0], off, 1, p, err, n);
}

/* The fetch argument reading the place's memory (no type) into out. */
static int mem_arg(const struct place *p, char *out, size_t on, char *err, size_t n)
{
	int k;
	if (p->kind == P_ABS)
		k = snprintf(out, on, "@%s0x%" PRIx64, p->how == KF_FILE ? "+" : "", p->abs);
	else
		k = snprintf(out, on, "%s%" PRId64 "(%s)", p->off < 0 ? "" : "+", p->off, p->base);
	if (k < 0 || (size_t)k >= on) {
		snprintf(err, n, "the access path nests too deep for a fetch argument");
		return -1;
	}
	return 0;
}

/* The pointer in the place read: the new base, offset 0. */
static int deref(struct place *p, char *err, size_t n)
{
	char b[K_FETCH_MAX];
	if (p->kind == P_REG)
		snprintf(b, sizeof b, "%%%s", p->reg);
	else if (mem_arg(p, b, sizeof b, err, n))
		return -1;
	memcpy(p->base, b, sizeof b);
	p->kind = P_MEM;
	p->off = 0;
	return 0;
}

static int add_off(struct place *p, int64_t k, const char *what, char *err, size_t n)
{
	if (p->kind == P_REG) {
		snprintf(err, n, "%s of a value in a register (a struct or an array kept in registers)", what);
		return -1;
	}
	if (p->kind == P_ABS)
		p->abs += (uint64_t)k;
	else
		p->off += k;
	return 0;
}

int kfetch_arg(const struct var_ref *r, kfetch_addr_fn addr_of, void *ctx, char *out, size_t on, int *enc,
               int *size, char *err, size_t n)
{
	struct vars_shape sh;
	struct place p;
	memset(&p, 0, sizeof p);
	vars_shape(r, &sh);
	if (sh.no_value) {
		snprintf(err, n, "%s", sh.no_value);
		return -1;
	}
	if (sh.has_const) {
		snprintf(err, n, "a constant here (no fetch argument)");
		return -1;
	}
	if (lower(&sh, addr_of, ctx, &p, err, n))
		return -1;
	for (int i = 0; i < sh.nsteps; i++) {
		struct vars_step s;
		vars_step(r, i, &s);
		if (s.kind == VARS_MEMBER) {
			if (add_off(&p, s.off, "a member", err, n))
				return -1;
		} else if (s.kind == VARS_DEREF) {
			if (deref(&p, err, n))
				return -1;
		} else {
			if (s.idx_is_var) {
				snprintf(err, n, "an index by a variable (the fetch arguments take constant indexes)");
				return -1;
			}
			if ((s.via_ptr && deref(&p, err, n)) ||
			    add_off(&p, s.idx * (int64_t)s.esz, "an element", err, n))
				return -1;
		}
	}
	if (sh.size != 1 && sh.size != 2 && sh.size != 4 && sh.size != 8) {
		snprintf(err, n, "a value of %d bytes (the fetch arguments read 1, 2, 4 or 8)", sh.size);
		return -1;
	}
	char a[K_FETCH_MAX];
	if (p.kind == P_REG)
		snprintf(a, sizeof a, "%%%s", p.reg);
	else if (mem_arg(&p, a, sizeof a, err, n))
		return -1;
	int k = snprintf(out, on, "%s:%c%d", a, sh.enc == VAR_INT ? 's' : 'u', sh.size * 8);
	if (k < 0 || (size_t)k >= on) {
		snprintf(err, n, "the access path nests too deep for a fetch argument");
		return -1;
	}
	*enc = sh.enc;
	*size = sh.size;
	return 0;
}

/* remote_emulate.c — the AArch64 instructions that sonde executes itself at
 * a remote breakpoint (rarch.emulate, arch/remote_arch.h), so that a hit
 * resumes without a single step: on QEMU a step costs a flush of the whole
 * translation cache, twice (docs/REMOTE.md "Cost per hit").
 *
 * Emulated: nop and bti; add/sub (immediate, shifted and extended register,
 * with the flags of adds/subs/cmp/cmn); logical shifted register (and, orr,
 * eor, ands, bic, orn, eon, bics: mov and tst among them); movz, movn, movk;
 * adr, adrp; b, bl, br, blr, ret; b.cond, cbz, cbnz, tbz, tbnz; ldr/str of
 * general registers (unsigned offset, unscaled, pre- and post-index,
 * register offset; bytes, halves, words, doublewords, sign-extending
 * loads); ldp/stp/ldpsw of general registers; prfm (nothing to do).
 * Everything else (pointer authentication among it, whose keys sonde does
 * not have; floating point; atomics; system registers) is stepped.
 *
 * Stub register numbers (gdb's aarch64-core.xml): x0..x30 = 0..30, sp = 31,
 * pc = 32, cpsr = 33.  In an instruction, register 31 is sp or the zero
 * register depending on the operand, as the Arm ARM says per field. */
#include "arch/remote_arch.h"
#include "arch/bits.h"

#include <string.h>

enum { R_SP = 31, R_PC = 32, R_CPSR = 33 };

/* Register r of an operand: 31 is sp when sp_ok, else the zero register.
 * A 32-bit operand reads the low half. */
static int get(struct remu *u, int r, int sp_ok, int wide, uint64_t *v)
{
	if (r == 31 && !sp_ok) {
		*v = 0;
		return 0;
	}
	if (u->reg(u->ctx, r, v))
		return -1;
	if (!wide)
		*v = (uint32_t)*v;
	return 0;
}

/* A result into register r (a 32-bit result clears the upper half); the
 * zero register discards it.  1 when more registers change than remu holds. */
static int put(struct remu *u, int r, int sp_ok, int wide, uint64_t v)
{
	if (r == 31 && !sp_ok)
		return 0;
	for (int i = 0; i < u->nset; i++)
		if (u->set[i].regno == r) {
			u->set[i].val = wide ? v : (uint32_t)v;
			return 0;
		}
	if (u->nset >= REMU_MAX_SET - 1)  /* the last one is the pc's */
		return 1;
	u->set[u->nset].regno = r;
	u->set[u->nset].val = wide ? v : (uint32_t)v;
	u->nset++;
	return 0;
}

static int flags(struct remu *u, uint32_t nzcv)
{
	uint64_t old;
	if (u->reg(u->ctx, R_CPSR, &old))
		return -1;
	return put(u, R_CPSR, 1, 1, (old & 0x0fffffffu) | nzcv);
}

static uint32_t nz(uint64_t r, int wide)
{
	uint64_t sign = wide ? r >> 63 : (r >> 31) & 1;
	int zero = wide ? r == 0 : (uint32_t)r == 0;
	return (uint32_t)sign << 31 | (uint32_t)zero << 30;
}

/* x + y + carry, and its NZCV (the Arm ARM's AddWithCarry). */
static uint64_t add_carry(uint64_t x, uint64_t y, int carry, int wide, uint32_t *nzcv)
{
	uint64_t r, c, v;
	if (wide) {
		r = x + y + (uint64_t)carry;
		c = carry ? r <= x : r < x;
		v = (~(x ^ y) & (x ^ r)) >> 63;
	} else {
		uint64_t s = (uint64_t)(uint32_t)x + (uint32_t)y + (uint64_t)carry;
		r = (uint32_t)s;
		c = s >> 32;
		v = ((~((uint32_t)x ^ (uint32_t)y) & ((uint32_t)x ^ (uint32_t)r)) >> 31) & 1;
	}
	*nzcv = nz(r, wide) | (uint32_t)c << 29 | (uint32_t)v << 28;
	return r;
}

static uint64_t shift(uint64_t v, int type, int amount, int wide)
{
	int bits = wide ? 64 : 32;
	uint64_t mask = wide ? ~0ull : 0xffffffffull;
	v &= mask;
	if (!amount)
		return v;
	switch (type) {
	case 0: return (v << amount) & mask;
	case 1: return v >> amount;
	case 2: return (uint64_t)(sext(v, bits) >> amount) & mask;
	default: return ((v >> amount) | (v << (bits - amount))) & mask;
	}
}

/* The extended-register operand: UXTB..UXTX, SXTB..SXTX, then << amount. */
static uint64_t extend(uint64_t v, int option, int amount)
{
	int bytes = 1 << (option & 3);
	if (bytes < 8) {
		uint64_t m = (1ull << (8 * bytes)) - 1;
		v = option & 4 ? (uint64_t)sext(v & m, 8 * bytes) : v & m;
	}
	return v << amount;
}

static uint64_t load_le_be(const uint8_t *b, int n, int big_endian)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)b[big_endian ? n - 1 - i : i] << (8 * i);
	return v;
}

static void store_le_be(uint8_t *b, int n, uint64_t v, int big_endian)
{
	for (int i = 0; i < n; i++)
		b[big_endian ? n - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

/* ldr/str of one general register at addr; size in bytes; opc as encoded:
 * 0 store, 1 load zero-extended, 2 load sign-extended to 64, 3 to 32. */
static int load_store(struct remu *u, int big_endian, int opc, int size, int rt, uint64_t addr)
{
	if (opc == 0) {
		uint64_t v;
		if (get(u, rt, 0, 1, &v))
			return -1;
		u->store_addr = addr;
		u->store_len = size;
		store_le_be(u->store, size, v, big_endian);
		return 0;
	}
	uint8_t b[8];
	if (u->read(u->ctx, addr, b, (size_t)size))
		return -1;
	uint64_t v = load_le_be(b, size, big_endian);
	if (opc == 1)
		return put(u, rt, 0, 1, v);
	v = (uint64_t)sext(v, 8 * size);
	return put(u, rt, 0, opc == 2, v);
}

int rarch_aarch64_emulate(const uint8_t *code, size_t n, uint64_t pc, int big_endian, struct remu *u)
{
	if (n < 4)
		return 1;
	uint32_t w = (uint32_t)code[3] << 24 | (uint32_t)code[2] << 16 | (uint32_t)code[1] << 8 | code[0];
	int wide = (int)(w >> 31), rd = (int)(w & 31), rn = (int)((w >> 5) & 31), rm = (int)((w >> 16) & 31);
	uint64_t next = pc + 4, x, y, r;
	uint32_t nzcv;
	int rc = 0;
	u->nset = 0;
	u->store_len = 0;

	if ((w & 0xfffff01fu) == 0xd503201fu) {                           /* hint: nop, bti */
		int imm = (int)((w >> 5) & 0x7f);
		if (imm != 0 && (imm & ~6) != 32)
			return 1;
	} else if ((w & 0x1f800000u) == 0x11000000u) {                    /* add/sub immediate */
		int sub = (int)((w >> 30) & 1), s = (int)((w >> 29) & 1);
		if (get(u, rn, 1, wide, &x))
			return -1;
		y = (uint64_t)((w >> 10) & 0xfff) << ((w >> 22) & 1 ? 12 : 0);
		r = add_carry(x, sub ? ~y : y, sub, wide, &nzcv);
		rc = put(u, rd, !s, wide, r);
		if (!rc && s)
			rc = flags(u, nzcv);
	} else if ((w & 0x1f800000u) == 0x12800000u) {                    /* movn, movz, movk */
		int opc = (int)((w >> 29) & 3), hw = (int)((w >> 21) & 3);
		if (opc == 1 || (!wide && hw > 1))
			return 1;
		uint64_t imm = (uint64_t)((w >> 5) & 0xffff) << (16 * hw);
		if (opc == 3) {
			if (get(u, rd, 0, wide, &x))
				return -1;
			r = (x & ~(0xffffull << (16 * hw))) | imm;
		} else {
			r = opc == 0 ? ~imm : imm;
		}
		rc = put(u, rd, 0, wide, r);
	} else if ((w & 0x1f000000u) == 0x0a000000u) {                    /* logical shifted register */
		int opc = (int)((w >> 29) & 3), amount = (int)((w >> 10) & 63);
		if (!wide && amount >= 32)
			return 1;
		if (get(u, rn, 0, wide, &x) || get(u, rm, 0, wide, &y))
			return -1;
		y = shift(y, (int)((w >> 22) & 3), amount, wide);
		if ((w >> 21) & 1)
			y = wide ? ~y : (uint32_t)~y;
		r = opc == 1 ? x | y : opc == 2 ? x ^ y : x & y;
		rc = put(u, rd, 0, wide, r);
		if (!rc && opc == 3)
			rc = flags(u, nz(r, wide));
	} else if ((w & 0x1f200000u) == 0x0b000000u) {                    /* add/sub shifted register */
		int sub = (int)((w >> 30) & 1), s = (int)((w >> 29) & 1), type = (int)((w >> 22) & 3);
		int amount = (int)((w >> 10) & 63);
		if (type == 3 || (!wide && amount >= 32))
			return 1;
		if (get(u, rn, 0, wide, &x) || get(u, rm, 0, wide, &y))
			return -1;
		y = shift(y, type, amount, wide);
		r = add_carry(x, sub ? ~y : y, sub, wide, &nzcv);
		rc = put(u, rd, 0, wide, r);
		if (!rc && s)
			rc = flags(u, nzcv);
	} else if ((w & 0x1fe00000u) == 0x0b200000u) {                    /* add/sub extended register */
		int sub = (int)((w >> 30) & 1), s = (int)((w >> 29) & 1), option = (int)((w >> 13) & 7);
		int amount = (int)((w >> 10) & 7);
		if (amount > 4)
			return 1;
		if (get(u, rn, 1, wide, &x) || get(u, rm, 0, 1, &y))
			return -1;
		y = extend(y, option, amount);
		r = add_carry(x, sub ? ~y : y, sub, wide, &nzcv);
		rc = put(u, rd, !s, wide, r);
		if (!rc && s)
			rc = flags(u, nzcv);
	} else if ((w & 0x1f000000u) == 0x10000000u) {                    /* adr, adrp */
		int64_t imm = sext((uint64_t)((w >> 5) & 0x7ffff) << 2 | ((w >> 29) & 3), 21);
		r = w >> 31 ? (pc & ~0xfffull) + (uint64_t)(imm * 4096) : pc + (uint64_t)imm;
		rc = put(u, rd, 0, 1, r);
	} else if ((w & 0x7c000000u) == 0x14000000u) {                    /* b, bl */
		if (w >> 31)
			rc = put(u, 30, 0, 1, next);
		next = pc + (uint64_t)(sext(w & 0x3ffffff, 26) * 4);
	} else if ((w & 0xff9ffc1fu) == 0xd61f0000u) {                    /* br, blr, ret */
		if (get(u, rn, 0, 1, &x))
			return -1;
		if ((w >> 21) & 1)
			rc = put(u, 30, 0, 1, next);
		next = x;
	} else if ((w & 0xff000010u) == 0x54000000u || (w & 0x7c000000u) == 0x34000000u) {
		/* b.cond, cbz/cbnz, tbz/tbnz: the branch probes' decoder and condition */
		struct rbranch b;
		if (rarch_aarch64.decode(code, n, pc, big_endian, &b))
			return 1;
		int t = b.kind == RB_END ? 1 : rarch_aarch64.taken(&b, u->reg, u->ctx);
		if (t < 0)
			return -1;
		if (t)
			next = b.target;
	} else if ((w & 0x3b000000u) == 0x39000000u) {                    /* ldr/str unsigned offset */
		int size = (int)(w >> 30), opc = (int)((w >> 22) & 3);
		if ((size == 3 && opc == 3) || (opc == 3 && size == 2))
			return 1;
		if (size == 3 && opc == 2) {
			/* prfm: a hint, nothing to do */
		} else if (get(u, rn, 1, 1, &x)) {
			return -1;
		} else {
			rc = load_store(u, big_endian, opc, 1 << size, rd, x + (((w >> 10) & 0xfff) << size));
		}
	} else if ((w & 0x3b200000u) == 0x38000000u) {                    /* unscaled, pre-, post-index */
		int size = (int)(w >> 30), opc = (int)((w >> 22) & 3), idx = (int)((w >> 10) & 3);
		int64_t imm = sext((w >> 12) & 0x1ff, 9);
		if ((size == 3 && opc >= 2) || (opc == 3 && size == 2) || ((idx & 1) && rn == rd && rn != 31))
			return 1;
		if (get(u, rn, 1, 1, &x))
			return -1;
		rc = load_store(u, big_endian, opc, 1 << size, rd, idx == 1 ? x : x + (uint64_t)imm);
		if (!rc && (idx & 1))
			rc = put(u, rn, 1, 1, x + (uint64_t)imm);
	} else if ((w & 0x3b200c00u) == 0x38200800u) {                    /* register offset */
		int size = (int)(w >> 30), opc = (int)((w >> 22) & 3), option = (int)((w >> 13) & 7);
		if ((size == 3 && opc >= 2) || (opc == 3 && size == 2) || !(option & 2))
			return 1;
		if (get(u, rn, 1, 1, &x) || get(u, rm, 0, 1, &y))
			return -1;
		y = extend(y, option, (w >> 12) & 1 ? size : 0);
		rc = load_store(u, big_endian, opc, 1 << size, rd, x + y);
	} else if ((w & 0x3e000000u) == 0x28000000u) {                    /* ldp/stp/ldpsw, general registers */
		int opc = (int)(w >> 30), type = (int)((w >> 23) & 7), load = (int)((w >> 22) & 1);
		int rt2 = (int)((w >> 10) & 31);
		if (opc == 3 || (opc == 1 && !load) || type > 3 || (load && rd == rt2) ||
		    ((type & 1) && rn != 31 && (rn == rd || rn == rt2)))
			return 1;
		int size = opc == 2 ? 8 : 4;
		int64_t imm = sext((w >> 15) & 0x7f, 7) * size;
		if (get(u, rn, 1, 1, &x))
			return -1;
		uint64_t a = type == 1 ? x : x + (uint64_t)imm;
		if (load) {
			uint8_t b[16];
			if (u->read(u->ctx, a, b, (size_t)(2 * size)))
				return -1;
			uint64_t v1 = load_le_be(b, size, big_endian), v2 = load_le_be(b + size, size, big_endian);
			if (opc == 1) {
				v1 = (uint64_t)sext(v1, 32);
				v2 = (uint64_t)sext(v2, 32);
			}
			rc = put(u, rd, 0, opc != 0, v1);
			if (!rc)
				rc = put(u, rt2, 0, opc != 0, v2);
		} else {
			uint64_t v1, v2;
			if (get(u, rd, 0, 1, &v1) || get(u, rt2, 0, 1, &v2))
				return -1;
			u->store_addr = a;
			u->store_len = 2 * size;
			store_le_be(u->store, size, v1, big_endian);
			store_le_be(u->store + size, size, v2, big_endian);
		}
		if (!rc && (type & 1))
			rc = put(u, rn, 1, 1, x + (uint64_t)imm);
	} else {
		return 1;
	}
	if (rc)
		return rc;
	u->set[u->nset].regno = R_PC;
	u->set[u->nset].val = next;
	u->nset++;
	return 0;
}

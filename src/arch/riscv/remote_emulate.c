/* remote_emulate.c — the RV32 instructions that sonde executes itself at a
 * remote breakpoint (rarch.emulate, arch/remote_arch.h), so that a hit
 * resumes without the stub's single step (a second stop).
 *
 * Emulated: the integer register-immediate and register-register operations
 * (addi, slti, sltiu, xori, ori, andi, slli, srli, srai, lui, auipc, add,
 * sub, sll, slt, sltu, xor, srl, sra, or, and), aligned loads and stores
 * (lb, lh, lw, lbu, lhu, sb, sh, sw) and their compressed forms (c.addi,
 * c.addi16sp, c.addi4spn, c.li, c.lui, c.mv, c.add, c.sub, c.xor, c.or,
 * c.and, c.andi, c.slli, c.srli, c.srai, c.lw, c.sw, c.lwsp, c.swsp, c.nop):
 * a function's entry (`addi sp, sp, -16`, `sw ra, 12(sp)`) among them.
 * Everything else is stepped: jumps, branches, the M and A extensions,
 * CSRs, fences, ecall/ebreak, floating point, a misaligned access.  Stub
 * numbering: x0..x31 = 0..31 (x0 reads 0, writes are dropped), pc = 32. */
#include "arch/remote_arch.h"

enum { R_PC = 32 };

static int get(struct remu *u, int r, uint32_t *v)
{
	uint64_t x = 0;
	if (r && u->reg(u->ctx, r, &x))
		return -1;
	*v = (uint32_t)x;
	return 0;
}

static void put(struct remu *u, int r, uint32_t v)
{
	if (!r)
		return;
	u->set[u->nset].regno = r;
	u->set[u->nset].val = v;
	u->nset++;
}

static int32_t sext(uint32_t v, int bits)
{
	return (int32_t)(v << (32 - bits)) >> (32 - bits);
}

/* Load (size 1, 2, 4; sign-extended when sx) into rd, or store rs2. */
static int mem(struct remu *u, uint32_t addr, int size, int sx, int store, int r)
{
	if (addr % (uint32_t)size)
		return 1;
	uint8_t b[4];
	if (store) {
		uint32_t v;
		if (get(u, r, &v))
			return -1;
		u->store_addr = addr;
		u->store_len = size;
		for (int i = 0; i < size; i++)
			u->store[i] = (uint8_t)(v >> (8 * i));
		return 0;
	}
	if (u->read(u->ctx, addr, b, (size_t)size))
		return -1;
	uint32_t v = 0;
	for (int i = 0; i < size; i++)
		v |= (uint32_t)b[i] << (8 * i);
	if (sx && size < 4)
		v = (uint32_t)sext(v, 8 * size);
	put(u, r, v);
	return 0;
}

/* The ALU: op 0 add, 1 sll, 2 slt, 3 sltu, 4 xor, 5 srl, 6 or, 7 and; alt:
 * sub (for add), sra (for srl). */
static uint32_t alu(int op, int alt, uint32_t a, uint32_t b)
{
	switch (op) {
	case 0: return alt ? a - b : a + b;
	case 1: return a << (b & 31);
	case 2: return (int32_t)a < (int32_t)b;
	case 3: return a < b;
	case 4: return a ^ b;
	case 5: return alt ? (uint32_t)((int32_t)a >> (b & 31)) : a >> (b & 31);
	case 6: return a | b;
	default: return a & b;
	}
}

static int emulate16(unsigned h, uint32_t pc, struct remu *u)
{
	unsigned q = h & 3, f3 = h >> 13;
	int rd = (int)((h >> 7) & 31), rs2 = (int)((h >> 2) & 31);
	int rdp = 8 + (int)((h >> 7) & 7), rs2p = 8 + (int)((h >> 2) & 7);
	uint32_t a, b, imm6 = ((h >> 12) & 1) << 5 | ((h >> 2) & 31);
	(void)pc;
	if (q == 0) {
		uint32_t off = ((h >> 10) & 7) << 3 | ((h >> 6) & 1) << 2 | ((h >> 5) & 1) << 6;
		switch (f3) {
		case 0: {                                       /* c.addi4spn */
			uint32_t nz = ((h >> 11) & 3) << 4 | ((h >> 7) & 15) << 6 | ((h >> 6) & 1) << 2 | ((h >> 5) & 1) << 3;
			if (!nz || get(u, 2, &a))
				return nz ? -1 : 1;
			put(u, rs2p, a + nz);
			return 0;
		}
		case 2:                                         /* c.lw */
			if (get(u, rdp, &a))
				return -1;
			return mem(u, a + off, 4, 1, 0, rs2p);
		case 6:                                         /* c.sw */
			if (get(u, rdp, &a))
				return -1;
			return mem(u, a + off, 4, 0, 1, rs2p);
		}
		return 1;
	}
	if (q == 1) {
		switch (f3) {
		case 0:                                         /* c.addi, c.nop */
			if (get(u, rd, &a))
				return -1;
			put(u, rd, a + (uint32_t)sext(imm6, 6));
			return 0;
		case 2:                                         /* c.li */
			put(u, rd, (uint32_t)sext(imm6, 6));
			return 0;
		case 3:
			if (rd == 2) {                              /* c.addi16sp */
				uint32_t nz = ((h >> 12) & 1) << 9 | ((h >> 6) & 1) << 4 | ((h >> 5) & 1) << 6 |
				              ((h >> 3) & 3) << 7 | ((h >> 2) & 1) << 5;
				if (!nz || get(u, 2, &a))
					return nz ? -1 : 1;
				put(u, 2, a + (uint32_t)sext(nz, 10));
				return 0;
			}
			if (!imm6)
				return 1;
			put(u, rd, (uint32_t)sext(imm6, 6) << 12);  /* c.lui */
			return 0;
		case 4: {
			unsigned k = (h >> 10) & 3;
			if (get(u, rdp, &a))
				return -1;
			if (k < 2) {                                /* c.srli, c.srai */
				if (h & 0x1000)
					return 1;
				put(u, rdp, alu(5, (int)k, a, imm6));
			} else if (k == 2) {                        /* c.andi */
				put(u, rdp, a & (uint32_t)sext(imm6, 6));
			} else {
				static const int ops[4] = { 0, 4, 6, 7 };   /* c.sub, c.xor, c.or, c.and */
				unsigned k2 = (h >> 5) & 3;
				if ((h & 0x1000) || get(u, rs2p, &b))
					return (h & 0x1000) ? 1 : -1;
				put(u, rdp, alu(ops[k2], k2 == 0, a, b));
			}
			return 0;
		}
		}
		return 1;
	}
	if (q == 2) {
		switch (f3) {
		case 0:                                         /* c.slli */
			if ((h & 0x1000) || get(u, rd, &a))
				return (h & 0x1000) ? 1 : -1;
			put(u, rd, a << imm6);
			return 0;
		case 2: {                                       /* c.lwsp */
			uint32_t off = ((h >> 12) & 1) << 5 | ((h >> 4) & 7) << 2 | ((h >> 2) & 3) << 6;
			if (!rd || get(u, 2, &a))
				return rd ? -1 : 1;
			return mem(u, a + off, 4, 1, 0, rd);
		}
		case 4:
			if (!rs2)
				return 1;                               /* c.jr, c.jalr, c.ebreak */
			if (get(u, rs2, &b))
				return -1;
			if (!(h & 0x1000)) {
				put(u, rd, b);                          /* c.mv */
				return 0;
			}
			if (get(u, rd, &a))
				return -1;
			put(u, rd, a + b);                          /* c.add */
			return 0;
		case 6: {                                       /* c.swsp */
			uint32_t off = ((h >> 9) & 15) << 2 | ((h >> 7) & 3) << 6;
			if (get(u, 2, &a))
				return -1;
			return mem(u, a + off, 4, 0, 1, rs2);
		}
		}
	}
	return 1;
}

static int emulate32(uint32_t w, uint32_t pc, struct remu *u)
{
	unsigned op = w & 0x7f, f3 = (w >> 12) & 7, f7 = w >> 25;
	int rd = (int)((w >> 7) & 31), rs1 = (int)((w >> 15) & 31), rs2 = (int)((w >> 20) & 31);
	int32_t imm = (int32_t)w >> 20;
	uint32_t a, b;
	switch (op) {
	case 0x37: put(u, rd, w & 0xfffff000u); return 0;            /* lui */
	case 0x17: put(u, rd, pc + (w & 0xfffff000u)); return 0;     /* auipc */
	case 0x13:                                                  /* op-imm */
		if ((f3 == 1 && f7 != 0) || (f3 == 5 && f7 != 0 && f7 != 0x20))
			return 1;
		if (get(u, rs1, &a))
			return -1;
		put(u, rd, alu((int)f3, f3 == 5 && f7 == 0x20, a, (uint32_t)imm));
		return 0;
	case 0x33:                                                  /* op (not M: f7 1) */
		if (f7 != 0 && !(f7 == 0x20 && (f3 == 0 || f3 == 5)))
			return 1;
		if (get(u, rs1, &a) || get(u, rs2, &b))
			return -1;
		put(u, rd, alu((int)f3, f7 == 0x20, a, b));
		return 0;
	case 0x03:                                                  /* loads */
		if (f3 == 3 || f3 > 5 || !rd)
			return 1;
		if (get(u, rs1, &a))
			return -1;
		return mem(u, a + (uint32_t)imm, 1 << (f3 & 3), f3 < 4, 0, rd);
	case 0x23: {                                                /* stores */
		if (f3 > 2)
			return 1;
		int32_t off = (int32_t)(w & 0xfe000000u) >> 20 | (int32_t)((w >> 7) & 31);
		if (get(u, rs1, &a))
			return -1;
		return mem(u, a + (uint32_t)off, 1 << f3, 0, 1, rs2);
	}
	}
	return 1;
}

int rarch_riscv_emulate(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct remu *u)
{
	(void)big_endian;
	int len = rarch_riscv_insn_len(code, n);
	if (len < 0)
		return 1;
	u->nset = 0;
	u->store_len = 0;
	uint32_t pc = (uint32_t)addr;
	int rc = len == 2 ? emulate16((unsigned)code[0] | (unsigned)code[1] << 8, pc, u)
	                  : emulate32((uint32_t)code[0] | (uint32_t)code[1] << 8 | (uint32_t)code[2] << 16 |
	                              (uint32_t)code[3] << 24, pc, u);
	if (rc)
		return rc;
	u->set[u->nset].regno = R_PC;
	u->set[u->nset].val = pc + (uint32_t)len;
	u->nset++;
	return 0;
}

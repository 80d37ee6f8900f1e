/* remote_emulate.c — the 32-bit MIPS instructions that sonde executes itself
 * at a remote breakpoint (rarch.emulate, arch/remote_arch.h), so that a hit
 * resumes without a single step (on QEMU a step flushes the translation
 * cache: docs/REMOTE.md "Cost per hit").
 *
 * Emulated: the shifts (sll, srl, sra and their variable forms; nop is
 * sll $0), addu, subu, and, or, xor, nor, slt, sltu, movz, movn, mfhi,
 * mflo; addiu, slti, sltiu, andi, ori, xori, lui; lb, lbu, lh, lhu, lw, sb,
 * sh, sw (aligned; a misaligned one is stepped, to fault as it would).
 * Everything else is stepped: branches and jumps (their delay slot),
 * add/sub/addi (they trap on overflow), multiplications, lwl/lwr,
 * coprocessors.  Stub numbering (gdb's mips-cpu.xml): r0..r31 = 0..31,
 * lo = 33, hi = 34, pc = 37; registers are 32 bits. */
#include "arch/remote_arch.h"

enum { R_LO = 33, R_HI = 34, R_PC = 37 };

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
		return;  /* $zero */
	u->set[u->nset].regno = r;
	u->set[u->nset].val = v;
	u->nset++;
}

int rarch_mips_emulate(const uint8_t *code, size_t n, uint64_t pc, int big_endian, struct remu *u)
{
	if (n < 4)
		return 1;
	uint32_t w = big_endian ? (uint32_t)code[0] << 24 | (uint32_t)code[1] << 16 | (uint32_t)code[2] << 8 | code[3]
	                        : (uint32_t)code[3] << 24 | (uint32_t)code[2] << 16 | (uint32_t)code[1] << 8 | code[0];
	int op = (int)(w >> 26), rs = (int)((w >> 21) & 31), rt = (int)((w >> 16) & 31);
	int rd = (int)((w >> 11) & 31), sa = (int)((w >> 6) & 31), funct = (int)(w & 63);
	uint32_t imm = w & 0xffff, simm = (uint32_t)(int32_t)(int16_t)imm, a = 0, b = 0, r;
	u->nset = 0;
	u->store_len = 0;
	if (op == 0) {
		switch (funct) {
		case 0x00: case 0x02: case 0x03: case 0x04: case 0x06: case 0x07:
			if (get(u, rt, &b) || (funct & 4 && get(u, rs, &a)))
				return -1;
			if (funct & 4)
				sa = (int)(a & 31);
			r = (funct & 3) == 0 ? b << sa : (funct & 3) == 2 ? b >> sa : (uint32_t)((int32_t)b >> sa);
			put(u, rd, r);
			break;
		case 0x0a: case 0x0b:                       /* movz, movn */
			if (get(u, rs, &a) || get(u, rt, &b))
				return -1;
			if ((b == 0) == (funct == 0x0a))
				put(u, rd, a);
			break;
		case 0x10: case 0x12:                       /* mfhi, mflo */
			if (!rd)
				break;
			{
				uint64_t x;
				if (u->reg(u->ctx, funct == 0x10 ? R_HI : R_LO, &x))
					return -1;
				put(u, rd, (uint32_t)x);
			}
			break;
		case 0x21: case 0x23: case 0x24: case 0x25: case 0x26: case 0x27: case 0x2a: case 0x2b:
			if (get(u, rs, &a) || get(u, rt, &b))
				return -1;
			switch (funct) {
			case 0x21: r = a + b; break;
			case 0x23: r = a - b; break;
			case 0x24: r = a & b; break;
			case 0x25: r = a | b; break;
			case 0x26: r = a ^ b; break;
			case 0x27: r = ~(a | b); break;
			case 0x2a: r = (int32_t)a < (int32_t)b; break;
			default: r = a < b; break;
			}
			put(u, rd, r);
			break;
		default:
			return 1;
		}
	} else if (op >= 0x09 && op <= 0x0f) {              /* addiu .. lui */
		if (op != 0x0f && get(u, rs, &a))
			return -1;
		switch (op) {
		case 0x09: r = a + simm; break;
		case 0x0a: r = (int32_t)a < (int32_t)simm; break;
		case 0x0b: r = a < simm; break;
		case 0x0c: r = a & imm; break;
		case 0x0d: r = a | imm; break;
		case 0x0e: r = a ^ imm; break;
		default: r = imm << 16; break;
		}
		put(u, rt, r);
	} else if (op == 0x20 || op == 0x21 || op == 0x23 || op == 0x24 || op == 0x25 ||
	           op == 0x28 || op == 0x29 || op == 0x2b) {  /* loads and stores */
		int size = (op & 3) == 0 ? 1 : (op & 3) == 1 ? 2 : 4;
		if (get(u, rs, &a))
			return -1;
		uint32_t addr = a + simm;
		if (addr % (uint32_t)size)
			return 1;
		uint8_t m[4];
		if (op >= 0x28) {
			if (get(u, rt, &b))
				return -1;
			for (int i = 0; i < size; i++)
				m[big_endian ? size - 1 - i : i] = (uint8_t)(b >> (8 * i));
			u->store_addr = addr;
			u->store_len = size;
			for (int i = 0; i < size; i++)
				u->store[i] = m[i];
		} else {
			if (u->read(u->ctx, addr, m, (size_t)size))
				return -1;
			r = 0;
			for (int i = 0; i < size; i++)
				r |= (uint32_t)m[big_endian ? size - 1 - i : i] << (8 * i);
			if (op < 0x24 && size < 4)             /* lb, lh: sign-extended */
				r = (uint32_t)((int32_t)(r << (32 - 8 * size)) >> (32 - 8 * size));
			put(u, rt, r);
		}
	} else {
		return 1;
	}
	u->set[u->nset].regno = R_PC;
	u->set[u->nset].val = (uint32_t)(pc + 4);
	u->nset++;
	return 0;
}

/* remote.c (mcs51) — the 8051 behind remote_arch.h, for the ucsim engine
 * (src/probe/ucsim/): the length of every opcode, the conditional jumps
 * of branch probes (jc, jnc, jz, jnz, jb, jnb, jbc, cjne, djnz) decoded and
 * decided on the state before they run, the ends of straight-line code
 * (sjmp, ajmp, ljmp, jmp @a+dptr, ret, reti), LCALL/LJMP encoding.  The
 * 8051 has no breakpoint instruction (bp_len 0): the simulator's own
 * breakpoints are used.  Registers and memory that `taken` reads are named
 * by the MCS51_* numbers of remote_arch.h (registers of the current bank,
 * A, PSW, direct addresses, bits, indirect internal RAM). */
#include "arch/remote_arch.h"

#include <stdio.h>

/* Bytes of each opcode (Intel's MCS-51 instruction set; 0xa5 is reserved: 1). */
static const uint8_t len_of[256] = {
	/* 0x00 */ 1, 2, 3, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 0x10 */ 3, 2, 3, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 0x20 */ 3, 2, 1, 1, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 0x30 */ 3, 2, 1, 1, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 0x40 */ 2, 2, 2, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 0x50 */ 2, 2, 2, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 0x60 */ 2, 2, 2, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 0x70 */ 2, 2, 2, 1, 2, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	/* 0x80 */ 2, 2, 2, 1, 1, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	/* 0x90 */ 3, 2, 2, 1, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 0xa0 */ 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	/* 0xb0 */ 2, 2, 2, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	/* 0xc0 */ 2, 2, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 0xd0 */ 2, 2, 2, 1, 1, 3, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
	/* 0xe0 */ 1, 2, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 0xf0 */ 1, 2, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

int rarch_mcs51_insn_len(const uint8_t *code, size_t n)
{
	if (!n)
		return -1;
	int l = len_of[code[0]];
	return (size_t)l <= n ? l : -1;
}

int rarch_mcs51_lcall(uint16_t target, uint8_t out[3])
{
	out[0] = 0x12;
	out[1] = (uint8_t)(target >> 8);
	out[2] = (uint8_t)target;
	return 3;
}

int rarch_mcs51_ljmp(uint16_t target, uint8_t out[3])
{
	out[0] = 0x02;
	out[1] = (uint8_t)(target >> 8);
	out[2] = (uint8_t)target;
	return 3;
}

/* The condition codes of struct rbranch.cond. */
enum { C_JC, C_JNC, C_JZ, C_JNZ, C_JB, C_JNB, C_JBC, C_CJNE_A_IMM, C_CJNE_A_DIR, C_CJNE_IND_IMM, C_CJNE_R_IMM,
       C_DJNZ_R, C_DJNZ_DIR };

static int decode(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct rbranch *out)
{
	(void)big_endian;
	int len = rarch_mcs51_insn_len(code, n);
	if (len < 0)
		return -1;
	uint8_t op = code[0];
	*out = (struct rbranch){ .kind = RB_OTHER, .len = len, .addr = addr, .next = addr + (uint64_t)len,
	                         .ra = -1, .rb = -1, .bit = -1 };
	uint16_t next = (uint16_t)(addr + (uint64_t)len);
	int8_t rel = (int8_t)code[len - 1];
	const char *m = NULL;
	switch (op) {
	case 0x40: m = "jc"; out->cond = C_JC; break;
	case 0x50: m = "jnc"; out->cond = C_JNC; break;
	case 0x60: m = "jz"; out->cond = C_JZ; break;
	case 0x70: m = "jnz"; out->cond = C_JNZ; break;
	case 0x20: m = "jb"; out->cond = C_JB; out->bit = code[1]; break;
	case 0x30: m = "jnb"; out->cond = C_JNB; out->bit = code[1]; break;
	case 0x10: m = "jbc"; out->cond = C_JBC; out->bit = code[1]; break;
	case 0xb4: m = "cjne"; out->cond = C_CJNE_A_IMM; out->rb = code[1]; break;
	case 0xb5: m = "cjne"; out->cond = C_CJNE_A_DIR; out->rb = code[1]; break;
	case 0xb6: case 0xb7: m = "cjne"; out->cond = C_CJNE_IND_IMM; out->ra = op & 1; out->rb = code[1]; break;
	case 0xd5: m = "djnz"; out->cond = C_DJNZ_DIR; out->ra = code[1]; break;
	default:
		if (op >= 0xb8 && op <= 0xbf) {
			m = "cjne";
			out->cond = C_CJNE_R_IMM;
			out->ra = op & 7;
			out->rb = code[1];
		} else if (op >= 0xd8 && op <= 0xdf) {
			m = "djnz";
			out->cond = C_DJNZ_R;
			out->ra = op & 7;
		}
		break;
	}
	if (m) {
		out->kind = RB_COND;
		out->target = (uint16_t)(next + rel);
		snprintf(out->text, sizeof out->text, "%s 0x%04x", m, (unsigned)out->target);
		return 0;
	}
	if (op == 0x80) {                                   /* sjmp */
		out->kind = RB_END;
		out->target = (uint16_t)(next + rel);
	} else if (op == 0x02) {                            /* ljmp */
		out->kind = RB_END;
		out->target = (uint16_t)(code[1] << 8 | code[2]);
	} else if ((op & 0x1f) == 0x01) {                   /* ajmp: the 2 KiB page of the next instruction */
		out->kind = RB_END;
		out->target = (uint16_t)((next & 0xf800) | (op >> 5) << 8 | code[1]);
	} else if (op == 0x73 || op == 0x22 || op == 0x32) { /* jmp @a+dptr, ret, reti */
		out->kind = RB_END;
	} else if (op == 0x12 || (op & 0x1f) == 0x11) {      /* lcall, acall: flow on */
		out->links = 1;
	}
	snprintf(out->text, sizeof out->text, "op 0x%02x", op);
	return 0;
}

static int rd(rarch_reg_fn reg, void *ctx, int regno, uint64_t *v)
{
	return reg(ctx, regno, v);
}

static int taken(const struct rbranch *b, rarch_reg_fn reg, void *ctx)
{
	uint64_t x, y;
	switch (b->cond) {
	case C_JC: case C_JNC:
		if (rd(reg, ctx, MCS51_PSW, &x))
			return -1;
		return b->cond == C_JC ? (int)(x >> 7 & 1) : !(x >> 7 & 1);
	case C_JZ: case C_JNZ:
		if (rd(reg, ctx, MCS51_A, &x))
			return -1;
		return b->cond == C_JZ ? (x & 0xff) == 0 : (x & 0xff) != 0;
	case C_JB: case C_JNB: case C_JBC:
		if (rd(reg, ctx, MCS51_BIT(b->bit), &x))
			return -1;
		return b->cond == C_JNB ? !(x & 1) : (int)(x & 1);
	case C_CJNE_A_IMM:
		if (rd(reg, ctx, MCS51_A, &x))
			return -1;
		return (x & 0xff) != (uint64_t)b->rb;
	case C_CJNE_A_DIR:
		if (rd(reg, ctx, MCS51_A, &x) || rd(reg, ctx, MCS51_DIRECT(b->rb), &y))
			return -1;
		return (x & 0xff) != (y & 0xff);
	case C_CJNE_IND_IMM:
		if (rd(reg, ctx, MCS51_R0 + b->ra, &x) || rd(reg, ctx, MCS51_IND(x & 0xff), &y))
			return -1;
		return (y & 0xff) != (uint64_t)b->rb;
	case C_CJNE_R_IMM:
		if (rd(reg, ctx, MCS51_R0 + b->ra, &x))
			return -1;
		return (x & 0xff) != (uint64_t)b->rb;
	case C_DJNZ_R:
		if (rd(reg, ctx, MCS51_R0 + b->ra, &x))
			return -1;
		return (x & 0xff) != 1;     /* decremented first: taken unless it becomes 0 */
	case C_DJNZ_DIR:
		if (rd(reg, ctx, MCS51_DIRECT(b->ra), &x))
			return -1;
		return (x & 0xff) != 1;
	default:
		return -1;
	}
}

const struct rarch rarch_mcs51 = {
	.name = "mcs51",
	.elf_machine = 165,     /* EM_8051 */
	.ptr_size = 2,
	.bp_len = 0,            /* no breakpoint instruction: the simulator's (or the debug interface's) own */
	.insn_align = 1,
	.ncore = 0,
	.pc = MCS51_PC,
	.sp = MCS51_SP,
	.ra = -1,               /* the return address is on the stack (low byte first) */
	.ret_sp_adj = -2,
	.flags = MCS51_PSW,
	.decode = decode,
	.taken = taken,
};

/* remote.c — 32-bit MIPS (o32) for the remote protocol client
 * (arch/remote_arch.h): the `break` instruction (0x0000000d, in the target's
 * byte order: big-endian for gcc-mips-linux-gnu, little for mipsel), r0..r31
 * then sr, lo, hi, bad, cause, pc in gdb's mips-cpu.xml / mips-cp0.xml
 * numbering, the return address in $ra (r31), DWARF registers 0..31 = r0..r31.
 * The pc is reported on the break itself.  Branches (beq, bne, blez, bgtz,
 * bltz, bgez and their "likely" forms) have a delay slot: the instruction
 * after the branch runs before the branch lands, so a branch not taken goes
 * on at the branch + 8, and whether it is taken is decided on the registers
 * at the branch itself (the delay slot may change them). */
#include "arch/remote_arch.h"

#include <elf.h>
#include <stdio.h>
#include <string.h>

static int dwarf_to_stub(int dw)
{
	return dw >= 0 && dw <= 31 ? dw : -1;
}

static const char *dwarf_name(int dw)
{
	static const char *const n[32] = {
		"zero", "at", "v0", "v1", "a0", "a1", "a2", "a3", "t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7",
		"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "t8", "t9", "k0", "k1", "gp", "sp", "fp", "ra",
	};
	return dw >= 0 && dw < 32 ? n[dw] : "?";
}

enum { MB_EQ, MB_NE, MB_LEZ, MB_GTZ, MB_LTZ, MB_GEZ };

static int decode(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct rbranch *o)
{
	static const char *const cname[] = { "beq", "bne", "blez", "bgtz", "bltz", "bgez" };
	if (n < 4)
		return -1;
	uint32_t w = big_endian ? (uint32_t)code[0] << 24 | (uint32_t)code[1] << 16 | (uint32_t)code[2] << 8 | code[3]
	                        : (uint32_t)code[3] << 24 | (uint32_t)code[2] << 16 | (uint32_t)code[1] << 8 | code[0];
	int op = (int)(w >> 26), rs = (int)(w >> 21) & 31, rt = (int)(w >> 16) & 31, funct = (int)(w & 63);
	memset(o, 0, sizeof *o);
	o->addr = addr;
	o->len = 4;
	o->ra = o->rb = -1;
	o->kind = RB_OTHER;
	uint32_t target = (uint32_t)addr + 4 + (uint32_t)((int32_t)(int16_t)(w & 0xffff) * 4);
	int cond = -1, likely = 0;
	switch (op) {
	case 0x00:                      /* SPECIAL: jr is a jump (and the return), jalr a call */
		if (funct == 0x08)
			o->kind = RB_END;
		if (funct == 0x08 || funct == 0x09)
			o->delay = 4;
		o->links = funct == 0x09;
		break;
	case 0x01:                      /* REGIMM: bltz, bgez, bltzl, bgezl (bltzal, bgezal: calls) */
		if (rt <= 3) {
			cond = rt & 1 ? MB_GEZ : MB_LTZ;
			likely = rt >= 2;
		} else if (rt == 0x10 || rt == 0x11 || rt == 0x12 || rt == 0x13) {
			o->delay = 4;
			o->links = 1;
			o->likely = rt >= 0x12;
		}
		break;
	case 0x02: o->kind = RB_END; o->delay = 4; break;       /* j */
	case 0x03: o->delay = 4; o->links = 1; break;           /* jal */
	case 0x04: case 0x14:           /* beq, beql; beq $0,$0 is the unconditional b */
		if (rs == 0 && rt == 0) {
			o->kind = RB_END;
			o->delay = 4;
		} else {
			cond = MB_EQ;
		}
		likely = op == 0x14;
		break;
	case 0x05: case 0x15: cond = MB_NE; likely = op == 0x15; break;
	case 0x06: case 0x16: cond = MB_LEZ; likely = op == 0x16; break;
	case 0x07: case 0x17: cond = MB_GTZ; likely = op == 0x17; break;
	}
	if (likely)
		o->likely = 1;
	if (cond >= 0) {
		o->kind = RB_COND;
		o->delay = 4;
		o->cond = cond;
		o->ra = rs;
		o->rb = cond <= MB_NE ? rt : -1;
		o->target = target;
		if (o->rb >= 0)
			snprintf(o->text, sizeof o->text, "%s%s $%s,$%s,0x%x", cname[cond], likely ? "l" : "", dwarf_name(rs),
			         dwarf_name(rt), target);
		else
			snprintf(o->text, sizeof o->text, "%s%s $%s,0x%x", cname[cond], likely ? "l" : "", dwarf_name(rs), target);
	}
	o->next = addr + 4 + (uint64_t)o->delay;
	return 0;
}

/* Registers are 32 bits wide: the comparisons are on int32_t. */
static int taken(const struct rbranch *b, rarch_reg_fn reg, void *ctx)
{
	uint64_t x = 0, y = 0;
	if ((b->ra > 0 && reg(ctx, b->ra, &x)) || (b->rb > 0 && reg(ctx, b->rb, &y)))
		return -1;      /* register 0 ($zero) reads as 0 without asking */
	int32_t a = (int32_t)(uint32_t)x, c = (int32_t)(uint32_t)y;
	switch (b->cond) {
	case MB_EQ: return a == c;
	case MB_NE: return a != c;
	case MB_LEZ: return a <= 0;
	case MB_GTZ: return a > 0;
	case MB_LTZ: return a < 0;
	case MB_GEZ: return a >= 0;
	}
	return -1;
}

const struct rarch rarch_mips = {
	.name = "mips",
	.elf_machine = EM_MIPS,
	.ptr_size = 4,
	.bp_le = { 0x0d, 0, 0, 0 },
	.bp_be = { 0, 0, 0, 0x0d },
	.bp_len = 4,
	.trap_pc_adj = 0,
	.insn_align = 4,
	.ncore = 38,
	.pc = 37,
	.sp = 29,
	.ra = 31,
	.ret_sp_adj = 0,
	.dwarf_to_stub = dwarf_to_stub,
	.dwarf_name = dwarf_name,
	.has_delay_slots = 1,
	.flags = -1,
	.decode = decode,
	.taken = taken,
	.emulate = rarch_mips_emulate,
};

/* remote.c — RV32 (RV32IMAC microcontrollers; RV32GC too) for the remote
 * protocol client (arch/remote_arch.h).  Instructions are 16-bit (the C
 * extension: low two bits not 11) or 32-bit, little-endian.  The
 * breakpoint is c.ebreak (0x9002), one halfword, valid before either
 * length when the core has the C extension (every RV32IMAC/GC); gdb's Z0
 * "kind" is 2 before a compressed instruction, 4 before a 32-bit one.  The
 * pc is reported on the ebreak itself.  Registers in the numbering of gdb's
 * riscv-32bit-cpu.xml: x0..x31 = 0..31, pc = 32; the return address in ra
 * (x1), the stack pointer x2; DWARF registers 0..31 = x0..x31.
 *
 * Branch probes: beq, bne, blt, bge, bltu, bgeu, c.beqz, c.bnez, compared
 * on the registers (x0 reads 0).  Straight-line code ends at jal/c.j with
 * rd = x0 and jalr/c.jr with rd = x0 (ret). */
#include "arch/remote_arch.h"
#include "arch/bits.h"

#include <elf.h>
#include <stdio.h>
#include <string.h>

static int dwarf_to_stub(int dw)
{
	return dw >= 0 && dw <= 31 ? dw : -1;
}

static const char *const abi[32] = {
	"zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4", "a5",
	"a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6",
};

static const char *dwarf_name(int dw)
{
	return dw >= 0 && dw < 32 ? abi[dw] : "?";
}

int rarch_riscv_insn_len(const uint8_t *code, size_t n)
{
	if (n < 2)
		return -1;
	if ((code[0] & 3) != 3)
		return 2;
	if ((code[0] & 0x1c) == 0x1c)
		return -1;              /* 48-bit and longer: not used by RV32IMAC */
	return n < 4 ? -1 : 4;
}

static int bp_kind(const uint8_t *code, size_t n, int big_endian)
{
	(void)big_endian;
	return rarch_riscv_insn_len(code, n) == 4 ? 4 : 2;
}

enum { RC_EQ, RC_NE, RC_LT = 4, RC_GE, RC_LTU, RC_GEU };

static int decode(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct rbranch *o)
{
	static const char *const cname[8] = { "beq", "bne", "", "", "blt", "bge", "bltu", "bgeu" };
	(void)big_endian;
	int len = rarch_riscv_insn_len(code, n);
	if (len < 0)
		return -1;
	memset(o, 0, sizeof *o);
	o->addr = addr;
	o->len = len;
	o->next = addr + (uint64_t)len;
	o->ra = o->rb = -1;
	o->kind = RB_OTHER;
	if (len == 2) {
		unsigned h = (unsigned)code[0] | (unsigned)code[1] << 8, f3 = h >> 13, q = h & 3;
		if (q == 1 && (f3 == 6 || f3 == 7)) {                    /* c.beqz, c.bnez */
			uint32_t imm = ((h >> 12) & 1) << 8 | ((h >> 5) & 3) << 6 | ((h >> 2) & 1) << 5 |
			               ((h >> 10) & 3) << 3 | ((h >> 3) & 3) << 1;
			o->kind = RB_COND;
			o->cond = f3 == 6 ? RC_EQ : RC_NE;
			o->ra = 8 + (int)((h >> 7) & 7);
			o->rb = 0;
			o->target = addr + (uint64_t)sext(imm, 9);
			snprintf(o->text, sizeof o->text, "%s %s,0x%llx", f3 == 6 ? "beqz" : "bnez", abi[o->ra],
			         (unsigned long long)o->target);
		} else if (q == 1 && f3 == 5) {                          /* c.j */
			o->kind = RB_END;
		} else if (q == 1 && f3 == 1) {                          /* c.jal (RV32) */
			o->links = 1;
		} else if (q == 2 && f3 == 4 && ((h >> 2) & 31) == 0 && ((h >> 7) & 31)) {
			if ((h >> 12) & 1)
				o->links = 1;                            /* c.jalr */
			else
				o->kind = RB_END;                        /* c.jr (ret) */
		}
		return 0;
	}
	uint32_t w = (uint32_t)code[0] | (uint32_t)code[1] << 8 | (uint32_t)code[2] << 16 | (uint32_t)code[3] << 24;
	unsigned op = w & 0x7f, rd = (w >> 7) & 31, f3 = (w >> 12) & 7;
	if (op == 0x63 && f3 != 2 && f3 != 3) {
		uint32_t imm = ((w >> 31) & 1) << 12 | ((w >> 7) & 1) << 11 | ((w >> 25) & 0x3f) << 5 | ((w >> 8) & 15) << 1;
		o->kind = RB_COND;
		o->cond = (int)f3;
		o->ra = (int)((w >> 15) & 31);
		o->rb = (int)((w >> 20) & 31);
		o->target = addr + (uint64_t)sext(imm, 13);
		snprintf(o->text, sizeof o->text, "%s %s,%s,0x%llx", cname[f3], abi[o->ra], abi[o->rb],
		         (unsigned long long)o->target);
	} else if (op == 0x6f || op == 0x67) {                           /* jal, jalr */
		if (rd == 0)
			o->kind = RB_END;
		else
			o->links = 1;
	}
	return 0;
}

static int taken(const struct rbranch *b, rarch_reg_fn reg, void *ctx)
{
	uint64_t x = 0, y = 0;
	if ((b->ra > 0 && reg(ctx, b->ra, &x)) || (b->rb > 0 && reg(ctx, b->rb, &y)))
		return -1;      /* x0 reads as 0 without asking */
	uint32_t a = (uint32_t)x, c = (uint32_t)y;
	switch (b->cond) {
	case RC_EQ: return a == c;
	case RC_NE: return a != c;
	case RC_LT: return (int32_t)a < (int32_t)c;
	case RC_GE: return (int32_t)a >= (int32_t)c;
	case RC_LTU: return a < c;
	case RC_GEU: return a >= c;
	}
	return -1;
}

const struct rarch rarch_riscv32 = {
	.name = "riscv:rv32",
	.elf_machine = EM_RISCV,
	.ptr_size = 4,
	.bp_le = { 0x02, 0x90 },
	.bp_be = { 0x90, 0x02 },
	.bp_len = 2,
	.bp_kind = bp_kind,
	.trap_pc_adj = 0,
	.insn_align = 2,
	.ncore = 33,
	.pc = 32,
	.sp = 2,
	.ra = 1,
	.ret_sp_adj = 0,
	.dwarf_to_stub = dwarf_to_stub,
	.dwarf_name = dwarf_name,
	.flags = -1,
	.decode = decode,
	.taken = taken,
	.emulate = rarch_riscv_emulate,
};

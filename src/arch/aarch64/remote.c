/* remote.c — AArch64 for the remote protocol client (arch/remote_arch.h):
 * BRK #0 (the pc is reported on the BRK itself), x0..x30, sp, pc in the
 * numbering of gdb's aarch64-core.xml, the return address in x30 (the link
 * register), DWARF registers 0..31 = x0..x30, sp.  Branch probes: b.cond
 * (on the NZCV flags of cpsr, register 33), cbz/cbnz and tbz/tbnz (on a
 * register); register 31 in those is the zero register, not sp.
 * Instructions are little-endian in memory on every AArch64. */
#include "arch/remote_arch.h"
#include "arch/bits.h"
#include "arch/aarch64/brk.h"

#include <elf.h>
#include <stdio.h>
#include <string.h>

static int dwarf_to_stub(int dw)
{
	return dw >= 0 && dw <= 31 ? dw : -1;
}

static const char *dwarf_name(int dw)
{
	static char buf[8];
	if (dw == 31)
		return "sp";
	if (dw == 29)
		return "x29 (fp)";
	snprintf(buf, sizeof buf, "x%d", dw);
	return buf;
}

enum { AC_CBZ = 16, AC_CBNZ, AC_TBZ, AC_TBNZ };

static void reg_text(char *buf, size_t n, int r, int wide)
{
	if (r == 31)
		snprintf(buf, n, wide ? "xzr" : "wzr");
	else
		snprintf(buf, n, "%c%d", wide ? 'x' : 'w', r);
}

static int decode(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct rbranch *o)
{
	static const char *const cname[16] = { "eq", "ne", "hs", "lo", "mi", "pl", "vs", "vc",
		"hi", "ls", "ge", "lt", "gt", "le", "al", "nv" };
	(void)big_endian;
	if (n < 4)
		return -1;
	uint32_t w = (uint32_t)code[3] << 24 | (uint32_t)code[2] << 16 | (uint32_t)code[1] << 8 | code[0];
	char r[8];
	memset(o, 0, sizeof *o);
	o->addr = addr;
	o->len = 4;
	o->next = addr + 4;
	o->ra = o->rb = -1;
	o->kind = RB_OTHER;
	if ((w & 0xff000010u) == 0x54000000u) {                 /* b.cond */
		o->cond = (int)(w & 15);
		o->target = addr + (uint64_t)(sext((w >> 5) & 0x7ffff, 19) * 4);
		o->kind = o->cond >= 14 ? RB_END : RB_COND;
		snprintf(o->text, sizeof o->text, "b.%s 0x%llx", cname[o->cond], (unsigned long long)o->target);
	} else if ((w & 0x7e000000u) == 0x34000000u) {          /* cbz, cbnz */
		o->kind = RB_COND;
		o->cond = w & (1u << 24) ? AC_CBNZ : AC_CBZ;
		o->wide = (int)(w >> 31);
		o->ra = (int)(w & 31);
		o->target = addr + (uint64_t)(sext((w >> 5) & 0x7ffff, 19) * 4);
		reg_text(r, sizeof r, o->ra, o->wide);
		snprintf(o->text, sizeof o->text, "%s %s, 0x%llx", o->cond == AC_CBZ ? "cbz" : "cbnz", r,
		         (unsigned long long)o->target);
	} else if ((w & 0x7e000000u) == 0x36000000u) {          /* tbz, tbnz */
		o->kind = RB_COND;
		o->cond = w & (1u << 24) ? AC_TBNZ : AC_TBZ;
		o->bit = (int)((w >> 31) << 5 | ((w >> 19) & 31));
		o->wide = o->bit >= 32;
		o->ra = (int)(w & 31);
		o->target = addr + (uint64_t)(sext((w >> 5) & 0x3fff, 14) * 4);
		reg_text(r, sizeof r, o->ra, o->wide);
		snprintf(o->text, sizeof o->text, "%s %s, #%d, 0x%llx", o->cond == AC_TBZ ? "tbz" : "tbnz", r, o->bit,
		         (unsigned long long)o->target);
	} else if ((w & 0xfc000000u) == 0x14000000u ||          /* b */
	           (w & 0xfffffc1fu) == 0xd61f0000u ||          /* br */
	           (w & 0xfffffc1fu) == 0xd65f0000u) {          /* ret */
		o->kind = RB_END;
	}
	return 0;
}

static int taken(const struct rbranch *b, rarch_reg_fn reg, void *ctx)
{
	uint64_t v = 0;
	if (b->cond < 16) {
		if (reg(ctx, 33, &v))
			return -1;
		int nf = (int)(v >> 31) & 1, zf = (int)(v >> 30) & 1, cf = (int)(v >> 29) & 1, vf = (int)(v >> 28) & 1;
		int t;
		switch (b->cond >> 1) {
		case 0: t = zf; break;
		case 1: t = cf; break;
		case 2: t = nf; break;
		case 3: t = vf; break;
		case 4: t = cf && !zf; break;
		case 5: t = nf == vf; break;
		case 6: t = !zf && nf == vf; break;
		default: t = 1; break;
		}
		/* The odd codes are the negations, except 15 (nv), which is "always" too. */
		return (b->cond & 1) && b->cond != 15 ? !t : t;
	}
	if (b->ra != 31 && reg(ctx, b->ra, &v))
		return -1;
	if (!b->wide)
		v = (uint32_t)v;
	switch (b->cond) {
	case AC_CBZ: return v == 0;
	case AC_CBNZ: return v != 0;
	case AC_TBZ: return !((v >> b->bit) & 1);
	case AC_TBNZ: return (int)((v >> b->bit) & 1);
	}
	return -1;
}

const struct rarch rarch_aarch64 = {
	.name = "aarch64",
	.elf_machine = EM_AARCH64,
	.ptr_size = 8,
	.bp_le = { AARCH64_BP_INSN & 0xff, (AARCH64_BP_INSN >> 8) & 0xff, (AARCH64_BP_INSN >> 16) & 0xff,
	           AARCH64_BP_INSN >> 24 },
	.bp_be = { AARCH64_BP_INSN >> 24, (AARCH64_BP_INSN >> 16) & 0xff, (AARCH64_BP_INSN >> 8) & 0xff,
	           AARCH64_BP_INSN & 0xff },
	.bp_len = AARCH64_BP_LEN,
	.trap_pc_adj = AARCH64_TRAP_PC_ADJ,
	.insn_align = 4,
	.ncore = 33,
	.pc = 32,
	.sp = 31,
	.ra = 30,
	.ret_sp_adj = 0,
	.dwarf_to_stub = dwarf_to_stub,
	.dwarf_name = dwarf_name,
	.flags = 33,
	.decode = decode,
	.taken = taken,
	.emulate = rarch_aarch64_emulate,
};

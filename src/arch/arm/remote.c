/* remote.c — ARMv6-M, ARMv7-M and ARMv7E-M (Cortex-M0/M0+, M3, M4F) for the
 * remote protocol client (arch/remote_arch.h).  Thumb and Thumb-2 only (an
 * M-profile core has no ARM state): instructions are one or two halfwords,
 * little-endian; a first halfword 0b11101, 0b11110 or 0b11111 in its top
 * five bits begins a 32-bit one.  The breakpoint is `bkpt #0` (0xbe00),
 * whose pc is reported on the bkpt itself; gdb's Z0 "kind" is 2 before a
 * 16-bit instruction, 3 before a 32-bit one (arm_breakpoint_kind_from_pc);
 * written with M it is the one halfword in both cases.  Registers in the
 * numbering of gdb's arm-m-profile.xml (what QEMU's stub and OpenOCD send):
 * r0..r12, sp 13, lr 14, pc 15, xpsr 25 (4 bytes after pc in `g`); on an
 * M4F, d0..d15 and fpscr follow as another feature.  The return address is
 * lr with bit 0 set (the Thumb bit): rarch.thumb_bit.  DWARF registers
 * 0..15 are r0..r15.
 *
 * Branch probes: b<c> (16-bit T1 and 32-bit T3, on the NZCV flags of xpsr),
 * cbz/cbnz (a low register against 0; forward only).  Straight-line code
 * ends at b, bx, pop {..., pc}, ldm/pop.w with pc, mov pc.  An IT block
 * (rarch_arm_it_start) makes up to four instructions conditional: a
 * breakpoint on one of them stops whether or not its condition holds, so a
 * site inside an IT block goes on the IT instruction (gdb's
 * arm_adjust_breakpoint_address does the same). */
#include "arch/remote_arch.h"
#include "arch/bits.h"

#include <elf.h>
#include <stdio.h>
#include <string.h>

static int dwarf_to_stub(int dw)
{
	return dw >= 0 && dw <= 15 ? dw : -1;
}

static const char *dwarf_name(int dw)
{
	static const char *const n[16] = { "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7",
		"r8", "r9", "r10", "r11", "r12", "sp", "lr", "pc" };
	if (dw >= 64 && dw < 96) {
		static char buf[8];
		snprintf(buf, sizeof buf, "s%d", dw - 64);
		return buf;
	}
	return dw >= 0 && dw < 16 ? n[dw] : "?";
}

int rarch_arm_insn_len(const uint8_t *code, size_t n)
{
	if (n < 2)
		return -1;
	unsigned h = (unsigned)code[0] | (unsigned)code[1] << 8;
	if ((h >> 11) < 0x1d)
		return 2;
	return n < 4 ? -1 : 4;
}

static int bp_kind(const uint8_t *code, size_t n, int big_endian)
{
	(void)big_endian;
	return rarch_arm_insn_len(code, n) == 4 ? 3 : 2;
}

enum { TC_CBZ = 16, TC_CBNZ };

static int decode(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct rbranch *o)
{
	static const char *const cname[16] = { "eq", "ne", "cs", "cc", "mi", "pl", "vs", "vc",
		"hi", "ls", "ge", "lt", "gt", "le", "", "" };
	(void)big_endian;
	int len = rarch_arm_insn_len(code, n);
	if (len < 0)
		return -1;
	unsigned h = (unsigned)code[0] | (unsigned)code[1] << 8;
	unsigned h2 = len == 4 ? ((unsigned)code[2] | (unsigned)code[3] << 8) : 0;
	memset(o, 0, sizeof *o);
	o->addr = addr;
	o->len = len;
	o->next = addr + (uint64_t)len;
	o->ra = o->rb = -1;
	o->kind = RB_OTHER;
	if (len == 2) {
		if ((h & 0xf000) == 0xd000 && ((h >> 8) & 15) < 14) {           /* b<c> T1 */
			o->kind = RB_COND;
			o->cond = (int)((h >> 8) & 15);
			o->target = addr + 4 + (uint64_t)(sext(h & 0xff, 8) * 2);
		} else if ((h & 0xf500) == 0xb100) {                             /* cbz, cbnz */
			o->kind = RB_COND;
			o->cond = h & 0x0800 ? TC_CBNZ : TC_CBZ;
			o->ra = (int)(h & 7);
			o->target = addr + 4 + (((h >> 9) & 1) << 6 | ((h >> 3) & 31) << 1);
			snprintf(o->text, sizeof o->text, "%s r%d, 0x%llx", o->cond == TC_CBZ ? "cbz" : "cbnz", o->ra,
			         (unsigned long long)o->target);
			return 0;
		} else if ((h & 0xf800) == 0xe000 ||                             /* b T2 */
		           (h & 0xff87) == 0x4700 ||                             /* bx rm */
		           (h & 0xff00) == 0xbd00 ||                             /* pop {..., pc} */
		           (h & 0xff87) == 0x4687) {                             /* mov pc, rm */
			o->kind = RB_END;
		} else if ((h & 0xff87) == 0x4780) {                             /* blx rm */
			o->links = 1;
		}
	} else {
		if ((h & 0xf800) == 0xf000 && (h2 & 0xd000) == 0x8000 && ((h >> 6) & 15) < 14) {  /* b<c>.w T3 */
			uint32_t s = (h >> 10) & 1, j1 = (h2 >> 13) & 1, j2 = (h2 >> 11) & 1;
			uint32_t imm = s << 20 | j2 << 19 | j1 << 18 | (h & 0x3f) << 12 | (h2 & 0x7ff) << 1;
			o->kind = RB_COND;
			o->cond = (int)((h >> 6) & 15);
			o->target = addr + 4 + (uint64_t)sext(imm, 21);
		} else if ((h & 0xf800) == 0xf000 && (h2 & 0xd000) == 0x9000) {   /* b.w T4 */
			o->kind = RB_END;
		} else if ((h & 0xf800) == 0xf000 && (h2 & 0xd000) == 0xd000) {   /* bl */
			o->links = 1;
		} else if ((h & 0xffd0) == 0xe890 && (h2 & 0x8000)) {            /* ldm/pop.w {..., pc} */
			o->kind = RB_END;
		} else if (h == 0xf85d && h2 == 0xfb04) {                         /* ldr.w pc, [sp], #4 (pop pc) */
			o->kind = RB_END;
		}
	}
	if (o->kind == RB_COND)
		snprintf(o->text, sizeof o->text, "b%s%s 0x%llx", cname[o->cond], len == 4 ? ".w" : "",
		         (unsigned long long)o->target);
	return 0;
}

static int taken(const struct rbranch *b, rarch_reg_fn reg, void *ctx)
{
	uint64_t v = 0;
	if (b->cond < 16) {
		if (reg(ctx, 25, &v))                   /* xpsr: N Z C V in bits 31..28, as cpsr */
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
		return (b->cond & 1) && b->cond != 15 ? !t : t;
	}
	if (reg(ctx, b->ra, &v))
		return -1;
	v = (uint32_t)v;
	return b->cond == TC_CBZ ? v == 0 : v != 0;
}

/* Whether addr is inside an IT block, decoding forward from the function's
 * start (code[0..n) at start): 1 with *it the IT instruction's address, 0
 * not, -1 addr is not on an instruction boundary from start. */
int rarch_arm_it_start(const uint8_t *code, size_t n, uint64_t start, uint64_t addr, uint64_t *it)
{
	uint64_t pc = start, it_at = 0;
	int left = 0;                               /* instructions still in the IT block */
	while (pc < addr) {
		size_t off = (size_t)(pc - start);
		int len = rarch_arm_insn_len(code + off, n - off);
		if (len < 0)
			return -1;
		unsigned h = (unsigned)code[off] | (unsigned)code[off + 1] << 8;
		if (left)
			left--;
		if (len == 2 && (h & 0xff00) == 0xbf00 && (h & 15)) {   /* IT: its mask's lowest set bit ends it */
			unsigned m = h & 15;
			left = m & 1 ? 4 : m & 2 ? 3 : m & 4 ? 2 : 1;
			it_at = pc;
		}
		pc += (uint64_t)len;
	}
	if (pc != addr)
		return -1;
	if (!left)
		return 0;
	*it = it_at;
	return 1;
}

const struct rarch rarch_arm = {
	.name = "arm",
	.elf_machine = EM_ARM,
	.ptr_size = 4,
	.bp_le = { 0x00, 0xbe },
	.bp_be = { 0xbe, 0x00 },
	.bp_len = 2,
	.bp_kind = bp_kind,
	.thumb_bit = 1,
	.trap_pc_adj = 0,
	.insn_align = 2,
	.ncore = 16,
	.pc = 15,
	.sp = 13,
	.ra = 14,
	.ret_sp_adj = 0,
	.dwarf_to_stub = dwarf_to_stub,
	.dwarf_name = dwarf_name,
	.flags = 25,
	.decode = decode,
	.taken = taken,
	.it_start = rarch_arm_it_start,
	.emulate = rarch_arm_emulate,
};

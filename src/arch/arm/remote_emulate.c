/* remote_emulate.c — the 16-bit Thumb instructions that sonde executes
 * itself at a remote breakpoint on a Cortex-M (rarch.emulate,
 * arch/remote_arch.h), so that a hit resumes without the stub's single step.
 *
 * Emulated, none of which sets the flags: push (at most four registers: one
 * store of 16 bytes), mov between registers (not to the pc), ldr literal (the
 * PC-relative load: Align(pc + 4, 4) + imm), ldr/str/ldrb/strb/ldrh/strh
 * with an immediate offset, ldr/str sp-relative, add rd, sp, #imm, adr,
 * add/sub sp, #imm, nop.  Everything else is stepped: 32-bit instructions,
 * anything that sets the flags, branches, pop, and every instruction while
 * the xPSR says an IT block is in progress (it would be conditional; sites
 * are never placed inside one, rarch.it_start, but the check is cheap).
 * Stub numbering: r0..r12, sp 13, lr 14, pc 15, xpsr 25; little-endian. */
#include "arch/remote_arch.h"

enum { R_SP = 13, R_PC = 15, R_XPSR = 25 };

static int get(struct remu *u, int r, uint32_t *v)
{
	uint64_t x = 0;
	if (u->reg(u->ctx, r, &x))
		return -1;
	*v = (uint32_t)x;
	return 0;
}

static void put(struct remu *u, int r, uint32_t v)
{
	u->set[u->nset].regno = r;
	u->set[u->nset].val = v;
	u->nset++;
}

static int load(struct remu *u, uint32_t addr, int size, int rt)
{
	uint8_t b[4];
	if (addr % (uint32_t)size)
		return 1;       /* unaligned: the core may fault (or not, CCR): its business */
	if (u->read(u->ctx, addr, b, (size_t)size))
		return -1;
	uint32_t v = 0;
	for (int i = 0; i < size; i++)
		v |= (uint32_t)b[i] << (8 * i);
	put(u, rt, v);
	return 0;
}

static int store(struct remu *u, uint32_t addr, int size, int rt)
{
	uint32_t v;
	if (addr % (uint32_t)size)
		return 1;
	if (get(u, rt, &v))
		return -1;
	u->store_addr = addr;
	u->store_len = size;
	for (int i = 0; i < size; i++)
		u->store[i] = (uint8_t)(v >> (8 * i));
	return 0;
}

static int thumb16(unsigned h, uint32_t pc, struct remu *u)
{
	uint32_t a, b;
	int rt = (int)(h & 7), rn = (int)((h >> 3) & 7), imm5 = (int)((h >> 6) & 31);
	int r8 = (int)((h >> 8) & 7), imm8 = (int)(h & 0xff);
	if (h == 0xbf00)                                        /* nop */
		return 0;
	if ((h & 0xfe00) == 0xb400) {                           /* push {rlist[, lr]} */
		int n = __builtin_popcount(h & 0x1ff);
		if (!n || n > 4 || get(u, R_SP, &a))
			return !n || n > 4 ? 1 : -1;
		uint32_t at = a - 4u * (uint32_t)n;
		int k = 0;
		for (int r = 0; r < 9; r++) {
			if (!(h & (1u << r)))
				continue;
			if (get(u, r == 8 ? 14 : r, &b))
				return -1;
			for (int i = 0; i < 4; i++)
				u->store[4 * k + i] = (uint8_t)(b >> (8 * i));
			k++;
		}
		u->store_addr = at;
		u->store_len = 4 * n;
		put(u, R_SP, at);
		return 0;
	}
	if ((h & 0xff00) == 0x4600) {                           /* mov rd, rm (no flags) */
		int rd = (int)((h >> 4) & 8) | rt, rm = (int)((h >> 3) & 15);
		if (rd == R_PC)
			return 1;
		if (rm == R_PC)
			b = pc + 4;
		else if (get(u, rm, &b))
			return -1;
		put(u, rd, b);
		return 0;
	}
	if ((h & 0xf800) == 0x4800)                             /* ldr rt, [pc, #imm8*4] */
		return load(u, ((pc + 4) & ~3u) + 4u * (uint32_t)imm8, 4, r8);
	if ((h & 0xf000) == 0x6000 || (h & 0xf000) == 0x7000 || (h & 0xf000) == 0x8000) {
		int size = (h & 0xf000) == 0x6000 ? 4 : (h & 0xf000) == 0x7000 ? 1 : 2;
		if (get(u, rn, &a))
			return -1;
		a += (uint32_t)(imm5 * size);
		return h & 0x0800 ? load(u, a, size, rt) : store(u, a, size, rt);
	}
	if ((h & 0xf000) == 0x9000) {                           /* ldr/str rt, [sp, #imm8*4] */
		if (get(u, R_SP, &a))
			return -1;
		a += 4u * (uint32_t)imm8;
		return h & 0x0800 ? load(u, a, 4, r8) : store(u, a, 4, r8);
	}
	if ((h & 0xf800) == 0xa800) {                           /* add rd, sp, #imm8*4 */
		if (get(u, R_SP, &a))
			return -1;
		put(u, r8, a + 4u * (uint32_t)imm8);
		return 0;
	}
	if ((h & 0xf800) == 0xa000) {                           /* adr rd, label */
		put(u, r8, ((pc + 4) & ~3u) + 4u * (uint32_t)imm8);
		return 0;
	}
	if ((h & 0xff00) == 0xb000) {                           /* add / sub sp, #imm7*4 */
		if (get(u, R_SP, &a))
			return -1;
		uint32_t d = 4u * (h & 0x7f);
		put(u, R_SP, h & 0x80 ? a - d : a + d);
		return 0;
	}
	return 1;
}

int rarch_arm_emulate(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct remu *u)
{
	(void)big_endian;
	if (rarch_arm_insn_len(code, n) != 2)
		return 1;
	u->nset = 0;
	u->store_len = 0;
	unsigned h = (unsigned)code[0] | (unsigned)code[1] << 8;
	uint32_t xpsr;
	if (get(u, R_XPSR, &xpsr))
		return -1;
	if ((xpsr & 0x0600fc00u) || ((h & 0xff00) == 0xbf00 && (h & 15)))
		return 1;   /* in an IT block (ITSTATE in xpsr[26:25,15:10]), or an IT instruction */
	int rc = thumb16(h, (uint32_t)addr, u);
	if (rc)
		return rc;
	put(u, R_PC, (uint32_t)addr + 2);
	return 0;
}

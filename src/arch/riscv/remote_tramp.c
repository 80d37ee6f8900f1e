/* remote_tramp.c — RV32 trampolines of in-target counting on RISC-V
 * microcontrollers (remote_tramp.h).  Encodings from the RISC-V unprivileged
 * ISA manual, checked against riscv64-unknown-elf-objdump
 * (tests/unit/test_remote_arch.c). */
#include "arch/riscv/remote_tramp.h"

#include "arch/bits.h"
#include "arch/emit.h"
#include "arch/remote_arch.h"

#define EXCL_BACK 16    /* instructions after an lr.w where no site is moved */
#define SH_SLLI  0x01f01013u   /* slli x0, x0, 0x1f */
#define SH_EBREAK 0x00100073u
#define SH_SRAI  0x40705013u   /* srai x0, x0, 7 */

static uint32_t w32(const uint8_t *c, int len)
{
	uint32_t v = (uint32_t)c[0] | (uint32_t)c[1] << 8;
	return len == 4 ? v | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24 : v;
}

static uint64_t bit(uint32_t w, int from, int to)
{
	return (uint64_t)((w >> from) & 1) << to;
}

/* Direct jumps and branches (jal, b<c>, c.j, c.jal, c.beqz, c.bnez): 1
 * with *t, and *link the register jal writes (c.jal: ra; 0 none). */
static int branch_target(uint32_t w, int len, uint64_t pc, uint64_t *t, int *link)
{
	*link = 0;
	if (len == 4) {
		if ((w & 0x7f) == 0x6f) {
			*t = pc + (uint64_t)sext(bit(w, 31, 20) | ((w >> 21) & 0x3ff) << 1 | bit(w, 20, 11) |
			                         (uint64_t)((w >> 12) & 0xff) << 12, 21);
			*link = (int)((w >> 7) & 31);
			return 1;
		}
		if ((w & 0x7f) == 0x63) {
			*t = pc + (uint64_t)sext(bit(w, 31, 12) | ((w >> 25) & 0x3f) << 5 | ((w >> 8) & 15) << 1 | bit(w, 7, 11), 13);
			return 1;
		}
		return 0;
	}
	unsigned op = w & 3, f3 = (w >> 13) & 7;
	if (op == 1 && (f3 == 1 || f3 == 5)) {          /* c.jal, c.j */
		*t = pc + (uint64_t)sext(bit(w, 12, 11) | bit(w, 11, 4) | ((w >> 9) & 3) << 8 | bit(w, 8, 10) | bit(w, 7, 6) |
		                         bit(w, 6, 7) | ((w >> 3) & 7) << 1 | bit(w, 2, 5), 12);
		*link = f3 == 1;
		return 1;
	}
	if (op == 1 && (f3 == 6 || f3 == 7)) {          /* c.beqz, c.bnez */
		*t = pc + (uint64_t)sext(bit(w, 12, 8) | ((w >> 10) & 3) << 3 | ((w >> 5) & 3) << 6 | ((w >> 3) & 3) << 1 |
		                         bit(w, 2, 5), 9);
		return 1;
	}
	return 0;
}

/* jalr / c.jr with rd = x0 to another register than ra: a computed jump. */
static int computed_jump(uint32_t w, int len)
{
	if (len == 4)
		return (w & 0x707f) == 0x67 && ((w >> 7) & 31) == 0 && ((w >> 15) & 31) != 1;
	return (w & 0xf07f) == 0x8002 && ((w >> 7) & 31) != 0 && ((w >> 7) & 31) != 1;
}

int rv32_semihost_at(const uint8_t *code, size_t n, size_t off)
{
	return off >= 4 && off + 8 <= n && w32(code + off, 4) == SH_EBREAK && w32(code + off - 4, 4) == SH_SLLI &&
	       w32(code + off + 4, 4) == SH_SRAI;
}

const char *rv32_reloc_refused(const uint8_t *code, size_t n)
{
	int len = rarch_riscv_insn_len(code, n);
	if (len < 0)
		return "an instruction cut short or longer than 32 bits";
	uint32_t w = w32(code, len);
	if (len == 2) {
		if (w == 0x9002)
			return "c.ebreak";
		if ((w & 0xf07f) == 0x9002 && ((w >> 7) & 31) == 1)
			return "c.jalr ra";
		return 0;
	}
	if (w == SH_SLLI || w == SH_SRAI)
		return "part of a semihosting sequence";
	if ((w & 0x7f) == 0x73 && !((w >> 12) & 7))
		return "ecall, ebreak or an exception return";
	if ((w & 0x7f) == 0x2f && (((w >> 27) & 31) == 2 || ((w >> 27) & 31) == 3))
		return "lr or sc";
	if ((w & 0x707f) == 0x67 && ((w >> 7) & 31) && ((w >> 7) & 31) == ((w >> 15) & 31))
		return "jalr whose link register is its base";
	return 0;
}

int rv32_site_check(const uint8_t *fn, size_t n, uint64_t fn_start, uint64_t site, int *disp, const char **why)
{
	int since_lr = -1, computed = 0, l1 = 0, l2 = 0, target2 = 0, link;
	if (site < fn_start || site - fn_start >= n) {
		*why = "outside its function";
		return 1;
	}
	for (uint64_t pc = fn_start; pc < fn_start + n;) {
		size_t off = (size_t)(pc - fn_start);
		int len = rarch_riscv_insn_len(fn + off, n - off);
		if (len < 0)
			break;
		uint32_t w = w32(fn + off, len);
		uint64_t t;
		if (pc < site && len == 4 && (w & 0xf800707f) == 0x1000202f)
			since_lr = 0;                                   /* lr.w */
		else if (pc < site && since_lr >= 0)
			since_lr++;
		if (pc == site)
			l1 = len;
		if (l1 == 2 && pc == site + 2)
			l2 = len;
		target2 |= branch_target(w, len, pc, &t, &link) && t == site + 2;
		computed |= computed_jump(w, len);
		pc += (uint64_t)len;
	}
	const char *w = l1 ? rv32_reloc_refused(fn + (site - fn_start), (size_t)l1) : NULL;
	size_t off = (size_t)(site - fn_start);
	if (!l1)
		w = "not on an instruction boundary decoding its function";
	else if (since_lr >= 0 && since_lr < EXCL_BACK)
		w = "after an lr.w: the counter's amoadd may break its reservation";
	else if (l1 == 2 && !l2)
		w = "a compressed instruction at the end of its function";
	else if (l1 == 2 && computed)
		w = "a compressed instruction in a function with computed jumps (the next one would move too)";
	else if (l1 == 2 && target2)
		w = "a compressed instruction whose next one is a branch target";
	else if (l1 == 2 && ((w32(fn + off, 2) & 0xe003) == 0x2001 || ((w32(fn + off, 2) & 0xf07f) == 0x9002)))
		w = "a compressed call (c.jal, c.jalr): the return would land on the next instruction, which moves too";
	else if (l1 == 2)
		w = rv32_reloc_refused(fn + off + 2, (size_t)l2);
	if (!w && (rv32_semihost_at(fn, n, off + (size_t)(l1 + l2)) || rv32_semihost_at(fn, n, off + 4)))
		w = "before a semihosting ebreak (QEMU reads the instruction before it)";
	if (w) {
		*why = w;
		return 1;
	}
	*disp = l1 + l2;
	return 0;
}

/* --- emitting --------------------------------------------------------------- */

static void e32(struct em *e, uint32_t w)
{
	e16(e, w & 0xffff);
	e16(e, w >> 16);
}

static uint32_t itype(int imm, unsigned rs1, unsigned f3, unsigned rd, unsigned op)
{
	return (uint32_t)(imm & 0xfff) << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op;
}

/* lui rd, %hi(v); addi rd, rd, %lo(v) */
static void li32(struct em *e, unsigned rd, uint32_t v)
{
	uint32_t hi = (v + 0x800) & 0xfffff000u;
	e32(e, hi | rd << 7 | 0x37);
	e32(e, itype((int)(v - hi), rd, 0, rd, 0x13));
}

static int jal_enc(uint64_t from, uint64_t to, unsigned rd, uint32_t *w)
{
	int64_t off = (int64_t)(to - from);
	if (off & 1 || off < -(1ll << 20) || off >= (1ll << 20))
		return -1;
	uint32_t u = (uint32_t)off;
	*w = ((u >> 20) & 1) << 31 | ((u >> 1) & 0x3ff) << 21 | ((u >> 11) & 1) << 20 | ((u >> 12) & 0xff) << 12 | rd << 7 | 0x6f;
	return 0;
}

int rv32_branch(uint8_t out[4], uint64_t from, uint64_t to)
{
	uint32_t w;
	if (jal_enc(from, to, 0, &w))
		return -1;
	for (int i = 0; i < 4; i++)
		out[i] = (uint8_t)(w >> (8 * i));
	return 0;
}

static int jump(struct em *e, uint64_t to)
{
	uint32_t w;
	if (jal_enc(e->at + e->k, to, 0, &w))
		return -1;
	e32(e, w);
	return 0;
}

/* b<f3> rs1, rs2, +8 (over the next 4-byte instruction) */
static uint32_t bskip(unsigned f3, unsigned rs1, unsigned rs2)
{
	return rs2 << 20 | rs1 << 15 | f3 << 12 | 8u << 7 | 0x63;
}

/* One instruction at pc relocated, falling through to what follows it.
 * 0, -1 (a target out of reach). */
static int relocate(struct em *e, uint64_t pc, const uint8_t *c, int len)
{
	uint32_t w = w32(c, len);
	uint64_t t;
	int link;
	uint32_t next = (uint32_t)(pc + (uint64_t)len);
	if (branch_target(w, len, pc, &t, &link)) {
		if (len == 4 && (w & 0x7f) == 0x63)             /* b<c>: the opposite one over the jump */
			e32(e, bskip(((w >> 12) & 7) ^ 1, (w >> 15) & 31, (w >> 20) & 31));
		else if (len == 2 && ((w >> 13) & 7) >= 6)      /* c.beqz / c.bnez rs1': bne / beq rs1', x0 */
			e32(e, bskip(((w >> 13) & 7) == 6 ? 1 : 0, 8 + ((w >> 7) & 7), 0));
		else if (link)                                  /* jal rd / c.jal: rd = the next instruction */
			li32(e, (unsigned)link, next);
		return jump(e, t);
	}
	if (len == 4 && (w & 0x7f) == 0x17) {              /* auipc rd, imm */
		if ((w >> 7) & 31)
			li32(e, (w >> 7) & 31, (uint32_t)pc + (w & 0xfffff000u));
		return 0;
	}
	if (len == 4 && (w & 0x707f) == 0x67 && ((w >> 7) & 31)) {   /* jalr rd, imm(rs1): rd set, then jalr x0 */
		li32(e, (w >> 7) & 31, next);
		e32(e, w & ~(31u << 7));
		return 0;
	}
	if (len == 2 && (w & 0xf07f) == 0x9002 && ((w >> 7) & 31)) { /* c.jalr rs1: ra set, then jalr x0, 0(rs1) */
		li32(e, 1, next);
		e32(e, itype(0, (w >> 7) & 31, 0, 0, 0x67));
		return 0;
	}
	if (len == 4)
		e32(e, w);
	else
		e16(e, w);
	return 0;
}

/* The displaced instructions code[0..disp) of site relocated, then `jal
 * x0` back to what follows them: the end of a trampoline.  Its length, or
 * -1 with *why. */
static int displaced(struct em *e, uint64_t site, const uint8_t *code, int disp, const char **why)
{
	for (int off = 0; off < disp;) {
		int len = rarch_riscv_insn_len(code + off, (size_t)(disp - off));
		if (len < 0 || relocate(e, site + (uint64_t)off, code + off, len)) {
			*why = len < 0 ? "an instruction cut short" : "a jump target out of the trampoline's reach (±1 MiB)";
			return -1;
		}
		off += len;
	}
	if (jump(e, site + (uint64_t)disp)) {
		*why = "the site is out of the trampoline's reach (jal: ±1 MiB)";
		return -1;
	}
	if (e->k > e->max) {
		*why = "no room for the trampoline";
		return -1;
	}
	return (int)e->k;
}

int rv32_tramp(uint8_t *out, size_t max, uint64_t at, uint64_t site, const uint8_t *code, int disp,
               uint64_t counter, const char **why)
{
	struct em e = { out, max, 0, at };
	if (at & 1 || counter & 7 || counter >> 32) {
		*why = "a misaligned trampoline or counter";
		return -1;
	}
	enum { SP = 2, T0 = 5, T1 = 6 };
	e32(&e, itype(-16, SP, 0, SP, 0x13));          /* addi sp, sp, -16 */
	e32(&e, 0x00512023u);                          /* sw t0, 0(sp) */
	e32(&e, 0x00612223u);                          /* sw t1, 4(sp) */
	li32(&e, T0, (uint32_t)counter);               /* t0 = &counter */
	e32(&e, itype(1, 0, 0, T1, 0x13));             /* li t1, 1 */
	e32(&e, T1 << 20 | T0 << 15 | 2u << 12 | T1 << 7 | 0x2f);   /* amoadd.w t1, t1, (t0) */
	e32(&e, itype(1, T1, 0, T1, 0x13));            /* addi t1, t1, 1: 0 when the low word wrapped */
	e32(&e, 0x00031863u);                          /* bnez t1, 1f (+16) */
	e32(&e, itype(4, T0, 0, T0, 0x13));            /* addi t0, t0, 4 */
	e32(&e, itype(1, 0, 0, T1, 0x13));             /* li t1, 1 */
	e32(&e, T1 << 20 | T0 << 15 | 2u << 12 | 0x2f);             /* amoadd.w zero, t1, (t0) */
	e32(&e, 0x00012283u);                          /* 1: lw t0, 0(sp) */
	e32(&e, 0x00412303u);                          /* lw t1, 4(sp) */
	e32(&e, itype(16, SP, 0, SP, 0x13));           /* addi sp, sp, 16 */
	return displaced(&e, site, code, disp, why);
}

/* --- timing calls in the target (record --target) ---------------------------- */

enum { RA = 1, SP_ = 2, T0_ = 5, T1_ = 6, T2 = 7, T3 = 28, T4 = 29, T5 = 30, T6 = 31 };

static uint32_t lw(unsigned rd, int off, unsigned rs1)
{
	return itype(off, rs1, 2, rd, 0x03);
}

static uint32_t sw(unsigned rs2, int off, unsigned rs1)
{
	return (uint32_t)((off >> 5) & 0x7f) << 25 | rs2 << 20 | rs1 << 15 | 2u << 12 | (uint32_t)(off & 31) << 7 | 0x23;
}

/* b<f3> rs1, rs2 from out offset `from` to offset `to` (±4 KiB), both emitted. */
static void patch_b(struct em *e, size_t from, size_t to, unsigned f3, unsigned rs1, unsigned rs2)
{
	uint32_t u = (uint32_t)((int)to - (int)from);
	uint32_t w = ((u >> 12) & 1) << 31 | ((u >> 5) & 0x3f) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 |
	             ((u >> 1) & 15) << 8 | ((u >> 11) & 1) << 7 | 0x63;
	for (int i = 0; i < 4 && from + (size_t)i < e->max; i++)
		e->o[from + (size_t)i] = (uint8_t)(w >> (8 * i));
}

enum { F_BLTU = 6, F_BGEU = 7 };

/* t0-t6 saved in a 32-byte frame, machine interrupts off (t6 = the old mstatus). */
static void rec_save(struct em *e)
{
	e32(e, itype(-32, SP_, 0, SP_, 0x13));           /* addi sp, sp, -32 */
	static const unsigned r[7] = { T0_, T1_, T2, T3, T4, T5, T6 };
	for (int i = 0; i < 7; i++)
		e32(e, sw(r[i], 4 * i, SP_));
	e32(e, 0x300u << 20 | 8u << 15 | 7u << 12 | T6 << 7 | 0x73);   /* csrrci t6, mstatus, 8 (MIE) */
}

static void rec_restore(struct em *e)
{
	e32(e, itype(8, T6, 7, T6, 0x13));               /* andi t6, t6, 8 */
	e32(e, 0x300u << 20 | T6 << 15 | 2u << 12 | 0x73);   /* csrs mstatus, t6: MIE back as it was */
	static const unsigned r[7] = { T0_, T1_, T2, T3, T4, T5, T6 };
	for (int i = 0; i < 7; i++)
		e32(e, lw(r[i], 4 * i, SP_));
	e32(e, itype(32, SP_, 0, SP_, 0x13));            /* addi sp, sp, 32 */
}

static int jal_to(struct em *e, unsigned rd, uint64_t to)
{
	uint32_t w;
	if (jal_enc(here(e), to, rd, &w))
		return -1;
	e32(e, w);
	return 0;
}

int rv32_rec_entry(uint8_t *out, size_t max, uint64_t at, uint64_t site, const uint8_t *code, int disp, unsigned id,
                   const struct rec_addrs *a, const char **why)
{
	struct em e = { out, max, 0, at };
	if (at & 1 || a->ctl & 3 || a->ctl >> 32 || a->clock >> 32 || a->exit >> 32 || id > 0x7ff) {
		*why = "a misaligned trampoline or control block, or too many functions (2047 at most)";
		return -1;
	}
	rec_save(&e);
	li32(&e, T0_, (uint32_t)a->ctl);
	e32(&e, lw(T1_, REC_CTL_SSP, T0_));
	e32(&e, lw(T2, REC_CTL_SEND, T0_));
	size_t full = e.k;
	e32(&e, 0);                                      /* bgeu t1, t2, lost: the shadow stack is full */
	e32(&e, sw(RA, 0, T1_));                         /* the return address */
	e32(&e, itype((int)id, 0, 0, T2, 0x13));         /* li t2, id */
	e32(&e, sw(T2, 4, T1_));
	e32(&e, sw(SP_, 8, T1_));
	e32(&e, itype(REC_FRAME, T1_, 0, T1_, 0x13));    /* addi t1, t1, 12 */
	e32(&e, sw(T1_, REC_CTL_SSP, T0_));
	e32(&e, itype(1, T2, 1, T1_, 0x13));             /* slli t1, t2, 1: an entry */
	li32(&e, T2, (uint32_t)a->clock);
	e32(&e, lw(T2, 0, T2));                          /* the time */
	if (jal_to(&e, T5, a->put))
		goto reach;
	li32(&e, RA, (uint32_t)a->exit);                 /* ra = the exit trampoline */
	size_t skip = e.k;
	e32(&e, 0);                                      /* j out */
	size_t lost = e.k;
	e32(&e, lw(T1_, REC_CTL_LOST, T0_));
	e32(&e, itype(1, T1_, 0, T1_, 0x13));
	e32(&e, sw(T1_, REC_CTL_LOST, T0_));
	patch_b(&e, full, lost, F_BGEU, T1_, T2);
	uint32_t j;
	if (jal_enc(at + skip, at + e.k, 0, &j))
		goto reach;
	for (int i = 0; i < 4 && skip + (size_t)i < max; i++)
		out[skip + (size_t)i] = (uint8_t)(j >> (8 * i));
	rec_restore(&e);                                 /* out: */
	return displaced(&e, site, code, disp, why);
reach:
	*why = "the ring writer is out of a jal's reach";
	return -1;
}

int rv32_rec_exit(uint8_t *out, size_t max, uint64_t at, const struct rec_addrs *a)
{
	struct em e = { out, max, 0, at };
	rec_save(&e);
	li32(&e, T2, (uint32_t)a->clock);
	e32(&e, lw(T2, 0, T2));                          /* the time, first */
	li32(&e, T0_, (uint32_t)a->ctl);
	e32(&e, lw(T1_, REC_CTL_SSP, T0_));
	e32(&e, lw(T3, REC_CTL_SBASE, T0_));
	size_t loop = e.k;
	e32(&e, itype(-REC_FRAME, T1_, 0, T1_, 0x13));   /* 1: addi t1, t1, -12 */
	size_t bottom = e.k;
	e32(&e, 0);                                      /*    bgeu t3, t1, 2f: the first frame (never below it) */
	e32(&e, lw(T4, 8, T1_));                         /*    its sp */
	size_t back = e.k;
	e32(&e, 0);                                      /*    bltu t4, sp, 1b: deeper than ours, left by a longjmp */
	patch_b(&e, back, loop, F_BLTU, T4, SP_);
	patch_b(&e, bottom, e.k, F_BGEU, T3, T1_);
	e32(&e, sw(T1_, REC_CTL_SSP, T0_));              /* 2: popped */
	e32(&e, lw(T1_, 4, T1_));                        /*    the id */
	e32(&e, itype(1, T1_, 1, T1_, 0x13));            /*    slli t1, t1, 1 */
	e32(&e, itype(1, T1_, 6, T1_, 0x13));            /*    ori t1, t1, 1: a return */
	if (jal_to(&e, T5, a->put))
		return -1;
	e32(&e, lw(T1_, REC_CTL_SSP, T0_));
	e32(&e, lw(RA, 0, T1_));                         /* the return address */
	rec_restore(&e);
	e32(&e, itype(0, RA, 0, 0, 0x67));               /* ret */
	return (int)e.k;
}

int rv32_rec_put(uint8_t *out, size_t max, uint64_t at, uint64_t *full)
{
	struct em e = { out, max, 0, at };
	e32(&e, lw(T3, REC_CTL_WP, T0_));
	e32(&e, lw(T4, REC_CTL_REND, T0_));
	size_t b = e.k;
	e32(&e, 0);                                      /* bgeu t3, t4, full */
	e32(&e, sw(T1_, 0, T3));
	e32(&e, sw(T2, 4, T3));
	e32(&e, itype(REC_EVENT, T3, 0, T3, 0x13));      /* addi t3, t3, 8 */
	e32(&e, sw(T3, REC_CTL_WP, T0_));
	e32(&e, RV32_REC_RETURN);                        /* jr t5 */
	patch_b(&e, b, e.k, F_BGEU, T3, T4);
	*full = here(&e);
	e32(&e, SH_EBREAK);                              /* full: sonde drains the ring, then resumes at put */
	return (int)e.k;
}

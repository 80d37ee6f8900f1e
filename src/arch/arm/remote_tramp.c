/* remote_tramp.c — Thumb-2 trampolines of in-target counting on Cortex-M
 * (remote_tramp.h).  Encodings from the ARMv7-M ARM (DDI 0403), checked
 * against arm-none-eabi-objdump (tests/unit/test_remote_arch.c). */
#include "arch/arm/remote_tramp.h"

#include "arch/bits.h"
#include "arch/emit.h"
#include "arch/remote_arch.h"

#define EXCL_BACK 16    /* instructions after a load-exclusive where no site is moved */

static unsigned h16(const uint8_t *c)
{
	return (unsigned)c[0] | (unsigned)c[1] << 8;
}

/* The target of a direct branch at pc (b, b<c>, cbz, cbnz, b.w, b<c>.w,
 * bl): 1 with *t, else 0. */
static int branch_target(unsigned h, unsigned h2, int len, uint64_t pc, uint64_t *t)
{
	if (len == 2) {
		if ((h & 0xf000) == 0xd000 && ((h >> 8) & 15) < 14)
			*t = pc + 4 + (uint64_t)(sext(h & 0xff, 8) * 2);
		else if ((h & 0xf800) == 0xe000)
			*t = pc + 4 + (uint64_t)(sext(h & 0x7ff, 11) * 2);
		else if ((h & 0xf500) == 0xb100)
			*t = pc + 4 + (((h >> 9) & 1) << 6 | ((h >> 3) & 31) << 1);
		else
			return 0;
		return 1;
	}
	if ((h & 0xf800) != 0xf000 || !(h2 & 0x8000))
		return 0;
	uint64_t s = (h >> 10) & 1, j1 = (h2 >> 13) & 1, j2 = (h2 >> 11) & 1;
	if ((h2 & 0x5000) == 0x0000 && (h & 0x0380) != 0x0380) {             /* b<c>.w T3 */
		*t = pc + 4 + (uint64_t)sext(s << 20 | j2 << 19 | j1 << 18 | (h & 0x3f) << 12 | (h2 & 0x7ff) << 1, 21);
		return 1;
	}
	if (h2 & 0x1000) {                                                     /* b.w T4, bl */
		uint64_t i1 = !(j1 ^ s), i2 = !(j2 ^ s);
		*t = pc + 4 + (uint64_t)sext(s << 24 | i1 << 23 | i2 << 22 | (h & 0x3ff) << 12 | (h2 & 0x7ff) << 1, 25);
		return 1;
	}
	return 0;
}

/* An instruction that jumps to a computed address inside its function (a
 * switch's table): tbb, tbh, add/mov pc, ldr pc from other than the stack. */
static int computed_jump(unsigned h, unsigned h2, int len)
{
	if (len == 2)
		return (h & 0xfc87) == 0x4487 && (h & 0x0300) != 0x0300 && ((h >> 3) & 15) != 14;  /* add/mov pc, rm (not lr) */
	if ((h & 0xfff0) == 0xe8d0 && (h2 & 0xffe0) == 0xf000)
		return 1;                                                          /* tbb, tbh */
	if ((h & 0xfff0) == 0xf8d0 || (h & 0xfff0) == 0xf850)                  /* ldr.w pc, [rn...] */
		return (h2 >> 12) == 15 && (h & 15) != 13;
	return 0;
}

static int load_exclusive(unsigned h, int len)
{
	return len == 4 && ((h & 0xfff0) == 0xe850 || (h & 0xfff0) == 0xe8d0);
}

const char *t32_reloc_refused(const uint8_t *code, size_t n)
{
	int len = rarch_arm_insn_len(code, n);
	if (len < 0)
		return "an instruction cut short";
	unsigned h = h16(code), h2 = len == 4 ? h16(code + 2) : 0;
	if (len == 2) {
		if ((h & 0xff00) == 0xbf00 && (h & 15))
			return "an IT instruction";
		if ((h & 0xff00) == 0xbe00 || (h & 0xff00) == 0xdf00 || (h & 0xff00) == 0xde00)
			return "bkpt, svc or udf";
		if ((h & 0xfc00) == 0x4400) {                   /* add, cmp, mov (high registers), bx, blx */
			unsigned op = (h >> 8) & 3, rm = (h >> 3) & 15, rdn = (h & 7) | ((h >> 4) & 8);
			if (op < 3 && (rm == 15 || rdn == 15))
				return "an instruction reading or writing the pc";
			if (op == 3 && (rm == 15 || ((h & 0x80) && rm == 14)))
				return "bx pc or blx lr";
		}
		return 0;
	}
	if ((h & 0xfe40) == 0xe840 && ((h & 0x0180) == 0 || (h & 0x0180) == 0x0080 || (h & 15) == 15))
		return "an exclusive load/store, a table branch or a PC-relative ldrd";
	if ((h & 0xfe40) == 0xe800 && (h & 15) == 15)
		return "a PC-relative ldm";
	if ((h & 0xee00) == 0xec00 && (h & 15) == 15)
		return "a PC-relative coprocessor or FPU load (vldr)";
	if ((h & 0xfe00) == 0xf800 && (h & 15) == 15 && ((h & 0xff7f) != 0xf85f || (h2 >> 12) >= 13))
		return "a PC-relative load other than ldr.w r0-r12";
	if ((h & 0xf800) == 0xf000 && (h2 & 0xd000) == 0xc000)
		return "blx to ARM state";
	return 0;
}

int t32_site_check(const uint8_t *fn, size_t n, uint64_t fn_start, uint64_t site, int *disp, const char **why)
{
	uint64_t it_at;
	int since_excl = -1, computed = 0, l1 = 0, l2 = 0, target2 = 0;
	if (site < fn_start || site - fn_start >= n) {
		*why = "outside its function";
		return 1;
	}
	if (rarch_arm_it_start(fn, n, fn_start, site, &it_at) != 0) {
		*why = "in an IT block, or not on an instruction boundary decoding its function";
		return 1;
	}
	/* Every instruction of the function: a load-exclusive before the site,
	 * the branch targets, computed jumps. */
	for (uint64_t pc = fn_start; pc < fn_start + n;) {
		size_t off = (size_t)(pc - fn_start);
		int len = rarch_arm_insn_len(fn + off, n - off);
		if (len < 0)
			break;
		unsigned h = h16(fn + off), h2 = len == 4 ? h16(fn + off + 2) : 0;
		uint64_t t;
		if (pc < site && load_exclusive(h, len))
			since_excl = 0;
		else if (pc < site && since_excl >= 0)
			since_excl++;
		if (pc == site)
			l1 = len;
		if (l1 == 2 && pc == site + 2)
			l2 = len;
		target2 |= branch_target(h, h2, len, pc, &t) && t == site + 2;
		computed |= computed_jump(h, h2, len);
		pc += (uint64_t)len;
	}
	const char *w = l1 ? t32_reloc_refused(fn + (site - fn_start), (size_t)l1) : NULL;
	if (!l1)
		w = "not on an instruction boundary decoding its function";
	else if (since_excl >= 0 && since_excl < EXCL_BACK)
		w = "after a load-exclusive (ldrex): the counter's own would clear its monitor";
	else if (l1 == 2 && !l2)
		w = "a 16-bit instruction at the end of its function";
	else if (l1 == 2 && computed)
		w = "a 16-bit instruction in a function with computed jumps (the next one would move too)";
	else if (l1 == 2 && target2)
		w = "a 16-bit instruction whose next one is a branch target";
	else if (l1 == 2 && (h16(fn + (site - fn_start)) & 0xff87) == 0x4780)
		w = "a 16-bit call (blx rm): the return would land on the next instruction, which moves too";
	else if (l1 == 2 && rarch_arm_it_start(fn, n, fn_start, site + 2, &it_at) != 0)
		w = "the next instruction is in an IT block";
	else if (l1 == 2)
		w = t32_reloc_refused(fn + (site + 2 - fn_start), (size_t)l2);
	if (w) {
		*why = w;
		return 1;
	}
	*disp = l1 + l2;
	return 0;
}

/* --- emitting --------------------------------------------------------------- */

static void e32(struct em *e, unsigned h, unsigned h2)
{
	e16(e, h);
	e16(e, h2);
}

/* movw rd, #lo; movt rd, #hi */
static void mov32(struct em *e, unsigned rd, uint32_t v)
{
	for (int top = 0; top < 2; top++) {
		unsigned x = top ? v >> 16 : v & 0xffff;
		e32(e, (top ? 0xf2c0u : 0xf240u) | ((x >> 11) & 1) << 10 | (x >> 12), ((x >> 8) & 7) << 12 | rd << 8 | (x & 0xff));
	}
}

static int bw_enc(uint64_t from, uint64_t to, int link, unsigned *h, unsigned *h2)
{
	int64_t off = (int64_t)(to - (from + 4));
	if (off & 1 || off < -(1ll << 24) || off >= (1ll << 24))
		return -1;
	uint64_t u = (uint64_t)off;
	unsigned s = (unsigned)(u >> 24) & 1, i1 = (unsigned)(u >> 23) & 1, i2 = (unsigned)(u >> 22) & 1;
	unsigned j1 = !(i1 ^ s), j2 = !(i2 ^ s);
	*h = 0xf000 | s << 10 | (unsigned)((u >> 12) & 0x3ff);
	*h2 = (link ? 0xd000u : 0x9000u) | j1 << 13 | j2 << 11 | (unsigned)((u >> 1) & 0x7ff);
	return 0;
}

int t32_branch(uint8_t out[4], uint64_t from, uint64_t to)
{
	unsigned h, h2;
	if (bw_enc(from, to, 0, &h, &h2))
		return -1;
	out[0] = (uint8_t)h; out[1] = (uint8_t)(h >> 8); out[2] = (uint8_t)h2; out[3] = (uint8_t)(h2 >> 8);
	return 0;
}

static int bw(struct em *e, uint64_t to)
{
	unsigned h, h2;
	if (bw_enc(here(e), to, 0, &h, &h2))
		return -1;
	e32(e, h, h2);
	return 0;
}

/* One instruction at pc (len bytes at c) relocated: falls through to what
 * follows it.  0, -1 (a target out of reach). */
static int relocate(struct em *e, uint64_t pc, const uint8_t *c, int len)
{
	unsigned h = h16(c), h2 = len == 4 ? h16(c + 2) : 0;
	uint64_t t;
	uint32_t lit = (uint32_t)((pc + 4) & ~3ull);
	if (len == 2) {
		if ((h & 0xf800) == 0x4800) {                           /* ldr rt, [pc, #imm] */
			unsigned rt = (h >> 8) & 7;
			mov32(e, rt, lit + (h & 0xff) * 4);
			e16(e, 0x6800 | rt << 3 | rt);                      /* ldr rt, [rt] */
			return 0;
		}
		if ((h & 0xf800) == 0xa000) {                           /* adr rd, label */
			mov32(e, (h >> 8) & 7, lit + (h & 0xff) * 4);
			return 0;
		}
		if ((h & 0xff87) == 0x4780) {                           /* blx rm: lr = the next instruction */
			mov32(e, 14, (uint32_t)(pc + 2) | 1);
			e16(e, 0x4700 | (h & 0x78));                        /* bx rm */
			return 0;
		}
		if (branch_target(h, 0, 2, pc, &t)) {
			if ((h & 0xf000) == 0xd000)                         /* b<c>: b<!c> over the b.w */
				e16(e, ((h & 0xff00) ^ 0x0100) | 1);
			else if ((h & 0xf500) == 0xb100)                    /* cbz / cbnz: the other one over the b.w */
				e16(e, ((h & 0xfd07) ^ 0x0800) | 1 << 3);
			return bw(e, t);
		}
		e16(e, h);
		return 0;
	}
	if ((h & 0xff7f) == 0xf85f) {                               /* ldr.w rt, [pc, #±imm12] */
		unsigned rt = h2 >> 12;
		uint32_t a = h & 0x80 ? lit + (h2 & 0xfff) : lit - (h2 & 0xfff);
		mov32(e, rt, a);
		e32(e, 0xf8d0 | rt, rt << 12);                          /* ldr.w rt, [rt] */
		return 0;
	}
	if ((h & 0xfbff) == 0xf20f || (h & 0xfbff) == 0xf2af) {     /* adr.w: addw/subw rd, pc, #imm12 */
		uint32_t imm = ((h >> 10) & 1) << 11 | ((h2 >> 12) & 7) << 8 | (h2 & 0xff);
		mov32(e, (h2 >> 8) & 15, (h & 0x00a0) == 0x00a0 ? lit - imm : lit + imm);
		return 0;
	}
	if (branch_target(h, h2, 4, pc, &t)) {
		if ((h2 & 0x5000) == 0)                                 /* b<c>.w: b<!c> over the b.w */
			e16(e, 0xd000 | (((h >> 6) & 15) ^ 1) << 8 | 1);
		else if (h2 & 0x4000)                                   /* bl: lr = the next instruction */
			mov32(e, 14, (uint32_t)(pc + 4) | 1);
		return bw(e, t);
	}
	e32(e, h, h2);
	return 0;
}

/* The displaced instructions code[0..disp) of site relocated, then `b.w`
 * back to what follows them: the end of a trampoline.  Its length, or -1
 * with *why. */
static int displaced(struct em *e, uint64_t site, const uint8_t *code, int disp, const char **why)
{
	for (int off = 0; off < disp;) {
		int len = rarch_arm_insn_len(code + off, (size_t)(disp - off));
		if (len < 0 || relocate(e, site + (uint64_t)off, code + off, len)) {
			*why = len < 0 ? "an instruction cut short" : "a branch target out of the trampoline's reach";
			return -1;
		}
		off += len;
	}
	if (bw(e, site + (uint64_t)disp)) {
		*why = "the site is out of the trampoline's reach (b.w: ±16 MiB)";
		return -1;
	}
	if (e->k > e->max) {
		*why = "no room for the trampoline";
		return -1;
	}
	return (int)e->k;
}

int t32_tramp(uint8_t *out, size_t max, uint64_t at, uint64_t site, const uint8_t *code, int disp,
              uint64_t counter, const char **why)
{
	struct em e = { out, max, 0, at };
	if (at & 1 || counter & 3 || counter >> 32) {
		*why = "a misaligned trampoline or counter";
		return -1;
	}
	e16(&e, 0xb407);                    /* push {r0, r1, r2} */
	mov32(&e, 0, (uint32_t)counter);    /* r0 = &counter */
	e32(&e, 0xe850, 0x1f00);            /* 1: ldrex r1, [r0] */
	e32(&e, 0xf101, 0x0101);            /*    add.w r1, r1, #1 */
	e32(&e, 0xe840, 0x1200);            /*    strex r2, r1, [r0] */
	e16(&e, 0xb102);                    /*    cbz r2, 2f */
	e16(&e, 0xe7f7);                    /*    b 1b */
	e16(&e, 0xb919);                    /* 2: cbnz r1, 3f (no carry) */
	e16(&e, 0x6841);                    /*    ldr r1, [r0, #4] */
	e32(&e, 0xf101, 0x0101);            /*    add.w r1, r1, #1 */
	e16(&e, 0x6041);                    /*    str r1, [r0, #4] */
	e16(&e, 0xbc07);                    /* 3: pop {r0, r1, r2} */
	return displaced(&e, site, code, disp, why);
}

/* --- timing calls in the target (record --target) ---------------------------- */

/* A 16-bit b<cond> (cond < 14) or b (cond 14) at out offset `from` to
 * offset `to` of the same trampoline, both emitted. */
static void patch_b16(struct em *e, size_t from, size_t to, unsigned cond)
{
	int off = ((int)to - (int)from - 4) / 2;
	unsigned h = cond == 14 ? 0xe000u | ((unsigned)off & 0x7ff) : 0xd000u | cond << 8 | ((unsigned)off & 0xff);
	if (from + 2 <= e->max) {
		e->o[from] = (uint8_t)h;
		e->o[from + 1] = (uint8_t)(h >> 8);
	}
}

enum { C_HS = 2, C_LO = 3, C_LS = 9, C_AL = 14 };

/* The registers of a trampoline that times a call saved, the flags and
 * PRIMASK with them (r4 = APSR | PRIMASK), interrupts off. */
static void rec_save(struct em *e)
{
	e32(e, 0xe92d, 0x101f);             /* push.w {r0-r4, r12} */
	e32(e, 0xf3ef, 0x8400);             /* mrs r4, APSR */
	e32(e, 0xf3ef, 0x8c10);             /* mrs r12, PRIMASK */
	e32(e, 0xea44, 0x040c);             /* orr.w r4, r4, r12 */
	e16(e, 0xb672);                     /* cpsid i */
}

static void rec_restore(struct em *e)
{
	e32(e, 0xf384, 0x8800);             /* msr APSR_nzcvq, r4 */
	e32(e, 0xf384, 0x8810);             /* msr PRIMASK, r4 */
	e32(e, 0xe8bd, 0x101f);             /* pop.w {r0-r4, r12} */
}

static int bl_to(struct em *e, uint64_t to)
{
	unsigned h, h2;
	if (bw_enc(here(e), to, 1, &h, &h2))
		return -1;
	e32(e, h, h2);
	return 0;
}

int t32_rec_entry(uint8_t *out, size_t max, uint64_t at, uint64_t site, const uint8_t *code, int disp, unsigned id,
                  const struct rec_addrs *a, const char **why)
{
	struct em e = { out, max, 0, at };
	if (at & 1 || a->ctl & 3 || a->ctl >> 32 || a->clock >> 32 || a->exit >> 32 || id > 0xffff) {
		*why = "a misaligned trampoline or control block";
		return -1;
	}
	rec_save(&e);
	mov32(&e, 1, (uint32_t)a->ctl);     /* r1 = the control block */
	e32(&e, 0xf1be, 0x4f70);            /* cmp.w lr, #0xf0000000 */
	size_t exc = e.k;
	e16(&e, 0);                         /* bhs lost: an exception's entry (EXC_RETURN in lr) */
	e16(&e, 0x680a);                    /* ldr r2, [r1, #SSP] */
	e16(&e, 0x684b);                    /* ldr r3, [r1, #SEND] */
	e16(&e, 0x429a);                    /* cmp r2, r3 */
	size_t full = e.k;
	e16(&e, 0);                         /* bhs lost: the shadow stack is full */
	e32(&e, 0xf8c2, 0xe000);            /* str.w lr, [r2]: the return address */
	e32(&e, 0xf240 | ((id >> 11) & 1) << 10 | (id >> 12), ((id >> 8) & 7) << 12 | 3 << 8 | (id & 0xff)); /* movw r3, #id */
	e16(&e, 0x6053);                    /* str r3, [r2, #4] */
	e16(&e, 0x4668);                    /* mov r0, sp */
	e16(&e, 0x6090);                    /* str r0, [r2, #8] */
	e16(&e, 0x320c);                    /* adds r2, #12 */
	e16(&e, 0x600a);                    /* str r2, [r1, #SSP] */
	mov32(&e, 0, (uint32_t)a->clock);
	e16(&e, 0x6800);                    /* ldr r0, [r0]: the time */
	e16(&e, 0x005b);                    /* lsls r3, r3, #1: an entry */
	if (bl_to(&e, a->put))
		goto reach;
	mov32(&e, 14, (uint32_t)a->exit | 1); /* lr = the exit trampoline (Thumb) */
	size_t skip = e.k;
	e16(&e, 0);                         /* b out */
	size_t lost = e.k;
	e16(&e, 0x690b);                    /* lost: ldr r3, [r1, #LOST] */
	e16(&e, 0x3301);                    /*       adds r3, #1 */
	e16(&e, 0x610b);                    /*       str r3, [r1, #LOST] */
	patch_b16(&e, exc, lost, C_HS);
	patch_b16(&e, full, lost, C_HS);
	patch_b16(&e, skip, e.k, C_AL);
	rec_restore(&e);                    /* out: */
	return displaced(&e, site, code, disp, why);
reach:
	*why = "the ring writer is out of a bl's reach";
	return -1;
}

int t32_rec_exit(uint8_t *out, size_t max, uint64_t at, const struct rec_addrs *a)
{
	struct em e = { out, max, 0, at };
	rec_save(&e);
	mov32(&e, 0, (uint32_t)a->clock);
	e16(&e, 0x6800);                    /* ldr r0, [r0]: the time, first */
	mov32(&e, 1, (uint32_t)a->ctl);
	e16(&e, 0x680a);                    /* ldr r2, [r1, #SSP] */
	e32(&e, 0xf8d1, 0xc014);            /* ldr.w r12, [r1, #SBASE] */
	size_t loop = e.k;
	e16(&e, 0x3a0c);                    /* 1: subs r2, #12 */
	e16(&e, 0x4562);                    /*    cmp r2, r12 */
	size_t bottom = e.k;
	e16(&e, 0);                         /*    bls 2f: the first frame (never below it) */
	e16(&e, 0x6893);                    /*    ldr r3, [r2, #8]: its stack pointer */
	e16(&e, 0x46ee);                    /*    mov lr, sp */
	e16(&e, 0x4573);                    /*    cmp r3, lr */
	size_t back = e.k;
	e16(&e, 0);                         /*    blo 1b: deeper than ours, a frame longjmp left */
	patch_b16(&e, back, loop, C_LO);
	patch_b16(&e, bottom, e.k, C_LS);
	e16(&e, 0x600a);                    /* 2: str r2, [r1, #SSP]: popped */
	e16(&e, 0x6853);                    /*    ldr r3, [r2, #4]: the id */
	e16(&e, 0x005b);                    /*    lsls r3, r3, #1 */
	e16(&e, 0x3301);                    /*    adds r3, #1: a return */
	if (bl_to(&e, a->put))
		return -1;
	e16(&e, 0x680a);                    /* ldr r2, [r1, #SSP] */
	e32(&e, 0xf8d2, 0xe000);            /* ldr.w lr, [r2]: the return address */
	rec_restore(&e);
	e16(&e, 0x4770);                    /* bx lr */
	return (int)e.k;
}

int t32_rec_put(uint8_t *out, size_t max, uint64_t at, uint64_t *full)
{
	struct em e = { out, max, 0, at };
	e16(&e, 0x688a);                    /* ldr r2, [r1, #WP] */
	e32(&e, 0xf8d1, 0xc00c);            /* ldr.w r12, [r1, #REND] */
	e16(&e, 0x4562);                    /* cmp r2, r12 */
	size_t b = e.k;
	e16(&e, 0);                         /* bhs full */
	e16(&e, 0x6013);                    /* str r3, [r2] */
	e16(&e, 0x6050);                    /* str r0, [r2, #4] */
	e16(&e, 0x3208);                    /* adds r2, #8 */
	e16(&e, 0x608a);                    /* str r2, [r1, #WP] */
	e16(&e, 0x4770);                    /* bx lr */
	patch_b16(&e, b, e.k, C_HS);
	*full = here(&e);
	e16(&e, 0xbe5d);                    /* full: bkpt #0x5d (sonde drains the ring, then resumes at put) */
	return (int)e.k;
}

/* --- .ARM.attributes ------------------------------------------------------------ */

static uint64_t uleb(const uint8_t *d, size_t n, size_t *i)
{
	uint64_t v = 0;
	for (int sh = 0; *i < n && sh < 64; sh += 7) {
		uint8_t b = d[(*i)++];
		v |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80))
			break;
	}
	return v;
}

static void ntbs(const uint8_t *d, size_t n, size_t *i)
{
	while (*i < n && d[*i])
		(*i)++;
	if (*i < n)
		(*i)++;
}

int t32_attrs_thumb2(const uint8_t *d, size_t n)
{
	if (n < 1 || d[0] != 'A')
		return 0;
	size_t i = 1;
	while (i + 4 <= n) {
		size_t len = (size_t)d[i] | (size_t)d[i + 1] << 8 | (size_t)d[i + 2] << 16 | (size_t)d[i + 3] << 24;
		if (len < 4 || len > n - i)
			return 0;
		size_t end = i + len, j = i + 4, name = j;
		ntbs(d, end, &j);
		int aeabi = j - name == 6 && !__builtin_memcmp(d + name, "aeabi", 6);
		while (aeabi && j + 5 <= end) {
			uint8_t tag = d[j];
			size_t sl = (size_t)d[j + 1] | (size_t)d[j + 2] << 8 | (size_t)d[j + 3] << 16 | (size_t)d[j + 4] << 24;
			if (sl < 5 || sl > end - j)
				return 0;
			size_t send = j + sl, k = j + 5;
			while (tag == 1 && k < send) {      /* the file's attributes */
				uint64_t t = uleb(d, send, &k);
				if (t == 6) {                   /* Tag_CPU_arch: v7 (10) with profile M, v7E-M (13), v8-M.main (17) */
					uint64_t a = uleb(d, send, &k);
					return a == 10 || a == 13 || a == 17;
				}
				if (t == 4 || t == 5 || t == 65 || t == 67 || (t > 32 && t & 1))
					ntbs(d, send, &k);
				else if (t == 32) {
					uleb(d, send, &k);
					ntbs(d, send, &k);
				} else
					uleb(d, send, &k);
			}
			j = send;
		}
		i = end;
	}
	return 0;
}

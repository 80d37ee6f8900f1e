/* test_remote_arch.c — unit tests of the remote architectures' branch layer
 * (src/arch/<arch>/remote.c, remote_arch.h): decoding of conditional
 * branches, jumps and calls, the delay slot of MIPS branches (a branch not
 * taken goes on at the branch + 8, branch-likely marked), the target
 * addresses, and taken / not taken on given registers.  The encodings are
 * the architecture manuals' (checked against the cross binutils' objdump).
 * And the trampolines of in-target counting on microcontrollers
 * (src/arch/arm/remote_tramp.c, src/arch/riscv/remote_tramp.c): their bytes
 * as arm-none-eabi-objdump / riscv64-unknown-elf-objdump decode them, and
 * which sites they refuse. */
#include "unit.h"

#include <string.h>

#include "arch/arm/remote_tramp.h"
#include "arch/remote_arch.h"
#include "arch/riscv/remote_tramp.h"

/* Registers for rarch.taken: r[regno], and a count of the reads. */
struct regs { uint64_t r[64]; int reads; };

static int reg(void *ctx, int regno, uint64_t *val)
{
	struct regs *g = ctx;
	if (regno < 0 || regno >= 64)
		return -1;
	g->reads++;
	*val = g->r[regno];
	return 0;
}

static void be32(uint8_t *b, uint32_t w)
{
	b[0] = (uint8_t)(w >> 24); b[1] = (uint8_t)(w >> 16); b[2] = (uint8_t)(w >> 8); b[3] = (uint8_t)w;
}

static void le32(uint8_t *b, uint32_t w)
{
	b[0] = (uint8_t)w; b[1] = (uint8_t)(w >> 8); b[2] = (uint8_t)(w >> 16); b[3] = (uint8_t)(w >> 24);
}

static void mips_branches(void)
{
	const struct rarch *a = &rarch_mips;
	struct rbranch b;
	uint8_t c[4];
	CHECK(a->has_delay_slots);
	/* 8d4: beq a0,v0,908 (0x108200 0c): as gcc-mips-linux-gnu compiles remote_counts.c */
	be32(c, 0x1082000c);
	CHECK(a->decode(c, 4, 0x8d4, 1, &b) == 0);
	CHECK(b.kind == RB_COND && b.len == 4 && b.delay == 4 && !b.likely);
	CHECK_EQ_U(b.target, 0x908);
	CHECK_EQ_U(b.next, 0x8dc);     /* past the delay slot */
	CHECK(b.ra == 4 && b.rb == 2);
	CHECK(strstr(b.text, "beq $a0,$v0,0x908") != NULL);
	struct regs g = { .r = { 0 } };
	g.r[4] = 6; g.r[2] = 6;
	CHECK(a->taken(&b, reg, &g) == 1);
	g.r[2] = 7;
	CHECK(a->taken(&b, reg, &g) == 0);
	/* The same word little-endian (mipsel). */
	le32(c, 0x1082000c);
	CHECK(a->decode(c, 4, 0x8d4, 0, &b) == 0 && b.kind == RB_COND && b.target == 0x908);
	/* bne v0,zero,-4 (backwards): 0x1440ffff */
	be32(c, 0x1440ffff);
	CHECK(a->decode(c, 4, 0x1000, 1, &b) == 0 && b.kind == RB_COND && b.target == 0x1000 && b.rb == 0);
	g.r[2] = 0;
	CHECK(a->taken(&b, reg, &g) == 0);
	g.r[2] = 0xffffffff;
	CHECK(a->taken(&b, reg, &g) == 1);
	/* blez / bgtz / bltz / bgez compare the 32-bit register as signed. */
	be32(c, 0x18400003);            /* blez v0,+16 */
	CHECK(a->decode(c, 4, 0x2000, 1, &b) == 0 && b.kind == RB_COND && b.target == 0x2010 && b.rb == -1);
	CHECK(a->taken(&b, reg, &g) == 1);   /* 0xffffffff = -1 <= 0 */
	be32(c, 0x1c400003);            /* bgtz v0 */
	CHECK(a->decode(c, 4, 0x2000, 1, &b) == 0 && a->taken(&b, reg, &g) == 0);
	be32(c, 0x04400003);            /* bltz v0 */
	CHECK(a->decode(c, 4, 0x2000, 1, &b) == 0 && b.kind == RB_COND && a->taken(&b, reg, &g) == 1);
	be32(c, 0x04410003);            /* bgez v0 */
	CHECK(a->decode(c, 4, 0x2000, 1, &b) == 0 && b.kind == RB_COND && a->taken(&b, reg, &g) == 0);
	/* beql: likely, the delay slot annulled when not taken. */
	be32(c, 0x50820002);
	CHECK(a->decode(c, 4, 0x3000, 1, &b) == 0 && b.kind == RB_COND && b.likely && b.next == 0x3008);
	/* $zero is read as 0 without asking the stub. */
	be32(c, 0x10800002);            /* beqz a0 */
	CHECK(a->decode(c, 4, 0x3000, 1, &b) == 0 && b.rb == 0);
	g.reads = 0;
	g.r[4] = 0;
	CHECK(a->taken(&b, reg, &g) == 1 && g.reads == 1);
	/* b (beq zero,zero), j, jr ra: the block ends, with a delay slot. */
	be32(c, 0x10000005);
	CHECK(a->decode(c, 4, 0x3000, 1, &b) == 0 && b.kind == RB_END && b.delay == 4);
	be32(c, 0x08000100);
	CHECK(a->decode(c, 4, 0x3000, 1, &b) == 0 && b.kind == RB_END && b.delay == 4);
	be32(c, 0x03e00008);            /* jr ra */
	CHECK(a->decode(c, 4, 0x3000, 1, &b) == 0 && b.kind == RB_END && b.delay == 4);
	/* jal, bal, jalr: calls (flow on), with a delay slot, linking. */
	be32(c, 0x0c000100);
	CHECK(a->decode(c, 4, 0x3000, 1, &b) == 0 && b.kind == RB_OTHER && b.delay == 4 && b.links);
	be32(c, 0x04110010);            /* bal */
	CHECK(a->decode(c, 4, 0x3000, 1, &b) == 0 && b.kind == RB_OTHER && b.delay == 4 && b.links);
	be32(c, 0x0320f809);            /* jalr t9 */
	CHECK(a->decode(c, 4, 0x3000, 1, &b) == 0 && b.kind == RB_OTHER && b.delay == 4 && b.links);
	/* An ordinary instruction: no delay slot (so what follows it is not in one). */
	be32(c, 0x02002025);            /* move a0,s0 (or) */
	CHECK(a->decode(c, 4, 0x3000, 1, &b) == 0 && b.kind == RB_OTHER && b.delay == 0 && b.next == 0x3004);
	CHECK(a->decode(c, 3, 0x3000, 1, &b) == -1);
}

static void aarch64_branches(void)
{
	const struct rarch *a = &rarch_aarch64;
	struct rbranch b;
	uint8_t c[4];
	struct regs g = { .r = { 0 } };
	CHECK(!a->has_delay_slots && a->flags == 33);
	/* b.eq +0x28 (0x54000140) */
	le32(c, 0x54000140);
	CHECK(a->decode(c, 4, 0x1000, 0, &b) == 0 && b.kind == RB_COND && b.target == 0x1028 && b.next == 0x1004);
	CHECK(strstr(b.text, "b.eq") != NULL);
	g.r[33] = 1u << 30;             /* Z */
	CHECK(a->taken(&b, reg, &g) == 1);
	g.r[33] = 0;
	CHECK(a->taken(&b, reg, &g) == 0);
	/* b.lt -8 (0x54ffffcb): N != V */
	le32(c, 0x54ffffcb);
	CHECK(a->decode(c, 4, 0x1000, 0, &b) == 0 && b.kind == RB_COND && b.target == 0xff8);
	g.r[33] = 1u << 31;             /* N, not V */
	CHECK(a->taken(&b, reg, &g) == 1);
	g.r[33] = 1u << 31 | 1u << 28;  /* N and V */
	CHECK(a->taken(&b, reg, &g) == 0);
	/* b.hi: C and not Z */
	le32(c, 0x54000048);
	CHECK(a->decode(c, 4, 0x1000, 0, &b) == 0);
	g.r[33] = 1u << 29;
	CHECK(a->taken(&b, reg, &g) == 1);
	g.r[33] = 1u << 29 | 1u << 30;
	CHECK(a->taken(&b, reg, &g) == 0);
	/* cbz w3, +8 (0x34000043): the low 32 bits */
	le32(c, 0x34000043);
	CHECK(a->decode(c, 4, 0x1000, 0, &b) == 0 && b.kind == RB_COND && b.target == 0x1008 && b.ra == 3 && !b.wide);
	g.r[3] = 0x100000000ull;
	CHECK(a->taken(&b, reg, &g) == 1);
	/* cbnz x3 (0xb5000043) sees all 64 */
	le32(c, 0xb5000043);
	CHECK(a->decode(c, 4, 0x1000, 0, &b) == 0 && b.wide && a->taken(&b, reg, &g) == 1);
	/* tbnz x1, #33, +12 (0xb7080061); tbz w1, #0 (0x36000061) */
	le32(c, 0xb7080061);
	CHECK(a->decode(c, 4, 0x1000, 0, &b) == 0 && b.kind == RB_COND && b.bit == 33 && b.target == 0x100c);
	g.r[1] = 1ull << 33;
	CHECK(a->taken(&b, reg, &g) == 1);
	le32(c, 0x36000061);
	CHECK(a->decode(c, 4, 0x1000, 0, &b) == 0 && b.bit == 0 && a->taken(&b, reg, &g) == 1);
	/* register 31 in cbz is the zero register, not sp */
	le32(c, 0xb400005f);            /* cbz xzr */
	CHECK(a->decode(c, 4, 0x1000, 0, &b) == 0 && b.ra == 31);
	g.r[31] = 0x7ff0;               /* sp: must not be read */
	CHECK(a->taken(&b, reg, &g) == 1);
	/* b, ret, br: the block ends; bl flows on; b.al is not a condition. */
	le32(c, 0x14000004);
	CHECK(a->decode(c, 4, 0x1000, 0, &b) == 0 && b.kind == RB_END);
	le32(c, 0xd65f03c0);
	CHECK(a->decode(c, 4, 0x1000, 0, &b) == 0 && b.kind == RB_END);
	le32(c, 0xd61f0200);            /* br x16 */
	CHECK(a->decode(c, 4, 0x1000, 0, &b) == 0 && b.kind == RB_END);
	le32(c, 0x94000004);
	CHECK(a->decode(c, 4, 0x1000, 0, &b) == 0 && b.kind == RB_OTHER);
	le32(c, 0x5400004e);
	CHECK(a->decode(c, 4, 0x1000, 0, &b) == 0 && b.kind == RB_END);
}

static void x86_64_branches(void)
{
	const struct rarch *a = &rarch_x86_64;
	struct rbranch b;
	struct regs g = { .r = { 0 } };
	/* je +0x10 (74 10) */
	CHECK(a->decode((const uint8_t[]){ 0x74, 0x10 }, 2, 0x1000, 0, &b) == 0 && b.kind == RB_COND);
	CHECK(b.len == 2 && b.target == 0x1012 && b.next == 0x1002 && !b.delay);
	g.r[17] = 0x40;                 /* ZF */
	CHECK(a->taken(&b, reg, &g) == 1);
	g.r[17] = 0;
	CHECK(a->taken(&b, reg, &g) == 0);
	/* jmp, ret: the block ends; call flows on */
	CHECK(a->decode((const uint8_t[]){ 0xeb, 0x00 }, 2, 0x1000, 0, &b) == 0 && b.kind == RB_END);
	CHECK(a->decode((const uint8_t[]){ 0xc3 }, 1, 0x1000, 0, &b) == 0 && b.kind == RB_END);
	CHECK(a->decode((const uint8_t[]){ 0xe8, 0, 0, 0, 0 }, 5, 0x1000, 0, &b) == 0 && b.kind == RB_OTHER);
}

/* Thumb / Thumb-2 (Cortex-M4), from arm-none-eabi-as + objdump at 0x100:
 *   100 d012 beq.n 128; 102 f040 8076 bne.w 1f2; 106 b17b cbz r3,128;
 *   108 b977 cbnz r7,128; 10a bfa8 it ge; 10c 4608 movge r0,r1; 10e bf0c ite eq;
 *   110 2001 moveq; 112 2002 movne; 114 4770 bx lr; 116 bd10 pop {r4,pc};
 *   118 e7f2 b.n 100; 11a f7ff fff1 bl 100; 11e f6ff afef blt.w 100;
 *   122 4a02 ldr r2,[pc,#8]; 124 3301 adds r3,#1; 126 be00 bkpt; 128 bf00 nop */
static const uint8_t thumb_code[] = {
	0x12, 0xd0, 0x40, 0xf0, 0x76, 0x80, 0x7b, 0xb1, 0x77, 0xb9, 0xa8, 0xbf, 0x08, 0x46, 0x0c, 0xbf,
	0x01, 0x20, 0x02, 0x20, 0x70, 0x47, 0x10, 0xbd, 0xf2, 0xe7, 0xff, 0xf7, 0xf1, 0xff, 0xff, 0xf6,
	0xef, 0xaf, 0x02, 0x4a, 0x01, 0x33, 0x00, 0xbe, 0x00, 0xbf,
};

static void arm_thumb(void)
{
	const struct rarch *a = &rarch_arm;
	struct rbranch b;
	const uint8_t *c = thumb_code;
#define AT(addr) (c + ((addr) - 0x100)), sizeof thumb_code - ((addr) - 0x100), (addr)
	/* Lengths: a 32-bit instruction starts with 0b11101/11110/11111. */
	CHECK(rarch_arm_insn_len(c, 2) == 2 && rarch_arm_insn_len(c + 2, 4) == 4 && rarch_arm_insn_len(c + 2, 2) == -1);
	CHECK(a->bp_kind(c, 4, 0) == 2 && a->bp_kind(c + 2, 4, 0) == 3 && a->bp_kind(c + 26, 4, 0) == 3);
	CHECK(a->bp_le[0] == 0x00 && a->bp_le[1] == 0xbe && a->bp_len == 2);  /* bkpt #0, as objdump shows at 0x126 */
	CHECK(a->decode(AT(0x100), 0, &b) == 0 && b.kind == RB_COND && b.len == 2 && b.target == 0x128 && b.next == 0x102);
	CHECK(strstr(b.text, "beq 0x128") != NULL);
	struct regs g = { .r = { 0 } };
	g.r[25] = 1u << 30;                                 /* xpsr Z */
	CHECK(a->taken(&b, reg, &g) == 1);
	g.r[25] = 0;
	CHECK(a->taken(&b, reg, &g) == 0);
	CHECK(a->decode(AT(0x102), 0, &b) == 0 && b.kind == RB_COND && b.len == 4 && b.target == 0x1f2 && b.next == 0x106);
	CHECK(a->taken(&b, reg, &g) == 1);                  /* bne, Z clear */
	CHECK(a->decode(AT(0x106), 0, &b) == 0 && b.kind == RB_COND && b.ra == 3 && b.target == 0x128);
	g.r[3] = 0x100000000ull;                            /* only the low 32 bits count */
	CHECK(a->taken(&b, reg, &g) == 1);
	CHECK(a->decode(AT(0x108), 0, &b) == 0 && b.kind == RB_COND && b.ra == 7 && b.target == 0x128);
	g.r[7] = 5;
	CHECK(a->taken(&b, reg, &g) == 1 && strstr(b.text, "cbnz r7, 0x128"));
	CHECK(a->decode(AT(0x10a), 0, &b) == 0 && b.kind == RB_OTHER);        /* it */
	CHECK(a->decode(AT(0x114), 0, &b) == 0 && b.kind == RB_END);          /* bx lr */
	CHECK(a->decode(AT(0x116), 0, &b) == 0 && b.kind == RB_END);          /* pop {r4, pc} */
	CHECK(a->decode(AT(0x118), 0, &b) == 0 && b.kind == RB_END);          /* b.n */
	CHECK(a->decode(AT(0x11a), 0, &b) == 0 && b.kind == RB_OTHER && b.links && b.len == 4);  /* bl */
	CHECK(a->decode(AT(0x11e), 0, &b) == 0 && b.kind == RB_COND && b.target == 0x100);      /* blt.w backwards */
	g.r[25] = 1u << 31;                                 /* N != V: lt */
	CHECK(a->taken(&b, reg, &g) == 1);
	g.r[25] = 1u << 31 | 1u << 28;
	CHECK(a->taken(&b, reg, &g) == 0);
	CHECK(a->decode(AT(0x122), 0, &b) == 0 && b.kind == RB_OTHER && b.len == 2);            /* ldr literal */
	/* IT blocks: movge (0x10c) is inside "it ge", moveq/movne inside "ite eq". */
	uint64_t it = 0;
	CHECK(rarch_arm_it_start(c, sizeof thumb_code, 0x100, 0x10c, &it) == 1 && it == 0x10a);
	CHECK(rarch_arm_it_start(c, sizeof thumb_code, 0x100, 0x110, &it) == 1 && it == 0x10e);
	CHECK(rarch_arm_it_start(c, sizeof thumb_code, 0x100, 0x112, &it) == 1 && it == 0x10e);
	CHECK(rarch_arm_it_start(c, sizeof thumb_code, 0x100, 0x10a, &it) == 0);
	CHECK(rarch_arm_it_start(c, sizeof thumb_code, 0x100, 0x114, &it) == 0);
	CHECK(rarch_arm_it_start(c, sizeof thumb_code, 0x100, 0x104, &it) == -1);               /* mid bne.w */
#undef AT
}

/* RV32IMAC, from riscv64-unknown-elf-as -march=rv32imac + objdump at 0x100:
 *   100 02b50363 beq a0,a1,126; 104 e10d bnez a0,126; 106 fe944de3 blt s0,s1,100;
 *   10a 0062fe63 bgeu t0,t1,126; 10e cf81 beqz a5,126; 110 f965 bnez a0,100;
 *   112 b7fd j 100; 114 8082 ret; 116 febff0ef jal 100; 11a 9282 jalr t0;
 *   11c 9002 c.ebreak; 11e 0505 c.addi; 120 00150513 addi */
static const uint8_t rv_code[] = {
	0x63, 0x03, 0xb5, 0x02, 0x0d, 0xe1, 0xe3, 0x4d, 0x94, 0xfe, 0x63, 0xfe, 0x62, 0x00, 0x81, 0xcf,
	0x65, 0xf9, 0xfd, 0xb7, 0x82, 0x80, 0xef, 0xf0, 0xbf, 0xfe, 0x82, 0x92, 0x02, 0x90, 0x05, 0x05,
	0x13, 0x05, 0x15, 0x00,
};

static void riscv32_branches(void)
{
	const struct rarch *a = &rarch_riscv32;
	struct rbranch b;
	const uint8_t *c = rv_code;
#define AT(addr) (c + ((addr) - 0x100)), sizeof rv_code - ((addr) - 0x100), (addr)
	CHECK(rarch_riscv_insn_len(c, 4) == 4 && rarch_riscv_insn_len(c + 4, 2) == 2 && rarch_riscv_insn_len(c, 2) == -1);
	CHECK(a->bp_kind(c, 4, 0) == 4 && a->bp_kind(c + 4, 4, 0) == 2);
	CHECK(memcmp(a->bp_le, c + 0x1c, 2) == 0 && a->bp_len == 2);       /* c.ebreak, as objdump shows at 0x11c */
	struct regs g = { .r = { 0 } };
	CHECK(a->decode(AT(0x100), 0, &b) == 0 && b.kind == RB_COND && b.len == 4 && b.target == 0x126 && b.next == 0x104);
	CHECK(b.ra == 10 && b.rb == 11 && strstr(b.text, "beq a0,a1,0x126"));
	g.r[10] = g.r[11] = 7;
	CHECK(a->taken(&b, reg, &g) == 1);
	CHECK(a->decode(AT(0x104), 0, &b) == 0 && b.kind == RB_COND && b.len == 2 && b.ra == 10 && b.target == 0x126);
	CHECK(a->taken(&b, reg, &g) == 1);                  /* bnez a0 */
	CHECK(a->decode(AT(0x106), 0, &b) == 0 && b.kind == RB_COND && b.ra == 8 && b.rb == 9 && b.target == 0x100);
	g.r[8] = 0xffffffff;                                /* -1 < 1 signed */
	g.r[9] = 1;
	CHECK(a->taken(&b, reg, &g) == 1);
	CHECK(a->decode(AT(0x10a), 0, &b) == 0 && b.kind == RB_COND && b.ra == 5 && b.rb == 6 && b.target == 0x126);
	g.r[5] = 0xffffffff;                                /* unsigned: 0xffffffff >= 1 */
	g.r[6] = 1;
	CHECK(a->taken(&b, reg, &g) == 1);
	CHECK(a->decode(AT(0x10e), 0, &b) == 0 && b.kind == RB_COND && b.ra == 15 && b.target == 0x126);
	CHECK(a->decode(AT(0x110), 0, &b) == 0 && b.kind == RB_COND && b.target == 0x100);
	CHECK(a->decode(AT(0x112), 0, &b) == 0 && b.kind == RB_END);          /* c.j */
	CHECK(a->decode(AT(0x114), 0, &b) == 0 && b.kind == RB_END);          /* ret */
	CHECK(a->decode(AT(0x116), 0, &b) == 0 && b.kind == RB_OTHER && b.links && b.len == 4);  /* jal ra */
	CHECK(a->decode(AT(0x11a), 0, &b) == 0 && b.kind == RB_OTHER && b.links && b.len == 2);  /* c.jalr */
	CHECK(a->decode(AT(0x11e), 0, &b) == 0 && b.kind == RB_OTHER && b.len == 2);
	CHECK(a->decode(AT(0x120), 0, &b) == 0 && b.kind == RB_OTHER && b.len == 4);
#undef AT
}

/* The RV32 emulator (rarch.emulate) on encodings from riscv64-unknown-elf-as
 * + objdump: a register file and 16 bytes of memory at 0x2000. */
struct rvm { uint64_t x[33]; uint8_t m[16]; };

static int rvm_reg(void *ctx, int r, uint64_t *v)
{
	*v = ((struct rvm *)ctx)->x[r];
	return 0;
}

static int rvm_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct rvm *m = ctx;
	if (addr < 0x2000 || addr + n > 0x2010)
		return -1;
	memcpy(buf, m->m + (addr - 0x2000), n);
	return 0;
}

/* Run the instruction (bytes b, n of them) at 0x100: 0 done, the register set
 * (not the pc) or store in *u. */
static int rv_run(struct rvm *m, const uint8_t *b, size_t n, struct remu *u)
{
	memset(u, 0, sizeof *u);
	u->reg = rvm_reg;
	u->read = rvm_read;
	u->ctx = m;
	int rc = rarch_riscv32.emulate(b, n, 0x100, 0, u);
	if (rc == 0 && (u->set[u->nset - 1].regno != 32 || u->set[u->nset - 1].val != 0x100 + (n == 2 || (b[0] & 3) != 3 ? 2u : 4u)))
		return -2;
	return rc;
}

static void riscv32_emulate(void)
{
	struct rvm m = { .x = { 0 } };
	struct remu u;
	m.x[2] = 0x1000;                                    /* sp */
	m.x[1] = 0x80000010;                                /* ra */
	m.x[3] = 0x27e0;                                    /* gp: gp - 2016 = 0x2000 */
	m.x[10] = 7;                                        /* a0 */
	for (int i = 0; i < 16; i++)
		m.m[i] = (uint8_t)(0xf0 + i);
#define RV(...) (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ })
#define SET(r, v) (u.nset == 2 && u.set[0].regno == (r) && u.set[0].val == (uint64_t)(v))
	CHECK(rv_run(&m, RV(0x41, 0x11), &u) == 0 && SET(2, 0xff0));                /* addi sp,sp,-16 */
	CHECK(rv_run(&m, RV(0x06, 0xc6), &u) == 0 && u.nset == 1 && u.store_addr == 0x100c && u.store_len == 4 &&
	      u.store[0] == 0x10 && u.store[3] == 0x80);                            /* sw ra,12(sp) */
	CHECK(rv_run(&m, RV(0x2a, 0x84), &u) == 0 && SET(8, 7));                    /* mv s0,a0 */
	CHECK(rv_run(&m, RV(0x13, 0x87, 0x01, 0x82), &u) == 0 && SET(14, 0x2000));  /* addi a4,gp,-2016 */
	m.x[14] = 0x2000;
	CHECK(rv_run(&m, RV(0x1c, 0x47), &u) == 0 && SET(15, 0xfbfaf9f8));          /* lw a5,8(a4) */
	m.x[15] = 0x11223344;
	CHECK(rv_run(&m, RV(0x23, 0x2e, 0xf7, 0xfe), &u) == 0 && u.store_addr == 0x1ffc && u.store[0] == 0x44);  /* sw a5,-4(a4) */
	CHECK(rv_run(&m, RV(0x37, 0x55, 0x34, 0x12), &u) == 0 && SET(10, 0x12345000));  /* lui */
	CHECK(rv_run(&m, RV(0x97, 0x15, 0x00, 0x00), &u) == 0 && SET(11, 0x1100));      /* auipc a1,0x1 */
	CHECK(rv_run(&m, RV(0x75, 0x56), &u) == 0 && SET(12, 0xfffffffd));          /* li a2,-3 */
	m.x[2] = 0x2000;
	CHECK(rv_run(&m, RV(0x92, 0x46), &u) == 0 && SET(13, 0xf7f6f5f4));          /* lw a3,4(sp) */
	m.x[8] = 10; m.x[9] = 3;
	CHECK(rv_run(&m, RV(0x05, 0x8c), &u) == 0 && SET(8, 7));                    /* sub s0,s0,s1 */
	m.x[10] = 0xfffffff0;
	CHECK(rv_run(&m, RV(0x09, 0x85), &u) == 0 && SET(10, 0xfffffffc));          /* srai a0,a0,2 */
	m.x[11] = 0x80000000; m.x[12] = 4;
	CHECK(rv_run(&m, RV(0xb3, 0xd5, 0xc5, 0x40), &u) == 0 && SET(11, 0xf8000000));  /* sra a1,a1,a2 */
	CHECK(rv_run(&m, RV(0x03, 0x46, 0x17, 0x00), &u) == 0 && SET(12, 0xf1));        /* lbu a2,1(a4) */
	CHECK(rv_run(&m, RV(0x83, 0x06, 0x17, 0x00), &u) == 0 && SET(13, 0xfffffff1));  /* lb a3,1(a4) */
	CHECK(rv_run(&m, RV(0x33, 0x05, 0xb5, 0x02), &u) == 1);                     /* mul: stepped */
	CHECK(rv_run(&m, RV(0x05, 0x61), &u) == 0 && SET(2, 0x2020));               /* addi sp,sp,32 */
	CHECK(rv_run(&m, RV(0x28, 0x00), &u) == 0 && SET(10, 0x2008));              /* addi a0,sp,8 (c.addi4spn) */
	m.x[10] = 0x2007;
	CHECK(rv_run(&m, RV(0x71, 0x99), &u) == 0 && SET(10, 0x2004));              /* andi a0,a0,-4 */
	m.x[11] = 5;
	CHECK(rv_run(&m, RV(0x8e, 0x05), &u) == 0 && SET(11, 40));                  /* slli a1,a1,3 */
	CHECK(rv_run(&m, RV(0x82, 0x80), &u) == 1);                                 /* ret: stepped */
	m.x[14] = 0x2001;
	CHECK(rv_run(&m, RV(0x1c, 0x47), &u) == 1);                                 /* lw misaligned: stepped */
	m.x[14] = 0x3000;
	CHECK(rv_run(&m, RV(0x1c, 0x47), &u) == -1);                                /* unreadable */
#undef SET
#undef RV
}

/* The Thumb emulator (Cortex-M) on encodings from arm-none-eabi-as +
 * objdump (at the address given): registers r0..pc, xpsr 25; 16 bytes of
 * memory at 0x2000 (rvm_read's). */
static int thumb_run(struct rvm *m, uint16_t h, uint32_t at, struct remu *u)
{
	uint8_t b[2] = { (uint8_t)h, (uint8_t)(h >> 8) };
	memset(u, 0, sizeof *u);
	u->reg = rvm_reg;
	u->read = rvm_read;
	u->ctx = m;
	int rc = rarch_arm.emulate(b, 2, at, 0, u);
	if (rc == 0 && (u->set[u->nset - 1].regno != 15 || u->set[u->nset - 1].val != at + 2))
		return -2;
	return rc;
}

static void arm_thumb_emulate(void)
{
	struct rvm m = { .x = { 0 } };
	struct remu u;
	uint64_t *r = m.x;
	r[0] = 0x11; r[4] = 0x44; r[13] = 0x2010; r[14] = 0x0000019b;
	for (int i = 0; i < 16; i++)
		m.m[i] = (uint8_t)(0xf0 + i);
#define SET(k, v) (u.nset == 2 && u.set[0].regno == (k) && u.set[0].val == (uint64_t)(v))
	/* 120 push {r4, lr}: r4 at sp-8, lr at sp-4, sp -= 8 */
	CHECK(thumb_run(&m, 0xb510, 0x120, &u) == 0 && u.store_addr == 0x2008 && u.store_len == 8 && u.store[0] == 0x44 &&
	      u.store[4] == 0x9b && u.store[5] == 0x01 && SET(13, 0x2008));
	CHECK(thumb_run(&m, 0x4604, 0x122, &u) == 0 && SET(4, 0x11));              /* mov r4, r0 */
	/* 124 ldr r2, [pc, #8]: the word at Align(0x128, 4) + 8 = 0x130 (objdump's) */
	r[13] = 0x2000;
	CHECK(thumb_run(&m, 0x4a02, 0x1ff4, &u) == 0 && SET(2, 0xf3f2f1f0));      /* at 0x1ff4: Align(0x1ff8) + 8 = 0x2000 */
	CHECK(thumb_run(&m, 0x4a02, 0x1ff6, &u) == 0 && SET(2, 0xf3f2f1f0));      /* 0x1ffa aligned down: the same word */
	r[2] = 0x2000;
	CHECK(thumb_run(&m, 0x6893, 0x126, &u) == 0 && SET(3, 0xfbfaf9f8));       /* ldr r3, [r2, #8] */
	r[3] = 0xcafe;
	CHECK(thumb_run(&m, 0x6093, 0x128, &u) == 0 && u.store_addr == 0x2008 && u.store_len == 4 && u.store[0] == 0xfe);
	CHECK(thumb_run(&m, 0xb082, 0x12a, &u) == 0 && SET(13, 0x1ff8));          /* sub sp, #8 */
	CHECK(thumb_run(&m, 0xa801, 0x12c, &u) == 0 && SET(0, 0x2004));           /* add r0, sp, #4 */
	CHECK(thumb_run(&m, 0x78d1, 0x12e, &u) == 0 && SET(1, 0xf3));             /* ldrb r1, [r2, #3] */
	r[1] = 0x1234;
	CHECK(thumb_run(&m, 0x8051, 0x130, &u) == 0 && u.store_addr == 0x2002 && u.store_len == 2 && u.store[1] == 0x12);
	CHECK(thumb_run(&m, 0x9101, 0x132, &u) == 0 && u.store_addr == 0x2004);  /* str r1, [sp, #4] */
	CHECK(thumb_run(&m, 0xb5f0, 0x134, &u) == 1);                             /* push of 5 registers: stepped */
	CHECK(thumb_run(&m, 0x46f7, 0x136, &u) == 1);                             /* mov pc, lr: stepped */
	CHECK(thumb_run(&m, 0x2001, 0x110, &u) == 1);                             /* movs r0, #1 (flags): stepped */
	CHECK(thumb_run(&m, 0xbfa8, 0x10a, &u) == 1);                             /* it ge: stepped */
	r[25] = 0x01000000 | 0x0c00;                                               /* ITSTATE set: in an IT block */
	CHECK(thumb_run(&m, 0x4604, 0x122, &u) == 1);
	r[25] = 0x01000000;
	uint8_t w[4] = { 0x40, 0xf0, 0x76, 0x80 };                                 /* bne.w: 32-bit, stepped */
	CHECK(rarch_arm.emulate(w, 4, 0x102, 0, &u) == 1);
#undef SET
}


/* The counting part of every Thumb-2 trampoline (counter at 0x1000):
 *   push {r0,r1,r2}; movw r0,#0x1000; movt r0,#0; 1: ldrex r1,[r0]; add.w r1,r1,#1;
 *   strex r2,r1,[r0]; cbz r2,2f; b 1b; 2: cbnz r1,3f; ldr r1,[r0,#4]; add.w r1,r1,#1;
 *   str r1,[r0,#4]; 3: pop {r0,r1,r2} */
static const uint8_t T32_COUNT[38] = {
	0x07, 0xb4, 0x41, 0xf2, 0x00, 0x00, 0xc0, 0xf2, 0x00, 0x00, 0x50, 0xe8, 0x00, 0x1f, 0x01, 0xf1, 0x01, 0x01,
	0x40, 0xe8, 0x00, 0x12, 0x02, 0xb1, 0xf7, 0xe7, 0x19, 0xb9, 0x41, 0x68, 0x01, 0xf1, 0x01, 0x01, 0x41, 0x60,
	0x07, 0xbc,
};

static int t32(uint64_t at, uint64_t site, const uint8_t *code, int disp, const uint8_t *want, size_t n)
{
	uint8_t out[T32_TRAMP_MAX];
	const char *why = NULL;
	int m = t32_tramp(out, sizeof out, at, site, code, disp, 0x1000, &why);
	return m == (int)(sizeof T32_COUNT + n) && !memcmp(out, T32_COUNT, sizeof T32_COUNT) &&
	       !memcmp(out + sizeof T32_COUNT, want, n);
}

static void arm_tramp(void)
{
	/* ldr r3,[pc,#8] at 0x100 (the literal at 0x10c) and movs r0,#1: movw/movt r3,#0x10c; ldr r3,[r3];
	 * movs r0,#1; b.w 0x104 (at 0x300032: f500 b867) */
	static const uint8_t ldr[] = { 0x02, 0x4b, 0x01, 0x20 }, ldr_w[] = { 0x40, 0xf2, 0x0c, 0x13, 0xc0, 0xf2, 0x00,
		0x03, 0x1b, 0x68, 0x01, 0x20, 0x00, 0xf5, 0x67, 0xb8 };
	CHECK(t32(0x300000, 0x100, ldr, 4, ldr_w, sizeof ldr_w));
	/* bne.w 0x40e at 0x200 (f040 8105): beq.n over b.w 0x40e, b.w 0x204 */
	static const uint8_t bne[] = { 0x40, 0xf0, 0x05, 0x81 }, bne_w[] = { 0x01, 0xd0, 0x00, 0xf5, 0xd1, 0xb9, 0x00,
		0xf5, 0xca, 0xb8 };
	CHECK(t32(0x300040, 0x200, bne, 4, bne_w, sizeof bne_w));
	/* beq.n 0x218 at 0x200 and a nop: bne.n over b.w 0x218, nop, b.w 0x204 */
	static const uint8_t beq[] = { 0x0a, 0xd0, 0x00, 0xbf }, beq_w[] = { 0x01, 0xd1, 0x00, 0xf5, 0xb6, 0xb8, 0x00,
		0xbf, 0x00, 0xf5, 0xa9, 0xb8 };
	CHECK(t32(0x300080, 0x200, beq, 4, beq_w, sizeof beq_w));
	/* bl 0x200 at 0x200: movw/movt lr,#0x205 (the return, Thumb bit set), b.w 0x200, b.w 0x204 */
	static const uint8_t bl[] = { 0xff, 0xf7, 0xfe, 0xff }, bl_w[] = { 0x40, 0xf2, 0x05, 0x2e, 0xc0, 0xf2, 0x00,
		0x0e, 0x00, 0xf5, 0x87, 0xb8, 0x00, 0xf5, 0x87, 0xb8 };
	CHECK(t32(0x3000c0, 0x200, bl, 4, bl_w, sizeof bl_w));
	uint8_t b[4];
	CHECK(t32_branch(b, 0x300032, 0x104) == 0 && b[0] == 0x00 && b[1] == 0xf5 && b[2] == 0x67 && b[3] == 0xb8);
	CHECK(t32_branch(b, 0x0, 0x1000004) == -1);                               /* beyond ±16 MiB */

	/* Sites: a function of push {r4,lr}; cmp r0,r1; it gt; movgt r0,r1; movs r1,#0; ldrex r2,[r3];
	 * adds r2,#1; beq.n (to the adds); pop {r4,pc} */
	static const uint8_t fn[] = { 0x10, 0xb5, 0x88, 0x42, 0xc8, 0xbf, 0x08, 0x46, 0x00, 0x21, 0x53, 0xe8, 0x00, 0x2f,
		0x01, 0x32, 0xfd, 0xd0, 0x10, 0xbd };
	int disp = 0;
	const char *why = NULL;
	CHECK(t32_site_check(fn, sizeof fn, 0x100, 0x100, &disp, &why) == 0 && disp == 4);   /* push + cmp */
	CHECK(t32_site_check(fn, sizeof fn, 0x100, 0x104, &disp, &why) == 1 && strstr(why, "IT"));
	CHECK(t32_site_check(fn, sizeof fn, 0x100, 0x106, &disp, &why) == 1 && strstr(why, "IT block"));
	CHECK(t32_site_check(fn, sizeof fn, 0x100, 0x102, &disp, &why) == 1);                 /* cmp, then the it */
	CHECK(t32_site_check(fn, sizeof fn, 0x100, 0x10e, &disp, &why) == 1 && strstr(why, "load-exclusive"));
	CHECK(t32_site_check(fn, sizeof fn, 0x100, 0x101, &disp, &why) == 1);                 /* not a boundary */
	CHECK(t32_site_check(fn, 10, 0x100, 0x108, &disp, &why) == 1 && strstr(why, "end of its function"));
	static const uint8_t fn2[] = { 0x00, 0x21, 0x01, 0x31, 0xfd, 0xd1, 0x70, 0x47 };  /* movs; adds; bne.n (adds); bx lr */
	CHECK(t32_site_check(fn2, sizeof fn2, 0x200, 0x200, &disp, &why) == 1 && strstr(why, "branch target"));
	CHECK(t32_site_check(fn2, sizeof fn2, 0x200, 0x202, &disp, &why) == 0 && disp == 4);
	static const uint8_t tbb[] = { 0xdf, 0xe8, 0x00, 0xf0 }, vldr[] = { 0x9f, 0xed, 0x02, 0x0a }, sv[] = { 0xab, 0xbe };
	CHECK(t32_reloc_refused(tbb, 4) && t32_reloc_refused(vldr, 4) && t32_reloc_refused(sv, 2));
	CHECK(t32_reloc_refused(ldr, 2) == NULL && t32_reloc_refused(bne, 4) == NULL);

	/* .ARM.attributes as arm-none-eabi-gcc -mcpu=cortex-m3 writes them (readelf -x), and the same for v6-M. */
	uint8_t at[] = { 0x41, 0x2c, 0x00, 0x00, 0x00, 0x61, 0x65, 0x61, 0x62, 0x69, 0x00, 0x01, 0x22, 0x00, 0x00, 0x00,
		0x05, 0x37, 0x2d, 0x4d, 0x00, 0x06, 0x0a, 0x07, 0x4d, 0x09, 0x02, 0x12, 0x04, 0x14, 0x01, 0x15, 0x01, 0x17,
		0x03, 0x18, 0x01, 0x19, 0x01, 0x1a, 0x01, 0x1e, 0x01, 0x22, 0x01 };
	CHECK(t32_attrs_thumb2(at, sizeof at) == 1);
	at[22] = 11;                                                               /* Tag_CPU_arch v6-M */
	CHECK(t32_attrs_thumb2(at, sizeof at) == 0);
	CHECK(t32_attrs_thumb2(at, 20) == 0);                                     /* cut short */
}

/* record --target's Thumb-2 trampolines (control block 0x300000, clock 0x40028018, exit trampoline
 * 0x303000, ring writer 0x303060), as arm-none-eabi-objdump -D -b binary -M force-thumb reads them:
 * exit: push.w {r0-r4,ip}; mrs r4,APSR; mrs ip,PRIMASK; orr.w r4,r4,ip; cpsid i; movw/movt r0,#0x40028018;
 *   ldr r0,[r0]; movw/movt r1,#0x300000; ldr r2,[r1]; ldr.w ip,[r1,#20]; 1: subs r2,#12; cmp r2,ip;
 *   bls.n 2f; ldr r3,[r2,#8]; mov lr,sp; cmp r3,lr; bcc.n 1b; 2: str r2,[r1]; ldr r3,[r2,#4];
 *   lsls r3,r3,#1; adds r3,#1; bl 0x303060; ldr r2,[r1]; ldr.w lr,[r2]; msr APSR_nzcvq,r4;
 *   msr PRIMASK,r4; pop.w {r0-r4,ip}; bx lr
 * put: ldr r2,[r1,#8]; ldr.w ip,[r1,#12]; cmp r2,ip; bcs.n 0x303074; str r3,[r2]; str r0,[r2,#4];
 *   adds r2,#8; str r2,[r1,#8]; bx lr; bkpt 0x5d
 * entry of function 4 at 0xc8 (push {r4,lr}; mov r4,r0), at 0x303100: the same saves; movw/movt r1;
 *   cmp.w lr,#0xf0000000; bcs.n lost; ldr r2,[r1]; ldr r3,[r1,#4]; cmp r2,r3; bcs.n lost;
 *   str.w lr,[r2]; movw r3,#4; str r3,[r2,#4]; mov r0,sp; str r0,[r2,#8]; adds r2,#12; str r2,[r1];
 *   movw/movt r0 (the clock); ldr r0,[r0]; lsls r3,r3,#1; bl 0x303060; movw/movt lr,#0x303001;
 *   b.n out; lost: ldr r3,[r1,#16]; adds r3,#1; str r3,[r1,#16]; out: msr APSR_nzcvq,r4; msr PRIMASK,r4;
 *   pop.w {r0-r4,ip}; push {r4,lr}; mov r4,r0; b.w 0xcc */
static void arm_rec_tramp(void)
{
	static const uint8_t exit_w[] = {
	0x2d, 0xe9, 0x1f, 0x10, 0xef, 0xf3, 0x00, 0x84, 0xef, 0xf3, 0x10, 0x8c, 0x44, 0xea, 0x0c, 0x04, 0x72, 0xb6,
	0x48, 0xf2, 0x18, 0x00, 0xc4, 0xf2, 0x02, 0x00, 0x00, 0x68, 0x40, 0xf2, 0x00, 0x01, 0xc0, 0xf2, 0x30, 0x01,
	0x0a, 0x68, 0xd1, 0xf8, 0x14, 0xc0, 0x0c, 0x3a, 0x62, 0x45, 0x03, 0xd9, 0x93, 0x68, 0xee, 0x46, 0x73, 0x45,
	0xf8, 0xd3, 0x0a, 0x60, 0x53, 0x68, 0x5b, 0x00, 0x01, 0x33, 0x00, 0xf0, 0x0e, 0xf8, 0x0a, 0x68, 0xd2, 0xf8,
	0x00, 0xe0, 0x84, 0xf3, 0x00, 0x88, 0x84, 0xf3, 0x10, 0x88, 0xbd, 0xe8, 0x1f, 0x10, 0x70, 0x47 };
	static const uint8_t put_w[] = {
	0x8a, 0x68, 0xd1, 0xf8, 0x0c, 0xc0, 0x62, 0x45, 0x04, 0xd2, 0x13, 0x60, 0x50, 0x60, 0x08, 0x32, 0x8a, 0x60,
	0x70, 0x47, 0x5d, 0xbe };
	static const uint8_t entry_w[] = {
	0x2d, 0xe9, 0x1f, 0x10, 0xef, 0xf3, 0x00, 0x84, 0xef, 0xf3, 0x10, 0x8c, 0x44, 0xea, 0x0c, 0x04, 0x72, 0xb6,
	0x40, 0xf2, 0x00, 0x01, 0xc0, 0xf2, 0x30, 0x01, 0xbe, 0xf1, 0x70, 0x4f, 0x19, 0xd2, 0x0a, 0x68, 0x4b, 0x68,
	0x9a, 0x42, 0x15, 0xd2, 0xc2, 0xf8, 0x00, 0xe0, 0x40, 0xf2, 0x04, 0x03, 0x53, 0x60, 0x68, 0x46, 0x90, 0x60,
	0x0c, 0x32, 0x0a, 0x60, 0x48, 0xf2, 0x18, 0x00, 0xc4, 0xf2, 0x02, 0x00, 0x00, 0x68, 0x5b, 0x00, 0xff, 0xf7,
	0x8b, 0xff, 0x43, 0xf2, 0x01, 0x0e, 0xc0, 0xf2, 0x30, 0x0e, 0x02, 0xe0, 0x0b, 0x69, 0x01, 0x33, 0x0b, 0x61,
	0x84, 0xf3, 0x00, 0x88, 0x84, 0xf3, 0x10, 0x88, 0xbd, 0xe8, 0x1f, 0x10, 0x10, 0xb5, 0x04, 0x46, 0xfc, 0xf4,
	0xaf, 0xbf };
	struct rec_addrs a = { 0x300000, 0x40028018, 0x303000, 0x303060 };
	uint8_t out[T32_REC_ENTRY_MAX];
	uint64_t full = 0;
	const char *why = NULL;
	static const uint8_t code[] = { 0x10, 0xb5, 0x04, 0x46 };
	CHECK(t32_rec_exit(out, T32_REC_EXIT_MAX, 0x303000, &a) == (int)sizeof exit_w && !memcmp(out, exit_w, sizeof exit_w));
	CHECK(t32_rec_put(out, T32_REC_PUT_MAX, 0x303060, &full) == (int)sizeof put_w && !memcmp(out, put_w, sizeof put_w) &&
	      full == 0x303074);
	CHECK(t32_rec_entry(out, sizeof out, 0x303100, 0xc8, code, 4, 4, &a, &why) == (int)sizeof entry_w &&
	      !memcmp(out, entry_w, sizeof entry_w));
	CHECK(t32_rec_entry(out, sizeof out, 0x303100, 0xc8, code, 4, 0x10000, &a, &why) == -1);  /* an id past 16 bits */
	a.put = 0x2000000;
	CHECK(t32_rec_entry(out, sizeof out, 0x303100, 0xc8, code, 4, 4, &a, &why) == -1 && strstr(why, "reach"));
}

/* The counting part of every RV32 trampoline (counter at 0x80001000):
 *   addi sp,sp,-16; sw t0,0(sp); sw t1,4(sp); lui t0,0x80001; addi t0,t0,0; li t1,1;
 *   amoadd.w t1,t1,(t0); addi t1,t1,1; bnez t1,1f; addi t0,t0,4; li t1,1; amoadd.w zero,t1,(t0);
 *   1: lw t0,0(sp); lw t1,4(sp); addi sp,sp,16 */
static const uint8_t RV_COUNT[60] = {
	0x13, 0x01, 0x01, 0xff, 0x23, 0x20, 0x51, 0x00, 0x23, 0x22, 0x61, 0x00, 0xb7, 0x12, 0x00, 0x80, 0x93, 0x82,
	0x02, 0x00, 0x13, 0x03, 0x10, 0x00, 0x2f, 0xa3, 0x62, 0x00, 0x13, 0x03, 0x13, 0x00, 0x63, 0x18, 0x03, 0x00,
	0x93, 0x82, 0x42, 0x00, 0x13, 0x03, 0x10, 0x00, 0x2f, 0xa0, 0x62, 0x00, 0x83, 0x22, 0x01, 0x00, 0x03, 0x23,
	0x41, 0x00, 0x13, 0x01, 0x01, 0x01,
};

/* record --target's RV32 trampolines (block 0x80080000, the clock 0x0200bff8, exit 0x80083000, writer
 * 0x80083080), as riscv64-unknown-elf-objdump -D -b binary -m riscv:rv32 reads them:
 * exit: addi sp,sp,-32; sw t0..t6,0..24(sp); csrrci t6,mstatus,8; lui/addi t2 (the clock); lw t2,0(t2);
 *   lui/addi t0 (the block); lw t1,0(t0); lw t3,20(t0); 1: addi t1,t1,-12; bgeu t3,t1,2f; lw t4,8(t1);
 *   bltu t4,sp,1b; 2: sw t1,0(t0); lw t1,4(t1); slli t1,t1,1; ori t1,t1,1; jal t5,0x80083080;
 *   lw t1,0(t0); lw ra,0(t1); andi t6,t6,8; csrs mstatus,t6; lw t0..t6; addi sp,sp,32; ret
 * put: lw t3,8(t0); lw t4,12(t0); bgeu t3,t4,full; sw t1,0(t3); sw t2,4(t3); addi t3,t3,8; sw t3,8(t0);
 *   jr t5; full: ebreak
 * entry of function 4 at 0x80000100 (c.addi sp,-16; c.swsp ra,12), at 0x80083100: the saves; lui/addi t0;
 *   lw t1,0(t0); lw t2,4(t0); bgeu t1,t2,lost; sw ra,0(t1); li t2,4; sw t2,4(t1); sw sp,8(t1);
 *   addi t1,t1,12; sw t1,0(t0); slli t1,t2,1; lui/addi t2; lw t2,0(t2); jal t5,0x80083080;
 *   lui/addi ra,0x80083000; j out; lost: lw t1,16(t0); addi t1,t1,1; sw t1,16(t0); out: andi t6,t6,8;
 *   csrs mstatus,t6; lw t0..t6; addi sp,sp,32; c.addi sp,-16; c.swsp ra,12; j 0x80000104 */
static void riscv32_rec_tramp(void)
{
	static const uint8_t exit_w[] = {
	0x13, 0x01, 0x01, 0xfe, 0x23, 0x20, 0x51, 0x00, 0x23, 0x22, 0x61, 0x00, 0x23, 0x24, 0x71, 0x00, 0x23, 0x26,
	0xc1, 0x01, 0x23, 0x28, 0xd1, 0x01, 0x23, 0x2a, 0xe1, 0x01, 0x23, 0x2c, 0xf1, 0x01, 0xf3, 0x7f, 0x04, 0x30,
	0xb7, 0xc3, 0x00, 0x02, 0x93, 0x83, 0x83, 0xff, 0x83, 0xa3, 0x03, 0x00, 0xb7, 0x02, 0x08, 0x80, 0x93, 0x82,
	0x02, 0x00, 0x03, 0xa3, 0x02, 0x00, 0x03, 0xae, 0x42, 0x01, 0x13, 0x03, 0x43, 0xff, 0x63, 0x76, 0x6e, 0x00,
	0x83, 0x2e, 0x83, 0x00, 0xe3, 0xea, 0x2e, 0xfe, 0x23, 0xa0, 0x62, 0x00, 0x03, 0x23, 0x43, 0x00, 0x13, 0x13,
	0x13, 0x00, 0x13, 0x63, 0x13, 0x00, 0x6f, 0x0f, 0x00, 0x02, 0x03, 0xa3, 0x02, 0x00, 0x83, 0x20, 0x03, 0x00,
	0x93, 0xff, 0x8f, 0x00, 0x73, 0xa0, 0x0f, 0x30, 0x83, 0x22, 0x01, 0x00, 0x03, 0x23, 0x41, 0x00, 0x83, 0x23,
	0x81, 0x00, 0x03, 0x2e, 0xc1, 0x00, 0x83, 0x2e, 0x01, 0x01, 0x03, 0x2f, 0x41, 0x01, 0x83, 0x2f, 0x81, 0x01,
	0x13, 0x01, 0x01, 0x02, 0x67, 0x80, 0x00, 0x00 };
	static const uint8_t put_w[] = {
	0x03, 0xae, 0x82, 0x00, 0x83, 0xae, 0xc2, 0x00, 0x63, 0x7c, 0xde, 0x01, 0x23, 0x20, 0x6e, 0x00, 0x23, 0x22,
	0x7e, 0x00, 0x13, 0x0e, 0x8e, 0x00, 0x23, 0xa4, 0xc2, 0x01, 0x67, 0x00, 0x0f, 0x00, 0x73, 0x00, 0x10, 0x00 };
	static const uint8_t entry_w[] = {
	0x13, 0x01, 0x01, 0xfe, 0x23, 0x20, 0x51, 0x00, 0x23, 0x22, 0x61, 0x00, 0x23, 0x24, 0x71, 0x00, 0x23, 0x26,
	0xc1, 0x01, 0x23, 0x28, 0xd1, 0x01, 0x23, 0x2a, 0xe1, 0x01, 0x23, 0x2c, 0xf1, 0x01, 0xf3, 0x7f, 0x04, 0x30,
	0xb7, 0x02, 0x08, 0x80, 0x93, 0x82, 0x02, 0x00, 0x03, 0xa3, 0x02, 0x00, 0x83, 0xa3, 0x42, 0x00, 0x63, 0x7e,
	0x73, 0x02, 0x23, 0x20, 0x13, 0x00, 0x93, 0x03, 0x40, 0x00, 0x23, 0x22, 0x73, 0x00, 0x23, 0x24, 0x23, 0x00,
	0x13, 0x03, 0xc3, 0x00, 0x23, 0xa0, 0x62, 0x00, 0x13, 0x93, 0x13, 0x00, 0xb7, 0xc3, 0x00, 0x02, 0x93, 0x83,
	0x83, 0xff, 0x83, 0xa3, 0x03, 0x00, 0x6f, 0xff, 0x1f, 0xf2, 0xb7, 0x30, 0x08, 0x80, 0x93, 0x80, 0x00, 0x00,
	0x6f, 0x00, 0x00, 0x01, 0x03, 0xa3, 0x02, 0x01, 0x13, 0x03, 0x13, 0x00, 0x23, 0xa8, 0x62, 0x00, 0x93, 0xff,
	0x8f, 0x00, 0x73, 0xa0, 0x0f, 0x30, 0x83, 0x22, 0x01, 0x00, 0x03, 0x23, 0x41, 0x00, 0x83, 0x23, 0x81, 0x00,
	0x03, 0x2e, 0xc1, 0x00, 0x83, 0x2e, 0x01, 0x01, 0x03, 0x2f, 0x41, 0x01, 0x83, 0x2f, 0x81, 0x01, 0x13, 0x01,
	0x01, 0x02, 0x41, 0x11, 0x06, 0xc6, 0x6f, 0xc0, 0xd7, 0xf5 };
	struct rec_addrs a = { 0x80080000, 0x0200bff8, 0x80083000, 0x80083080 };
	uint8_t out[RV32_REC_ENTRY_MAX];
	uint64_t full = 0;
	const char *why = NULL;
	static const uint8_t code[] = { 0x41, 0x11, 0x06, 0xc6 };
	CHECK(rv32_rec_exit(out, RV32_REC_EXIT_MAX, 0x80083000, &a) == (int)sizeof exit_w &&
	      !memcmp(out, exit_w, sizeof exit_w));
	CHECK(rv32_rec_put(out, RV32_REC_PUT_MAX, 0x80083080, &full) == (int)sizeof put_w &&
	      !memcmp(out, put_w, sizeof put_w) && full == 0x800830a0);
	CHECK(rv32_rec_entry(out, sizeof out, 0x80083100, 0x80000100, code, 4, 4, &a, &why) == (int)sizeof entry_w &&
	      !memcmp(out, entry_w, sizeof entry_w));
	CHECK(rv32_rec_entry(out, sizeof out, 0x80083100, 0x80000100, code, 4, 0x800, &a, &why) == -1);  /* id > 2047 */
	a.put = 0x80200000;
	CHECK(rv32_rec_entry(out, sizeof out, 0x80083100, 0x80000100, code, 4, 4, &a, &why) == -1 && strstr(why, "reach"));
}

static int rv(const uint8_t *code, int disp, const uint8_t *want, size_t n)
{
	uint8_t out[RV32_TRAMP_MAX];
	const char *why = NULL;
	int m = rv32_tramp(out, sizeof out, 0x80081000, 0x80000200, code, disp, 0x80001000, &why);
	return m == (int)(sizeof RV_COUNT + n) && !memcmp(out, RV_COUNT, sizeof RV_COUNT) &&
	       !memcmp(out + sizeof RV_COUNT, want, n);
}

static void riscv32_tramp(void)
{
	/* auipc a0,0x0 at 0x80000200: lui a0,0x80000; addi a0,a0,512; j 0x80000204 */
	static const uint8_t auipc[] = { 0x17, 0x05, 0x00, 0x00 }, auipc_w[] = { 0x37, 0x05, 0x00, 0x80, 0x13, 0x05,
		0x05, 0x20, 0x6f, 0xf0, 0x07, 0x9c };
	CHECK(rv(auipc, 4, auipc_w, sizeof auipc_w));
	/* c.jal 0x800001da, addi s0,s0,1 (c.addi): lui ra,0x80000; addi ra,ra,514; j 0x800001da; c.addi; j 0x80000204 */
	static const uint8_t jal[] = { 0xe9, 0x3f, 0x05, 0x04 }, jal_w[] = { 0xb7, 0x00, 0x00, 0x80, 0x93, 0x80, 0x20,
		0x20, 0x6f, 0xf0, 0x67, 0x99, 0x05, 0x04, 0x6f, 0xf0, 0xa7, 0x9b };
	CHECK(rv(jal, 4, jal_w, sizeof jal_w));
	/* beq s0,s1,0x80000218: bne s0,s1,+8; j 0x80000218; j 0x80000204 */
	static const uint8_t beq[] = { 0x63, 0x0c, 0x94, 0x00 }, beq_w[] = { 0x63, 0x14, 0x94, 0x00, 0x6f, 0xf0, 0x87,
		0x9d, 0x6f, 0xf0, 0x07, 0x9c };
	CHECK(rv(beq, 4, beq_w, sizeof beq_w));
	uint8_t b[4];
	CHECK(rv32_branch(b, 0x80081044, 0x80000204) == 0 && b[0] == 0x6f && b[1] == 0xf0 && b[2] == 0x07 && b[3] == 0x9c);
	CHECK(rv32_branch(b, 0x80000000, 0x80100000) == -1);                      /* beyond ±1 MiB */

	/* Sites: mv a5,a0; bge a1,a0,+10 (to the sw); mv a0,a1; jal third (c.jal); li a5,1 (c.li); sw a5,0(a4);
	 * lr.w a3,(a0); addi a3,a3,1; ret */
	static const uint8_t fn[] = { 0xaa, 0x87, 0x63, 0xd5, 0xa5, 0x00, 0x2e, 0x85, 0xe9, 0x3f, 0x85, 0x47, 0x1c, 0xc3,
		0xaf, 0x26, 0x05, 0x10, 0x85, 0x06, 0x82, 0x80 };
	int disp = 0;
	const char *why = NULL;
	CHECK(rv32_site_check(fn, sizeof fn, 0x100, 0x100, &disp, &why) == 0 && disp == 6);  /* c.mv + bge */
	CHECK(rv32_site_check(fn, sizeof fn, 0x100, 0x108, &disp, &why) == 1 && strstr(why, "call"));
	CHECK(rv32_site_check(fn, sizeof fn, 0x100, 0x10a, &disp, &why) == 1 && strstr(why, "branch target"));
	CHECK(rv32_site_check(fn, sizeof fn, 0x100, 0x112, &disp, &why) == 1 && strstr(why, "lr.w"));
	CHECK(rv32_site_check(fn, sizeof fn, 0x100, 0x103, &disp, &why) == 1);
	/* The semihosting sequence: slli x0,x0,0x1f; ebreak; srai x0,x0,7 */
	static const uint8_t sh[] = { 0x13, 0x10, 0xf0, 0x01, 0x73, 0x00, 0x10, 0x00, 0x13, 0x50, 0x70, 0x40 };
	CHECK(rv32_semihost_at(sh, sizeof sh, 4) && !rv32_semihost_at(sh, sizeof sh, 0) && !rv32_semihost_at(sh, 8, 4));
	CHECK(rv32_site_check(sh, sizeof sh, 0, 0, &disp, &why) == 1 && rv32_site_check(sh, sizeof sh, 0, 4, &disp, &why) == 1);
}

int main(void)
{
	RUN(mips_branches);
	RUN(aarch64_branches);
	RUN(x86_64_branches);
	RUN(arm_thumb);
	RUN(riscv32_branches);
	RUN(riscv32_emulate);
	RUN(arm_thumb_emulate);
	RUN(arm_tramp);
	RUN(arm_rec_tramp);
	RUN(riscv32_tramp);
	RUN(riscv32_rec_tramp);
	UNIT_END();
}

/* test_remote_arch.c — unit tests of the remote architectures' branch layer
 * (src/arch/<arch>/remote.c, remote_arch.h): decoding of conditional
 * branches, jumps and calls, the delay slot of MIPS branches (a branch not
 * taken goes on at the branch + 8, branch-likely marked), the target
 * addresses, and taken / not taken on given registers.  The encodings are
 * the architecture manuals' (checked against the cross binutils' objdump). */
#include "unit.h"

#include <string.h>

#include "arch/remote_arch.h"

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

int main(void)
{
	RUN(mips_branches);
	RUN(aarch64_branches);
	RUN(x86_64_branches);
	UNIT_END();
}

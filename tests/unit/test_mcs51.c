/* test_mcs51.c — unit tests of src/arch/mcs51/remote.c (the 8051's
 * instruction lengths and conditional jumps).  tests/progs/mcs51_fw.c is
 * built with Debian's sdcc in the small and the large model; the
 * assembler's listing (.rst) gives every instruction's address, bytes and
 * mnemonic: each length must be the decoder's, each conditional jump of
 * the listing (jc jnc jz jnz jb jnb jbc cjne djnz) must decode as one, with
 * the target its relative offset gives, and each sjmp/ljmp/ajmp/ret/reti
 * as the end of straight-line code.  The conditions are then decided on
 * register states whose outcome follows from the instruction set's
 * definition. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/remote_arch.h"
#include "unit/unit.h"

static char dir[64];

static void check_listing(const char *model)
{
	char p[160], line[512];
	snprintf(p, sizeof p, "%s/%s/mcs51_fw.rst", dir, model);
	FILE *f = fopen(p, "r");
	CHECK(f);
	int insns = 0, conds = 0, ends = 0, seen[256] = { 0 };
	while (fgets(line, sizeof line, f)) {
		/* "      00006D AE 0D            [24]  491 	mov	r6,_ticks" */
		unsigned long addr;
		if (strlen(line) < 40 || line[6] == ' ' || sscanf(line, " %6lx", &addr) != 1 || !strchr(line, '['))
			continue;
		uint8_t code[8];
		int n = 0;
		const char *q = line + 12;
		unsigned b;
		while (n < 8 && q[0] == ' ' && sscanf(q, " %2x", &b) == 1 && q[1] != ' ' && q[3] == ' ') {
			code[n++] = (uint8_t)b;
			q += 3;
		}
		const char *tab = strchr(line, '\t');
		if (!n || !tab)
			continue;
		char mn[16] = "";
		sscanf(tab + 1, "%15s", mn);
		insns++;
		seen[code[0]] = 1;
		if (rarch_mcs51_insn_len(code, (size_t)n) != n)
			printf("  %s: 0x%04lx %s: %d bytes listed, %d decoded\n", model, addr, mn, n,
			       rarch_mcs51_insn_len(code, (size_t)n));
		CHECK_EQ_U(rarch_mcs51_insn_len(code, (size_t)n), n);
		CHECK_EQ_U(rarch_mcs51_insn_len(code, (size_t)n - 1), (unsigned long long)-1);
		struct rbranch br;
		CHECK(rarch_mcs51.decode(code, (size_t)n, addr, 0, &br) == 0);
		int is_cond = !strcmp(mn, "jc") || !strcmp(mn, "jnc") || !strcmp(mn, "jz") || !strcmp(mn, "jnz") ||
		              !strcmp(mn, "jb") || !strcmp(mn, "jnb") || !strcmp(mn, "jbc") || !strcmp(mn, "cjne") ||
		              !strcmp(mn, "djnz");
		int is_end = !strcmp(mn, "sjmp") || !strcmp(mn, "ljmp") || !strcmp(mn, "ajmp") || !strcmp(mn, "ret") ||
		             !strcmp(mn, "reti") || !strcmp(mn, "jmp");
		CHECK_EQ_U(br.kind, is_cond ? RB_COND : is_end ? RB_END : RB_OTHER);
		if (is_cond) {
			conds++;
			/* the target: the next instruction plus the signed offset, the last byte */
			CHECK_EQ_U(br.target, (uint16_t)(addr + (unsigned long)n + (unsigned long)(int8_t)code[n - 1]));
			CHECK_EQ_U(br.next, addr + (unsigned long)n);
			CHECK(!strncmp(br.text, mn, strlen(mn)));
		}
		ends += is_end;
	}
	fclose(f);
	int kinds = 0;
	for (int i = 0; i < 256; i++)
		kinds += seen[i];
	printf("  %s: %d instructions (%d opcodes), %d conditional jumps, %d ends\n", model, insns, kinds, conds, ends);
	CHECK(insns > 200 && conds >= 5 && ends >= 5);
}

static void test_small_listing(void) { check_listing("small"); }
static void test_large_listing(void) { check_listing("large"); }

/* A machine state for taken: registers of bank 0, A, PSW, and memory. */
static uint8_t iram[256], sfr[128];
static int reg(void *ctx, int r, uint64_t *v)
{
	(void)ctx;
	uint8_t psw = sfr[0xd0 - 0x80];
	if (r >= MCS51_R0 && r < MCS51_R0 + 8)
		*v = iram[(psw & 0x18) + (r - MCS51_R0)];
	else if (r == MCS51_A)
		*v = sfr[0xe0 - 0x80];
	else if (r == MCS51_PSW)
		*v = psw;
	else if (r >= MCS51_DIRECT(0) && r < MCS51_DIRECT(0x100))
		*v = r - MCS51_DIRECT(0) < 0x80 ? iram[r - MCS51_DIRECT(0)] : sfr[r - MCS51_DIRECT(0) - 0x80];
	else if (r >= MCS51_BIT(0) && r < MCS51_BIT(0x100)) {
		int b = r - MCS51_BIT(0);
		*v = (b < 0x80 ? iram[0x20 + b / 8] : sfr[(b & 0xf8) - 0x80]) >> (b & 7) & 1;
	} else if (r >= MCS51_IND(0) && r < MCS51_IND(0x100))
		*v = iram[r - MCS51_IND(0)];
	else
		return -1;
	return 0;
}

static int taken(const uint8_t *code, size_t n)
{
	struct rbranch b;
	CHECK(rarch_mcs51.decode(code, n, 0x100, 0, &b) == 0 && b.kind == RB_COND);
	return rarch_mcs51.taken(&b, reg, NULL);
}

static void test_taken(void)
{
	memset(iram, 0, sizeof iram);
	memset(sfr, 0, sizeof sfr);
	const uint8_t jc[] = { 0x40, 0x05 }, jnc[] = { 0x50, 0x05 }, jz[] = { 0x60, 0xfe }, jnz[] = { 0x70, 0xfe };
	CHECK(taken(jc, 2) == 0 && taken(jnc, 2) == 1);
	sfr[0xd0 - 0x80] = 0x80;   /* CY */
	CHECK(taken(jc, 2) == 1 && taken(jnc, 2) == 0);
	CHECK(taken(jz, 2) == 1 && taken(jnz, 2) == 0);
	sfr[0xe0 - 0x80] = 7;      /* A */
	CHECK(taken(jz, 2) == 0 && taken(jnz, 2) == 1);
	/* jb / jnb / jbc on bit 0x0b (iram 0x21 bit 3) and on P1.2 (0x92) */
	const uint8_t jb[] = { 0x20, 0x0b, 0x03 }, jnb[] = { 0x30, 0x0b, 0x03 }, jbc[] = { 0x10, 0x92, 0x03 };
	CHECK(taken(jb, 3) == 0 && taken(jnb, 3) == 1 && taken(jbc, 3) == 0);
	iram[0x21] = 0x08;
	sfr[0x90 - 0x80] = 0x04;
	CHECK(taken(jb, 3) == 1 && taken(jnb, 3) == 0 && taken(jbc, 3) == 1);
	/* cjne a,#7 / a,direct / rn,#imm / @r1,#imm */
	const uint8_t cja[] = { 0xb4, 0x07, 0x10 }, cjd[] = { 0xb5, 0x30, 0x10 }, cjr[] = { 0xbb, 0x09, 0x10 },
	              cji[] = { 0xb7, 0x44, 0x10 };
	CHECK(taken(cja, 3) == 0);
	iram[0x30] = 7;
	CHECK(taken(cjd, 3) == 0);
	iram[0x30] = 8;
	CHECK(taken(cjd, 3) == 1);
	iram[3] = 9;               /* r3 of bank 0 */
	CHECK(taken(cjr, 3) == 0);
	sfr[0xd0 - 0x80] = 0x08;   /* bank 1: r3 is iram 0x0b */
	CHECK(taken(cjr, 3) == 1);
	iram[0x09] = 0x90;         /* bank 1's r1 points at idata 0x90 */
	iram[0x90] = 0x44;
	CHECK(taken(cji, 3) == 0);
	/* djnz: taken unless the register becomes 0 */
	const uint8_t djr[] = { 0xda, 0xfe }, djd[] = { 0xd5, 0x31, 0xfd };
	iram[0x0a] = 1;            /* bank 1's r2 */
	CHECK(taken(djr, 2) == 0);
	iram[0x0a] = 0;            /* 0 - 1 = 0xff */
	CHECK(taken(djr, 2) == 1);
	iram[0x31] = 2;
	CHECK(taken(djd, 3) == 1);
	/* the ends and calls */
	struct rbranch b;
	const uint8_t ajmp[] = { 0xe1, 0x23 }, lcall[] = { 0x12, 0x12, 0x34 };
	CHECK(rarch_mcs51.decode(ajmp, 2, 0x0802, 0, &b) == 0 && b.kind == RB_END && b.target == 0x0f23);
	CHECK(rarch_mcs51.decode(lcall, 3, 0, 0, &b) == 0 && b.kind == RB_OTHER && b.links);
	uint8_t enc[3];
	CHECK(rarch_mcs51_lcall(0x1234, enc) == 3 && !memcmp(enc, lcall, 3));
	CHECK(rarch_mcs51_ljmp(0xbeef, enc) == 3 && enc[0] == 0x02 && enc[1] == 0xbe && enc[2] == 0xef);
	CHECK(rarch_mcs51.decode(lcall, 2, 0, 0, &b) == -1);   /* cut short */
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/sonde-mcs51-XXXXXX");
	if (!mkdtemp(dir)) {
		printf("not ok - mkdtemp\n");
		return 1;
	}
	const char *root = getenv("ROOT") ? getenv("ROOT") : ".";
	const char *models[] = { "small", "large" };
	for (int m = 0; m < 2; m++) {
		char cmd[1024];
		snprintf(cmd, sizeof cmd, "mkdir -p %s/%s && sdcc -mmcs51 --model-%s -o %s/%s/ %s/tests/progs/mcs51_fw.c",
		         dir, models[m], models[m], dir, models[m], root);
		if (system(cmd) != 0) {
			printf("not ok - sdcc --model-%s (Debian package sdcc)\n", models[m]);
			return 1;
		}
	}
	RUN(test_small_listing);
	RUN(test_large_listing);
	RUN(test_taken);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd)) {
	}
	UNIT_END();
}

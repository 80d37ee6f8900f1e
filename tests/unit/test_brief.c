/* test_brief.c — the quick x86-64 decoder of linear sweeps
 * (src/arch/x86_64/brief.c) against capstone, on every instruction of real
 * binaries: this program, the C library, and Debian's lua5.4, zstd and
 * sqlite3 libraries where installed.  The executable sections are swept
 * linearly as the plan sweeps a function (capstone's length, one byte on
 * after what capstone cannot decode); wherever the quick decoder answers,
 * its length, kind, target and "nothing runs on after it" must be
 * capstone's.  It must also answer most of them itself, else the sweep
 * would be as slow as before: at least 95% of the instructions of each. */
#include "unit.h"

#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "arch/arch.h"

static const char *files[] = {
	"/proc/self/exe",
	"/usr/lib/x86_64-linux-gnu/libc.so.6",
	"/usr/bin/lua5.4",
	"/usr/lib/x86_64-linux-gnu/liblua5.4.so.0",
	"/usr/lib/x86_64-linux-gnu/libzstd.so.1",
	"/usr/lib/x86_64-linux-gnu/libsqlite3.so.0",
	"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
};

struct tally {
	size_t insns, quick, mismatch, bytes, gap;
};

/* Instructions capstone 4 does not know: it calls them invalid and steps
 * one byte on, into the middle of the instruction.  AVX-512's opmask
 * instructions (kmov, kortest, kand...: VEX 0F 41-4B, 90-93, 98-99, a
 * ModRM and no immediate, Intel SDM vol. 2), some EVEX ones (vpcmpneqb...),
 * rdpkru / wrpkru (0F 01 EE / EF): the C library's EVEX string functions
 * hold hundreds.  objdump decodes them as the quick decoder does; the
 * sweep here goes on after them by the quick decoder's length. */
static int capstone_gap(const uint8_t *p, size_t n)
{
	if (n >= 3 && p[0] == 0x0f && p[1] == 0x01 && (p[2] == 0xee || p[2] == 0xef))
		return 1;
	if (n >= 6 && p[0] == 0x62)
		return 1;
	size_t at;
	if (n >= 3 && p[0] == 0xc5)
		at = 2;
	else if (n >= 4 && p[0] == 0xc4 && (p[1] & 0x1f) == 1)
		at = 3;
	else
		return 0;
	uint8_t op = p[at];
	return (op >= 0x41 && op <= 0x4b) || (op >= 0x90 && op <= 0x93) || op == 0x98 || op == 0x99;
}

static void sweep_section(const uint8_t *code, size_t size, uint64_t addr, struct tally *t, const char *path)
{
	size_t off = 0;
	while (off < size) {
		size_t k = size - off < ARCH_MAX_INSN ? size - off : ARCH_MAX_INSN;
		struct arch_insn in;
		struct arch_brief want, got;
		int cs = arch_decode(code + off, k, addr + off, &in);
		int q = arch_brief_quick(code + off, k, addr + off, &got);
		if (cs == 0)
			arch_brief_of(&in, &want);
		int bad = q == 0 && (cs < 0 || got.len != want.len || got.kind != want.kind || got.target != want.target ||
		                     got.terminal != want.terminal);
		if (bad && cs < 0 && capstone_gap(code + off, k)) { /* on after it, as the CPU runs */
			t->gap++;
			off += (size_t)got.len;
			continue;
		}
		if (bad) {
			if (t->mismatch < 12) {
				printf("  %s +0x%" PRIx64 ":", path, addr + off);
				for (size_t b = 0; b < k && b < 12; b++)
					printf(" %02x", code[off + b]);
				if (cs < 0)
					printf("  capstone: invalid; quick: len %d kind %d\n", got.len, got.kind);
				else
					printf("  capstone '%s' len %d kind %d target %" PRIx64 " term %d; quick len %d kind %d "
					       "target %" PRIx64 " term %d\n",
					       in.text, want.len, want.kind, want.target, want.terminal, got.len, got.kind, got.target,
					       got.terminal);
			}
			t->mismatch++;
		}
		if (cs < 0) {
			off++;
			continue;
		}
		t->insns++;
		t->quick += q == 0;
		off += (size_t)in.len;
	}
	t->bytes += size;
}

static int sweep_file(const char *path, struct tally *t)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *s = NULL;
	int found = 0;
	while (e && (s = elf_nextscn(e, s))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		Elf_Data *d = elf_getdata(s, NULL);
		if (!d || !d->d_buf)
			continue;
		sweep_section(d->d_buf, d->d_size, sh.sh_addr, t, path);
		found = 1;
	}
	if (e)
		elf_end(e);
	close(fd);
	return found ? 0 : -1;
}

static void quick_equals_capstone(void)
{
	elf_version(EV_CURRENT);
	int swept = 0;
	size_t mismatches = 0;
	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		struct tally t = { 0 };
		if (sweep_file(files[i], &t) < 0) {
			printf("  %s: not here\n", files[i]);
			continue;
		}
		swept++;
		printf("  %s: %zu bytes, %zu instructions, %zu (%.2f%%) decoded quickly, %zu differ from capstone, "
		       "%zu instructions capstone 4 does not know\n",
		       files[i], t.bytes, t.insns, t.quick, t.insns ? 100.0 * (double)t.quick / (double)t.insns : 0.0,
		       t.mismatch, t.gap);
		CHECK(t.insns > 1000);
		CHECK(t.quick * 100 >= t.insns * 95);
		mismatches += t.mismatch;
	}
	CHECK(swept >= 2); /* this program and the C library at least */
	CHECK_EQ_U(mismatches, 0);
}

/* Encodings written out: the kinds and targets a sweep acts on. */
static void quick_known_encodings(void)
{
	static const struct {
		uint8_t b[15];
		int n, len, kind, terminal;
		uint64_t target; /* from 0x1000 */
	} cases[] = {
		{ { 0xeb, 0xfe }, 2, 2, AI_JMP, 1, 0x1000 },                               /* jmp . */
		{ { 0xe9, 0x00, 0x01, 0x00, 0x00 }, 5, 5, AI_JMP, 1, 0x1105 },             /* jmp +0x100 */
		{ { 0x0f, 0x84, 0xfa, 0xff, 0xff, 0xff }, 6, 6, AI_JCC, 0, 0x1000 },       /* je back to itself */
		{ { 0x75, 0x10 }, 2, 2, AI_JCC, 0, 0x1012 },                               /* jne */
		{ { 0xe8, 0x00, 0x00, 0x00, 0x00 }, 5, 5, AI_CALL, 1, 0x1005 },            /* call next */
		{ { 0xc3 }, 1, 1, AI_RET, 1, 0 },                                          /* ret */
		{ { 0xf3, 0x0f, 0x1e, 0xfa }, 4, 4, AI_NOP, 0, 0 },                        /* endbr64 */
		{ { 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0 }, 10, 10, AI_NOP, 0, 0 }, /* cs nopw 0(%rax,%rax) */
		{ { 0x41, 0xff, 0xe3 }, 3, 3, AI_JMP, 1, 0 },                              /* jmp *%r11 */
		{ { 0xff, 0x24, 0xc5, 0, 0, 0, 0 }, 7, 7, AI_JMP, 1, 0 },                  /* jmp *0(,%rax,8) */
		{ { 0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8 }, 10, 10, AI_OTHER, 0, 0 },        /* movabs */
		{ { 0xc5, 0xf8, 0x77 }, 3, 3, AI_OTHER, 0, 0 },                            /* vzeroupper */
		{ { 0xc4, 0xe3, 0x79, 0x0f, 0xc1, 0x08 }, 6, 6, AI_OTHER, 0, 0 },          /* vpalignr $8 */
		{ { 0x0f, 0x0b }, 2, 2, AI_OTHER, 1, 0 },                                  /* ud2 */
		{ { 0xcc }, 1, 1, AI_BAD, 1, 0 },                                          /* int3 */
		{ { 0x62, 0xf1, 0x7d, 0x48, 0x6f, 0xc1 }, 6, 6, AI_OTHER, 0, 0 },          /* vmovdqa32 %zmm1,%zmm0 */
		{ { 0x62, 0xf3, 0x7d, 0x48, 0x3f, 0xc1, 4 }, 7, 7, AI_OTHER, 0, 0 },       /* vpcmpb $4 */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct arch_brief b;
		printf("  case %zu\n", i);
		CHECK(arch_brief_quick(cases[i].b, (size_t)cases[i].n, 0x1000, &b) == 0);
		CHECK_EQ_U(b.len, cases[i].len);
		CHECK_EQ_U(b.kind, cases[i].kind);
		CHECK_EQ_U(b.terminal, cases[i].terminal);
		CHECK_EQ_U(b.target, cases[i].target);
		/* cut short: never a length past the bytes given */
		CHECK(arch_brief_quick(cases[i].b, (size_t)cases[i].n - 1, 0x1000, &b) != 0 || b.len <= cases[i].n - 1);
	}
	/* left to capstone: XOP, a branch with a prefix that changes it */
	struct arch_brief b;
	static const uint8_t xop[] = { 0x8f, 0xe9, 0x78, 0xc1, 0xc1 }, bnd[] = { 0xf2, 0xe9, 0, 0, 0, 0 };
	CHECK(arch_brief_quick(xop, sizeof xop, 0x1000, &b) == 1);
	CHECK(arch_brief_quick(bnd, sizeof bnd, 0x1000, &b) == 1);
}

int main(void)
{
	RUN(quick_known_encodings);
	RUN(quick_equals_capstone);
	UNIT_END();
}

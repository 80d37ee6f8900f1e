/* test_remote_tramp.c — unit tests of the aarch64 trampolines and patch
 * routine of in-target counting (src/arch/aarch64/remote_tramp.c): the
 * expected words were assembled by aarch64-linux-gnu-as (objdump -d) at the
 * same addresses (trampoline at 0x100000, counter 0x140000, site 0x200000),
 * except adrp, whose immediate (0x20 pages) is set by hand (as leaves it to
 * a relocation). */
#include "unit.h"

#include <string.h>

#include "arch/aarch64/remote_tramp.h"

#define T 0x100000ull
#define C 0x140000ull
#define S 0x200000ull

static const uint32_t head[9] = { 0xa9be47f0, 0xf9000bef, 0x101fffd0, 0xc85f7e11, 0x91000631,
                                  0xc80f7e11, 0x35ffffaf, 0xf9400bef, 0xa8c247f0 };

/* The trampoline of insn: the common head, then want (n words). */
static int tramp_is(uint32_t insn, const uint32_t *want, int n)
{
	uint32_t out[A64_TRAMP_MAX];
	const char *why = NULL;
	int k = a64_tramp(out, A64_TRAMP_MAX, T, S, insn, C, 0, &why);
	return k == 9 + n && !memcmp(out, head, sizeof head) && !memcmp(out + 9, want, (size_t)n * 4);
}

static void relocations(void)
{
	static const uint32_t stp[] = { 0xa9be7bfd, 0x1403fff7 };
	static const uint32_t adrp[] = { 0xd2800000, 0xf2a00440, 0xf2c00000, 0xf2e00000, 0x1403fff4 };
	static const uint32_t cbz[] = { 0x34000043, 0x1403fff7, 0x14040005 };
	static const uint32_t bl[] = { 0xd280009e, 0xf2a0041e, 0xf2c0001e, 0xf2e0001e, 0x140403f3 };
	static const uint32_t ldr[] = { 0xd2801001, 0xf2a00401, 0xf2c00001, 0xf2e00001, 0xf9400021, 0x1403fff3 };
	static const uint32_t tbnz[] = { 0xb7080042, 0x1403fff7, 0x1403ffb5 };
	static const uint32_t ret[] = { 0xd65f03c0 };
	CHECK(tramp_is(0xa9be7bfd, stp, 2));       /* stp x29, x30, [sp, #-32]!: copied, b site+4 */
	CHECK(tramp_is(0x90000100, adrp, 5));      /* adrp x0, site page + 0x20000 */
	CHECK(tramp_is(0x34000203, cbz, 3));       /* cbz w3, .+0x40 */
	CHECK(tramp_is(0x94000400, bl, 5));        /* bl .+0x1000: x30 = site+4 */
	CHECK(tramp_is(0x58000401, ldr, 6));       /* ldr x1, .+0x80 */
	CHECK(tramp_is(0xb70ff802, tbnz, 3));      /* tbnz x2, #33, .-0x100 */
	CHECK(tramp_is(0xd65f03c0, ret, 1));       /* ret: copied, no way on */
}

static void refusals(void)
{
	static const uint32_t no[] = { 0xd63f0020 /* blr x1 */, 0xc85f7c01 /* ldxr x1, [x0] */, 0xd4000001 /* svc #0 */,
	                               0x9c000000 /* ldr q0, literal */, 0xd8000000 /* prfm literal */ };
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
		uint32_t out[A64_TRAMP_MAX];
		const char *why = NULL;
		CHECK(a64_reloc_refused(no[i]) != NULL);
		CHECK(a64_tramp(out, A64_TRAMP_MAX, T, S, no[i], C, 0, &why) < 0 && why);
	}
	CHECK(a64_is_load_exclusive(0xc85f7c01));   /* ldxr */
	CHECK(!a64_is_load_exclusive(0xc80f7e11));  /* stxr */
	/* Out of reach: a site 200 MiB from its trampoline, a counter 2 MiB away. */
	uint32_t out[A64_TRAMP_MAX];
	const char *why = NULL;
	CHECK(a64_tramp(out, A64_TRAMP_MAX, T, T + (200ull << 20), 0xa9be7bfd, C, 0, &why) < 0);
	CHECK(a64_tramp(out, A64_TRAMP_MAX, T, S, 0xa9be7bfd, T + (2ull << 20), 0, &why) < 0);
	CHECK_EQ_U(a64_branch(S, T), 0x17fc0000);   /* b .-0x100000 */
	CHECK_EQ_U(a64_branch(0, 1ull << 28), 0);
}

/* With a heartbeat word at C + 0x800: after the counter's loop, and x16,
 * x17, #0x3ffff; cbnz x16, 2f; adr x16, word; ldr x16, [x16]; cbz x16, 2f;
 * brk #2; 2: the rest (as assembled by aarch64-linux-gnu-as); a word out
 * of adr's reach refuses. */
static void heartbeat(void)
{
	static const uint32_t beat[6] = { 0x92404630, 0xb50000b0, 0x10203ef0, 0xf9400210, 0xb4000050, 0xd4200040 };
	uint32_t out[A64_TRAMP_MAX];
	const char *why = NULL;
	int k = a64_tramp(out, A64_TRAMP_MAX, T, S, 0xa9be7bfd, C, C + 0x800, &why);
	CHECK_EQ_U(k, 17);
	CHECK(!memcmp(out, head, 7 * 4));
	CHECK(!memcmp(out + 7, beat, sizeof beat));
	CHECK(!memcmp(out + 13, head + 7, 2 * 4));
	CHECK_EQ_U(out[12], A64_BRK_HEARTBEAT);
	CHECK_EQ_U(out[15], 0xa9be7bfd);
	CHECK(a64_tramp(out, A64_TRAMP_MAX, T, S, 0xa9be7bfd, C, T + (2ull << 20), &why) < 0);
}

/* The patch routine of two sites on one page and one on another: two
 * mprotect RWX (each followed by cbnz x0 to brk #1), the stores, the pages
 * R-X again, isb, brk #0, brk #1. */
static void routine(void)
{
	uint64_t addrs[3] = { 0x5000, 0x5008, 0x9000 };
	uint32_t words[3] = { 0x14000001, 0x14000002, 0x14000003 };
	uint32_t out[200];
	uint64_t ok, fail;
	int n = a64_patch_routine(out, 200, T, addrs, words, 3, &ok, &fail);
	CHECK_EQ_U(n, 17 * 2 + 11 * 3 + 3);
	CHECK_EQ_U(fail, T + 4 * (uint64_t)(n - 1));
	CHECK_EQ_U(ok, fail - 4);
	CHECK_EQ_U(out[n - 1], 0xd4200020);       /* brk #1 */
	CHECK_EQ_U(out[n - 2], 0xd4200000);       /* brk #0 */
	CHECK_EQ_U(out[n - 3], 0xd5033fdf);       /* isb */
	int svc = 0, cbnz = 0, str = 0;
	for (int i = 0; i < n; i++) {
		svc += out[i] == A64_SVC0;
		str += out[i] == 0xb900012a;           /* str w10, [x9] */
		if ((out[i] & 0xff00001f) == 0xb5000000) {
			cbnz++;
			int64_t off = (int64_t)((out[i] >> 5) & 0x7ffff) << 45 >> 43;  /* imm19 * 4 */
			CHECK_EQ_U(T + 4 * (uint64_t)i + (uint64_t)off, fail);
		}
	}
	CHECK_EQ_U(svc, 4);
	CHECK_EQ_U(cbnz, 2);
	CHECK_EQ_U(str, 3);
	CHECK(a64_patch_routine(out, 20, T, addrs, words, 3, &ok, &fail) < 0);
}

int main(void)
{
	RUN(relocations);
	RUN(refusals);
	RUN(heartbeat);
	RUN(routine);
	UNIT_END();
}

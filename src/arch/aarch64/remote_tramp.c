/* remote_tramp.c — AArch64 trampolines and the self-patching routine of
 * in-target counting (remote_tramp.h).  Encodings from the Arm ARM (DDI
 * 0487), checked against aarch64-linux-gnu-as (tests/unit/test_remote_tramp.c). */
#include "arch/aarch64/remote_tramp.h"
#include "arch/bits.h"

#define PAGE 4096ull

int a64_is_load_exclusive(uint32_t insn)
{
	/* Load/store exclusive class, L (bit 22) set, o2 (bit 23) clear. */
	return (insn & 0x3fc00000u) == 0x08400000u;
}

const char *a64_reloc_refused(uint32_t insn)
{
	if ((insn & 0x3f000000u) == 0x08000000u)
		return "an exclusive or ordered load/store";
	if ((insn & 0xff000000u) == 0xd4000000u)
		return "an exception-generating instruction (svc, brk)";
	if ((insn & 0xfe000000u) == 0xd6000000u) {
		unsigned opc = (insn >> 21) & 0xf;
		if (opc != 0 && opc != 2)
			return "an indirect call or exception return";  /* blr, eret */
	}
	if ((insn & 0x3b000000u) == 0x18000000u && ((insn & (1u << 26)) || (insn >> 30) == 3))
		return "a PC-relative load of a SIMD register or prfm";
	return 0;
}

uint32_t a64_branch(uint64_t from, uint64_t to)
{
	int64_t off = (int64_t)(to - from);
	if (off & 3 || off < -(1ll << 27) || off >= (1ll << 27))
		return 0;
	return 0x14000000u | ((uint32_t)(off >> 2) & 0x3ffffffu);
}

/* movz/movk: the 64-bit value v into x<rd>, 4 words. */
static int mov64(uint32_t *o, int rd, uint64_t v)
{
	o[0] = 0xd2800000u | (uint32_t)(v & 0xffff) << 5 | (uint32_t)rd;
	for (int hw = 1; hw < 4; hw++)
		o[hw] = 0xf2800000u | (uint32_t)hw << 21 | (uint32_t)((v >> (16 * hw)) & 0xffff) << 5 | (uint32_t)rd;
	return 4;
}

/* The relocated insn at out (running at `at`, for the site at pc), followed
 * by the branch back to pc+4 when it falls through.  Words, or -1. */
static int relocate(uint32_t *o, uint64_t at, uint64_t pc, uint32_t insn, const char **why)
{
	int k = 0;
	int rd = (int)(insn & 31);
	uint64_t target;
	if ((insn & 0x1f000000u) == 0x10000000u) {                 /* adr, adrp */
		int64_t imm = sext(((insn >> 5) & 0x7ffff) << 2 | ((insn >> 29) & 3), 21);
		target = (insn & 0x80000000u) ? (pc & ~(PAGE - 1)) + (uint64_t)(imm * 4096) : pc + (uint64_t)imm;
		k += mov64(o, rd, target);
	} else if ((insn & 0x3b000000u) == 0x18000000u) {          /* ldr literal (w, x, sw) */
		target = pc + (uint64_t)(sext((insn >> 5) & 0x7ffff, 19) * 4);
		k += mov64(o, rd, target);
		static const uint32_t ld[3] = { 0xb9400000u, 0xf9400000u, 0xb9800000u };
		o[k++] = ld[insn >> 30] | (uint32_t)rd << 5 | (uint32_t)rd;
	} else if ((insn & 0x7c000000u) == 0x14000000u) {          /* b, bl */
		target = pc + (uint64_t)(sext(insn & 0x3ffffff, 26) * 4);
		if (insn & 0x80000000u)
			k += mov64(o, 30, pc + 4);
		uint32_t b = a64_branch(at + 4 * (uint64_t)k, target);
		if (!b)
			goto far;
		o[k++] = b;
		return k;
	} else if ((insn & 0xff000010u) == 0x54000000u || (insn & 0x7e000000u) == 0x34000000u ||
	           (insn & 0x7e000000u) == 0x36000000u) {
		/* b.cond, cbz/cbnz (imm19), tbz/tbnz (imm14): taken -> 2 words on,
		 * to a `b target`; not taken -> the `b pc+4` after it. */
		int tb = (insn & 0x7e000000u) == 0x36000000u;
		uint32_t mask = tb ? 0x3fffu << 5 : 0x7ffffu << 5;
		int64_t off = tb ? sext((insn >> 5) & 0x3fff, 14) : sext((insn >> 5) & 0x7ffff, 19);
		target = pc + (uint64_t)(off * 4);
		o[k++] = (insn & ~mask) | 2u << 5;
		uint32_t back = a64_branch(at + 4, pc + 4), b = a64_branch(at + 8, target);
		if (!back || !b)
			goto far;
		o[k++] = back;
		o[k++] = b;
		return k;
	} else {
		o[k++] = insn;                                           /* as it is */
		if ((insn & 0xfe000000u) == 0xd6000000u)
			return k;                                            /* br, ret: no way on */
	}
	uint32_t back = a64_branch(at + 4 * (uint64_t)k, pc + 4);
	if (!back)
		goto far;
	o[k++] = back;
	return k;
far:
	*why = "the trampoline is out of branch range (128 MiB) of the site or its target";
	return -1;
}

/* adr x<rd>, to (placed at `at`): the word, or 0 when out of reach (±1 MiB). */
static uint32_t adr(uint64_t at, uint64_t to, int rd)
{
	int64_t c = (int64_t)(to - at);
	if (c < -(1ll << 20) || c >= (1ll << 20))
		return 0;
	return 0x10000000u | ((uint32_t)c & 3) << 29 | (((uint32_t)(c >> 2)) & 0x7ffff) << 5 | (uint32_t)rd;
}

int a64_tramp(uint32_t *out, int max, uint64_t at, uint64_t site, uint32_t insn, uint64_t counter,
              uint64_t heartbeat, const char **why)
{
	uint32_t o[A64_TRAMP_MAX];
	int k = 0;
	int64_t c = (int64_t)(counter - (at + 8));
	if ((*why = a64_reloc_refused(insn)))
		return -1;
	if (c < -(1ll << 20) || c >= (1ll << 20) || (heartbeat && !adr(at + 36, heartbeat, 16))) {
		*why = "the counter is out of adr range";
		return -1;
	}
	o[k++] = 0xa9be47f0u;                        /* stp x16, x17, [sp, #-32]! */
	o[k++] = 0xf9000befu;                        /* str x15, [sp, #16] */
	o[k++] = 0x10000000u | ((uint32_t)c & 3) << 29 | (((uint32_t)(c >> 2)) & 0x7ffff) << 5 | 16; /* adr x16, counter */
	o[k++] = 0xc85f7e11u;                        /* 1: ldxr x17, [x16] */
	o[k++] = 0x91000631u;                        /* add x17, x17, #1 (not adds: flags untouched) */
	o[k++] = 0xc80f7e11u;                        /* stxr w15, x17, [x16] */
	o[k++] = 0x35ffffafu;                        /* cbnz w15, 1b */
	if (heartbeat) { /* every A64_HEARTBEAT_EVERY hits, while the word at heartbeat is set: brk #2 */
		o[k++] = 0x92404630u;                    /* and x16, x17, #0x3ffff (not ands) */
		o[k++] = 0xb50000b0u;                    /* cbnz x16, 2f */
		o[k] = adr(at + 4 * (uint64_t)k, heartbeat, 16); /* adr x16, heartbeat */
		k++;
		o[k++] = 0xf9400210u;                    /* ldr x16, [x16] */
		o[k++] = 0xb4000050u;                    /* cbz x16, 2f */
		o[k++] = A64_BRK_HEARTBEAT;              /* brk #2 */
	}
	o[k++] = 0xf9400befu;                        /* 2: ldr x15, [sp, #16] */
	o[k++] = 0xa8c247f0u;                        /* ldp x16, x17, [sp], #32 */
	int r = relocate(o + k, at + 4 * (uint64_t)k, site, insn, why);
	if (r < 0)
		return -1;
	k += r;
	if (k > max) {
		*why = "no room for the trampoline";
		return -1;
	}
	for (int i = 0; i < k; i++)
		out[i] = o[i];
	return k;
}

/* mprotect(page, 4096, prot); on failure (x0 != 0) to fail when fail is
 * set: the words, 9 (8 without fail). */
static int mprotect_call(uint32_t *o, uint64_t at, uint64_t page, int prot, uint64_t fail)
{
	int k = mov64(o, 0, page);
	o[k++] = 0xd2800000u | (uint32_t)PAGE << 5 | 1;                 /* mov x1, #4096 */
	o[k++] = 0xd2800000u | (uint32_t)prot << 5 | 2;                 /* mov x2, #prot */
	o[k++] = 0xd2800000u | (uint32_t)A64_NR_MPROTECT << 5 | 8;     /* mov x8, #226 */
	o[k++] = A64_SVC0;
	if (fail) {
		int64_t off = (int64_t)(fail - (at + 4 * (uint64_t)k));
		o[k++] = 0xb5000000u | ((uint32_t)(off >> 2) & 0x7ffff) << 5; /* cbnz x0, fail */
	}
	return k;
}

int a64_patch_routine(uint32_t *out, int max, uint64_t at, const uint64_t *addrs, const uint32_t *words, int n,
                      uint64_t *ok_brk, uint64_t *fail_brk)
{
	/* The distinct pages, then the size: 9 words per page to open, 8 to
	 * close, 11 per store, isb and the two brk. */
	int npages = 0;
	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int j = 0; j < i && !seen; j++)
			seen = (addrs[j] & ~(PAGE - 1)) == (addrs[i] & ~(PAGE - 1));
		npages += !seen;
	}
	int total = 17 * npages + 11 * n + 3;
	if (total > max)
		return -1;
	uint64_t fail = at + 4 * (uint64_t)(total - 1);
	int k = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++) {
			int seen = 0;
			for (int j = 0; j < i && !seen; j++)
				seen = (addrs[j] & ~(PAGE - 1)) == (addrs[i] & ~(PAGE - 1));
			if (seen)
				continue;
			if (pass == 0) {
				k += mprotect_call(out + k, at + 4 * (uint64_t)k, addrs[i] & ~(PAGE - 1), 7, fail);
				continue;
			}
			/* Pass 1: the stores of this page, then R-X again (a failure
			 * there leaves the page writable: harmless, not reported). */
			for (int s = 0; s < n; s++) {
				if ((addrs[s] & ~(PAGE - 1)) != (addrs[i] & ~(PAGE - 1)))
					continue;
				k += mov64(out + k, 9, addrs[s]);
				out[k++] = 0x5280000au | (words[s] & 0xffff) << 5;            /* movz w10, lo */
				out[k++] = 0x72a0000au | (words[s] >> 16) << 5;               /* movk w10, hi, lsl 16 */
				out[k++] = 0xb900012au;                                      /* str w10, [x9] */
				out[k++] = 0xd50b7b29u;                                      /* dc cvau, x9 */
				out[k++] = 0xd5033b9fu;                                      /* dsb ish */
				out[k++] = 0xd50b7529u;                                      /* ic ivau, x9 */
				out[k++] = 0xd5033b9fu;                                      /* dsb ish */
			}
			k += mprotect_call(out + k, at + 4 * (uint64_t)k, addrs[i] & ~(PAGE - 1), 5, 0);
		}
	out[k++] = 0xd5033fdfu;                                                  /* isb */
	*ok_brk = at + 4 * (uint64_t)k;
	out[k++] = 0xd4200000u;                                                  /* brk #0 */
	*fail_brk = at + 4 * (uint64_t)k;
	out[k++] = 0xd4200020u;                                                  /* brk #1 */
	return k;
}

/* stubs.c — the code of one region (instr.h), built by sonde for the
 * addresses the program mapped; the program only copies and runs it.
 *
 * At region + 0, the common entry, reached from every stub by a call:
 *     push rdi rsi rdx rcx r8 r9 rax r10 r11    every register an argument, the
 *                                               static chain or a caller's
 *                                               -fipa-ra value may be in
 *     mov 80(%rsp),%esi                         the function's number (pushed by its stub)
 *     lea 88(%rsp),%rdx                         the slot of its return address
 *     mov hook(%rip),%rdi; call *(%rdi)         the module's entry hook (src/rt/hooks.c), its
 *                                               address in the region's hook slot (at 56), so that
 *                                               the code depends only on where the region lies
 *                                               relative to the module
 *     pop (reverse); ret $8                     back into the stub, the number dropped
 * The stack is 16-byte aligned at that call: the function is entered with
 * rsp = 8 mod 16, and the push, the call and nine pushes take 88 bytes.
 * Vector registers are not saved: the hook is built -mgeneral-regs-only.
 *
 * At 56, 64 and 72 the hook, TLS and CNT slots (instr_abi.h), written by
 * the runtime; the stubs from SONDE_INSTR_STUBS_AT.
 *
 * One stub per function, 16-byte aligned:
 *     push $number; call common
 *     the function's first instructions, relocated (src/arch/x86_64/reloc.c)
 *     jmp fn + displaced                        (unless they end in jmp / ret)
 * The function's entry then holds `jmp stub`.  The hook replaces the
 * return address in the slot, as for a sonde-cc build's sled: exits, tail
 * calls, non-local exits and exceptions work the same way.
 *
 * A function counted, not timed (record --timing), counts its call in the
 * stub when it can, in ten instructions, no call and no register but r11
 * and the flags changed (r11 kept in the red zone: the function has not
 * begun, so the 128 bytes below its return address are free, and a
 * signal's frame goes below them):
 *     mov %r11,-8(%rsp)
 *     mov tls(%rip),%r11                        the thread word's offset from %fs
 *     cmpq $SONDE_INSTR_TLS_ON,%fs:(%r11); jne slow   not recording, or in the runtime
 *     mov %fs:SONDE_INSTR_TLS_TABLE(%r11),%r11   the thread's tables
 *     add cnt(%rip),%r11; mov (%r11),%r11        its counts for this module
 *     test %r11,%r11; je slow                   none yet
 *     incq 8*number(%r11)                       one instruction: a signal lands before or after
 *     mov -8(%rsp),%r11; jmp body
 * slow:
 *     mov -8(%rsp),%r11; push $(number | SONDE_INSTR_COUNT); call common
 * body: the relocated instructions, as above.  The hook's way counts in the
 * same array (src/rt/hooks.c, enter_count), making it first.
 *
 * A function switched while the program runs (record --timing=auto, its
 * sonde_instr_fn.sw) has both ways, chosen at each call by its byte in the
 * module's switch array (the FLG slot: its address), which sonde writes:
 *     mov %r11,-8(%rsp)
 *     mov flg(%rip),%r11; cmpb $0,number(%r11); jne timed
 *     (the counted way as above, from `mov tls(%rip),%r11`; slow ends in jmp body)
 * timed:
 *     mov -8(%rsp),%r11; push $number; call common
 * body: the relocated instructions.  A call reads the byte once: it is
 * timed or counted whole, whichever way the byte was read, and a switch is
 * one byte sonde stores, no code written while threads run. */
#include <stdio.h>
#include <string.h>

#include "arch/reloc.h"
#include "instr/instr.h"
#include "sym/sym.h"

static const uint8_t common_head[] = {
	0x57, 0x56, 0x52, 0x51, 0x41, 0x50, 0x41, 0x51, 0x50, 0x41, 0x52, 0x41, 0x53, /* push ... r11 */
	0x8b, 0x74, 0x24, 0x50,                                                       /* mov 0x50(%rsp),%esi */
	0x48, 0x8d, 0x54, 0x24, 0x58,                                                 /* lea 0x58(%rsp),%rdx */
	0x48, 0x8b, 0x3d,                                                             /* mov slot(%rip),%rdi */
};
static const uint8_t common_tail[] = {
	0xff, 0x17,                                                                   /* call *(%rdi) */
	0x41, 0x5b, 0x41, 0x5a, 0x58, 0x41, 0x59, 0x41, 0x58, 0x59, 0x5a, 0x5e, 0x5f, /* pop r11 ... rdi */
	0xc2, 0x08, 0x00,                                                             /* ret $8 */
};

/* A counted function's fast path (above), before its relocated
 * instructions; the holes: the rel32s of the two slots, the count's disp32,
 * the number pushed and the common entry's rel32. */
static const uint8_t count_head[] = {
	0x4c, 0x89, 0x5c, 0x24, 0xf8,             /*  0 mov %r11,-8(%rsp) */
	0x4c, 0x8b, 0x1d, 0, 0, 0, 0,             /*  5 mov tls(%rip),%r11 */
	0x64, 0x49, 0x83, 0x3b, SONDE_INSTR_TLS_ON, /* 12 cmpq $ON,%fs:(%r11) */
	0x75, 53 - 19,                            /* 17 jne slow */
	0x64, 0x4d, 0x8b, 0x5b, SONDE_INSTR_TLS_TABLE, /* 19 mov %fs:TABLE(%r11),%r11 */
	0x4c, 0x03, 0x1d, 0, 0, 0, 0,             /* 24 add cnt(%rip),%r11 */
	0x4d, 0x8b, 0x1b,                         /* 31 mov (%r11),%r11 */
	0x4d, 0x85, 0xdb,                         /* 34 test %r11,%r11 */
	0x74, 53 - 39,                            /* 37 je slow */
	0x49, 0xff, 0x83, 0, 0, 0, 0,             /* 39 incq 8*number(%r11) */
	0x4c, 0x8b, 0x5c, 0x24, 0xf8,             /* 46 mov -8(%rsp),%r11 */
	0xeb, 68 - 53,                            /* 51 jmp body */
	0x4c, 0x8b, 0x5c, 0x24, 0xf8,             /* 53 slow: mov -8(%rsp),%r11 */
	0x68, 0, 0, 0, 0,                         /* 58 push $number */
	0xe8, 0, 0, 0, 0,                         /* 63 call common */
};                                            /* 68 body */
enum { CH_TLS = 8, CH_CNT = 27, CH_NUM8 = 42, CH_PUSH = 59, CH_CALL = 64 }; /* the holes */
_Static_assert(sizeof count_head == INSTR_COUNT_HEAD, "instr.h's size of a counted function's fast path");
_Static_assert(SONDE_INSTR_TLS_TABLE < 128 && SONDE_INSTR_TLS_ON < 128, "disp8 and imm8");

/* A switched function's two ways (above); the holes: the rel32s of the
 * three slots, the flag's disp32, the count's disp32, the two numbers
 * pushed and the two rel32s of the common entry's calls. */
static const uint8_t switch_head[] = {
	0x4c, 0x89, 0x5c, 0x24, 0xf8,             /*   0 mov %r11,-8(%rsp) */
	0x4c, 0x8b, 0x1d, 0, 0, 0, 0,             /*   5 mov flg(%rip),%r11 */
	0x41, 0x80, 0xbb, 0, 0, 0, 0, 0x00,       /*  12 cmpb $0,number(%r11) */
	0x75, 87 - 22,                            /*  20 jne timed */
	0x4c, 0x8b, 0x1d, 0, 0, 0, 0,             /*  22 mov tls(%rip),%r11 */
	0x64, 0x49, 0x83, 0x3b, SONDE_INSTR_TLS_ON, /* 29 cmpq $ON,%fs:(%r11) */
	0x75, 70 - 36,                            /*  34 jne slow */
	0x64, 0x4d, 0x8b, 0x5b, SONDE_INSTR_TLS_TABLE, /* 36 mov %fs:TABLE(%r11),%r11 */
	0x4c, 0x03, 0x1d, 0, 0, 0, 0,             /*  41 add cnt(%rip),%r11 */
	0x4d, 0x8b, 0x1b,                         /*  48 mov (%r11),%r11 */
	0x4d, 0x85, 0xdb,                         /*  51 test %r11,%r11 */
	0x74, 70 - 56,                            /*  54 je slow */
	0x49, 0xff, 0x83, 0, 0, 0, 0,             /*  56 incq 8*number(%r11) */
	0x4c, 0x8b, 0x5c, 0x24, 0xf8,             /*  63 mov -8(%rsp),%r11 */
	0xeb, 102 - 70,                           /*  68 jmp body */
	0x4c, 0x8b, 0x5c, 0x24, 0xf8,             /*  70 slow: mov -8(%rsp),%r11 */
	0x68, 0, 0, 0, 0,                         /*  75 push $(number | COUNT) */
	0xe8, 0, 0, 0, 0,                         /*  80 call common */
	0xeb, 102 - 87,                           /*  85 jmp body */
	0x4c, 0x8b, 0x5c, 0x24, 0xf8,             /*  87 timed: mov -8(%rsp),%r11 */
	0x68, 0, 0, 0, 0,                         /*  92 push $number */
	0xe8, 0, 0, 0, 0,                         /*  97 call common */
};                                            /* 102 body */
enum {
	SH_FLG = 8, SH_NUM1 = 15, SH_TLS = 25, SH_CNT = 44, SH_NUM8 = 59,
	SH_PUSHC = 76, SH_CALLC = 81, SH_PUSHT = 93, SH_CALLT = 98 /* the holes */
};
_Static_assert(sizeof switch_head == INSTR_SWITCH_HEAD, "instr.h's size of a switched function's two ways");

/* Write the 4-byte hole at o + at: v. */
static void hole(uint8_t *o, size_t at, int32_t v)
{
	memcpy(o + at, &v, 4);
}

static int fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

int instr_build(const struct instr_plan *p, uint64_t bias, uint64_t region, uint64_t size, uint64_t hook, int live,
                int moveable, uint8_t *code, uint32_t *stubs, int32_t *rels, uint32_t *built, uint32_t *fix,
                size_t fixcap, uint32_t *nfix, char *err, size_t n)
{
	*built = 0;
	size_t nf = 0;
	int fix_ok = fix != NULL;
#define FIX(o) do { if (fix_ok && nf < fixcap) fix[nf++] = (uint32_t)(o); else fix_ok = 0; } while (0)
	for (size_t k = 0; k < p->nrts; k++)
		rels[k] = INT32_MIN;
	size_t rk = 0; /* p->rts is sorted by function */
	memset(code, 0xcc, size);
	size_t k = 0;
	memcpy(code + k, common_head, sizeof common_head);
	k += sizeof common_head;
	int32_t slot_rel = (int32_t)(SONDE_INSTR_HOOK_SLOT - (k + 4));
	memcpy(code + k, &slot_rel, 4);
	k += 4;
	memcpy(code + k, common_tail, sizeof common_tail);
	_Static_assert(sizeof common_head + 4 + sizeof common_tail <= SONDE_INSTR_HOOK_SLOT, "the common entry is short");
	_Static_assert(sizeof common_head + 4 + 2 == SONDE_INSTR_COMMON_CALLED &&
	               sizeof common_head + 4 + sizeof common_tail == SONDE_INSTR_COMMON_LEN,
	               "the common entry's layout is instr_abi.h's (the runtime's unwind information for it)");
	memcpy(code + SONDE_INSTR_HOOK_SLOT, &hook, 8);
	_Static_assert(SONDE_INSTR_HOOK_SLOT + 8 == SONDE_INSTR_TLS_SLOT && SONDE_INSTR_TLS_SLOT + 8 == SONDE_INSTR_CNT_SLOT &&
	               SONDE_INSTR_CNT_SLOT + 8 == SONDE_INSTR_FLG_SLOT && SONDE_INSTR_FLG_SLOT + 16 == SONDE_INSTR_STUBS_AT &&
	               SONDE_INSTR_STUBS_AT % 16 == 0,
	               "the region's head: common entry, slots, stubs");
	k = SONDE_INSTR_STUBS_AT;
	for (size_t i = 0; i < p->nfns; i++) {
		stubs[i] = SONDE_INSTR_NOSTUB;
		const struct sonde_instr_fn *f = &p->fns[i];
		uint64_t fn = f->vaddr + bias, at = region + k;
		size_t avail = 0;
		const uint8_t *bytes = sym_code(p->sm, f->vaddr, &avail);
		if (!bytes || avail < f->len || !fits32((int64_t)(fn - at)) || !fits32((int64_t)(at - fn)))
			continue;
		struct reloc_out r;
		char why[160];
		/* Branch targets were checked over the whole function by the plan:
		 * here only the displaced bytes are its "function". */
		/* An int3 site's stub is its displaced instruction only; so is, in a
		 * running program, that of a function whose branches would need
		 * re-targeting (the runtime writes an int3 there then). */
		int as_int3 = f->int3 || (f->retarget && live);
		int sw = !as_int3 && f->sw;               /* both ways (switch_head) */
		int fast = !as_int3 && !sw && f->count;   /* the count in the stub (count_head) */
		size_t head = as_int3 ? 0 : sw ? sizeof switch_head : fast ? sizeof count_head : 10;
		size_t first = as_int3 ? 1 : 5, len = f->len;
		if (as_int3 && !f->int3) { /* its first instruction only */
			struct reloc_out one;
			if (reloc_build_pic(bytes, f->len, fn, 1, bytes, f->len, fn, at, &one, why, sizeof why))
				continue;
			len = one.displaced;
		}
		if (reloc_build_pic(bytes, len, fn, first, bytes, len, fn, at + head, &r, why, sizeof why) || r.displaced != len)
			continue;
		if (r.absolute && moveable) {
			snprintf(err, n, "the stub of the function at 0x%llx holds an address of the module: it is built "
			         "for the program's addresses", (unsigned long long)f->vaddr);
			return -1;
		}
		size_t need = head + r.code_len + (r.ends_flow ? 0 : 5);
		if (k + need > size)
			break; /* the region is full: the rest stay unpatched */
		uint8_t *o = code + k;
		uint32_t num = (uint32_t)i | (f->count ? SONDE_INSTR_COUNT : 0u);
		int32_t rel;
		if (sw) {
			uint32_t timed = (uint32_t)i, counted = (uint32_t)i | SONDE_INSTR_COUNT;
			memcpy(o, switch_head, sizeof switch_head);
			hole(o, SH_FLG, (int32_t)(SONDE_INSTR_FLG_SLOT - (k + SH_FLG + 4)));
			hole(o, SH_NUM1, (int32_t)i);
			hole(o, SH_TLS, (int32_t)(SONDE_INSTR_TLS_SLOT - (k + SH_TLS + 4)));
			hole(o, SH_CNT, (int32_t)(SONDE_INSTR_CNT_SLOT - (k + SH_CNT + 4)));
			hole(o, SH_NUM8, (int32_t)(8 * i));
			memcpy(o + SH_PUSHC, &counted, 4);
			hole(o, SH_CALLC, (int32_t)((int64_t)region - (int64_t)(at + SH_CALLC + 4)));
			memcpy(o + SH_PUSHT, &timed, 4);
			hole(o, SH_CALLT, (int32_t)((int64_t)region - (int64_t)(at + SH_CALLT + 4)));
		} else if (fast) {
			memcpy(o, count_head, sizeof count_head);
			int32_t v = (int32_t)(SONDE_INSTR_TLS_SLOT - (k + CH_TLS + 4));
			memcpy(o + CH_TLS, &v, 4);
			v = (int32_t)(SONDE_INSTR_CNT_SLOT - (k + CH_CNT + 4));
			memcpy(o + CH_CNT, &v, 4);
			v = (int32_t)(8 * i); /* i < 2^20 (SONDE_FUNC_NUM) */
			memcpy(o + CH_NUM8, &v, 4);
			memcpy(o + CH_PUSH, &num, 4);
			rel = (int32_t)((int64_t)region - (int64_t)(at + CH_CALL + 4));
			memcpy(o + CH_CALL, &rel, 4);
		} else if (!f->int3) {
			o[0] = 0x68; /* push $number */
			memcpy(o + 1, &num, 4);
			rel = (int32_t)((int64_t)region - (int64_t)(at + 10));
			o[5] = 0xe8; /* call common */
			memcpy(o + 6, &rel, 4);
		}
		memcpy(o + head, r.code, r.code_len);
		if (r.n_ext > RELOC_MAX_EXT)
			fix_ok = 0;
		for (int q = 0; q < r.n_ext && q < RELOC_MAX_EXT; q++)
			FIX(k + head + r.ext_off[q]);
		if (!r.ends_flow) {
			size_t j = head + r.code_len;
			rel = (int32_t)((int64_t)(fn + r.displaced) - (int64_t)(at + j + 5));
			o[j] = 0xe9;
			memcpy(o + j + 1, &rel, 4);
			FIX(k + j + 1);
		}
		stubs[i] = (uint32_t)k;
		(*built)++;
		/* the branches that land inside its first bytes: into the relocated copy */
		while (rk < p->nrts && p->rts[rk].fn < i)
			rk++;
		for (; rk < p->nrts && p->rts[rk].fn == i; rk++) {
			const struct sonde_instr_rt *t = &p->rts[rk];
			if (as_int3)
				continue;
			int q;
			for (q = 0; q < r.n_insn && q < RELOC_MAP; q++)
				if (r.src_off[q] == t->into)
					break;
			if (q == r.n_insn || q == RELOC_MAP || r.dst_off[q] == RELOC_NOT_COPIED)
				continue;
			int64_t d = (int64_t)(at + head + r.dst_off[q]) - (int64_t)(t->at + bias + t->len);
			if (fits32(d))
				rels[rk] = (int32_t)d;
		}
		k = (k + need + 15) & ~(size_t)15;
	}
#undef FIX
	if (nfix)
		*nfix = fix_ok ? (uint32_t)nf : SONDE_INSTR_NOFIX;
	if (!*built && p->nfns) {
		snprintf(err, n, "no stub could be built for %s at 0x%llx", p->path, (unsigned long long)region);
		return -1;
	}
	return 0;
}

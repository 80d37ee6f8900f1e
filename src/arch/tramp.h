/* tramp.h — the code of a probe site's slot for the agent backend
 * (src/arch/x86_64/tramp.c, src/rt/probes.c runs it): a trampoline that
 * saves the registers, calls the agent's hit function with the site's index
 * and the stack pointer at the site, restores them, runs the displaced
 * instructions (reloc.h) and jumps back; or, for an int3 site, only the
 * displaced instruction and the jump back. */
#ifndef SONDE_ARCH_TRAMP_H
#define SONDE_ARCH_TRAMP_H

#include <stddef.h>
#include <stdint.h>

#define TRAMP_JMP_LEN 5 /* bytes a jump at the site takes */

struct tramp {
	uint8_t code[192];
	size_t len;
	size_t displaced_off; /* where the displaced instructions start in code */
	size_t orig_len;      /* bytes of the site that the jump (or int3) covers */
	int jmp;              /* 1: reached by a jump; 0: by int3 */
	int n_insn;           /* instructions displaced */
	size_t back_off;      /* the displaced code goes on at site + back_off (0: it never comes back) */
	char why_int3[160];   /* why not by a jump ("" when jmp) */
	size_t post_len;      /* tramp_build_post: the length of the instruction the post call follows */
};

/* Builds the slot for site (bytes code[0..avail), the enclosing function's
 * bytes fn[0..fn_len) at fn_addr, or NULL) at slot_addr; hit_fn is the
 * agent's hit function.  allow_jmp 0 asks for int3.  A site whose bytes
 * cannot take a jump falls back to int3 with why_int3 said.  0, or -1 with
 * err when not even int3 works (the single instruction cannot run
 * displaced). */
int tramp_build(const uint8_t *code, size_t avail, uint64_t site, const uint8_t *fn, size_t fn_len,
                uint64_t fn_addr, uint64_t slot_addr, uint64_t hit_fn, uint32_t idx, int allow_jmp,
                struct tramp *t, char *err, size_t n);

/* The same with a call of post_fn (the agent's pa_post_stub, with idx)
 * after the first displaced instruction, for a probe that has a post
 * handler: refused (-1, err) when that instruction is a branch, call or
 * ret (there is no "after" in the slot). */
int tramp_build_post(const uint8_t *code, size_t avail, uint64_t site, const uint8_t *fn, size_t fn_len,
                     uint64_t fn_addr, uint64_t slot_addr, uint64_t hit_fn, uint64_t post_fn, uint32_t idx,
                     int allow_jmp, struct tramp *t, char *err, size_t n);

#endif

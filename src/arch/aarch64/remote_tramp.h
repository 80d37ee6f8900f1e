/* remote_tramp.h — AArch64 code that sonde writes into a remote target to
 * count line hits there without stopping it (src/probe/remote/remote_count.c):
 * the trampoline of one site (count atomically, run the displaced
 * instruction relocated, branch back) and the routine the target runs to
 * patch its own text (mprotect, store the branch words, mprotect back, brk).
 * Pure code generation: words in the program's (little-endian) order are the
 * caller's to write; nothing here talks to the target. */
#ifndef SONDE_ARCH_AARCH64_REMOTE_TRAMP_H
#define SONDE_ARCH_AARCH64_REMOTE_TRAMP_H

#include <stddef.h>
#include <stdint.h>

#define A64_TRAMP_MAX 32        /* words of one trampoline, at most */
#define A64_SVC0      0xd4000001u
#define A64_NR_MMAP   222
#define A64_NR_MPROTECT 226

/* Whether insn at pc can run elsewhere (relocated by a64_tramp), and if not
 * why: NULL when it can. */
const char *a64_reloc_refused(uint32_t insn);
/* A load-exclusive (ldxr, ldaxr...): a site after one and before its store
 * would break the program's exclusive monitor with the counter's own. */
int a64_is_load_exclusive(uint32_t insn);

/* The trampoline at `at` for the site at `site` whose instruction is insn:
 * push x15-x17, add 1 to the 64-bit counter at `counter` (ldxr/stxr loop,
 * flags untouched), pop, the instruction relocated, `b site+4`.  With a
 * heartbeat (the address of a word; 0: none), the thread whose hit makes
 * the counter a multiple of A64_HEARTBEAT_EVERY stops at a `brk #2`
 * (A64_BRK_HEARTBEAT) while that word is not 0: QEMU's user-mode stub acts
 * on an interrupt only at a stop, so a program that runs through counted
 * sites still stops now and then for sonde.  Words into out (max of them);
 * their number, or -1 with *why (a branch out of range). */
int a64_tramp(uint32_t *out, int max, uint64_t at, uint64_t site, uint32_t insn, uint64_t counter,
              uint64_t heartbeat, const char **why);

#define A64_HEARTBEAT_EVERY (1u << 18)  /* the mask in a64_tramp's `and` */
#define A64_BRK_HEARTBEAT 0xd4200040u   /* brk #2 */

/* `b to` placed at `from`: the word, or 0 when out of reach (±128 MiB). */
uint32_t a64_branch(uint64_t from, uint64_t to);

/* The routine, at `at`, that stores words[i] at addrs[i] (n of them): every
 * page holding one made RWX with mprotect (a failure: `brk #1`, nothing
 * stored), the stores (with the cache maintenance real hardware needs), the
 * pages made R-X again, `brk #0`.  Words into out; their number, or -1 when
 * max is too small.  *ok_brk, *fail_brk: the addresses of the two brk. */
int a64_patch_routine(uint32_t *out, int max, uint64_t at, const uint64_t *addrs, const uint32_t *words, int n,
                      uint64_t *ok_brk, uint64_t *fail_brk);

#endif

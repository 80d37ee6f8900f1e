/* remote_tramp.h — Thumb-2 (ARMv7-M, ARMv7E-M: Cortex-M3, M4) code that
 * sonde writes into a microcontroller's RAM to count line hits there
 * without stopping it (src/probe/remote/remote_count.c, remote_count_mcu.c):
 * which sites can be moved (t32_site_check), the trampoline of one site
 * (count, the displaced instructions relocated, `b.w` back) and the `b.w`
 * that replaces the site.  Pure code generation: halfwords little-endian,
 * nothing here talks to the target.  ARMv6-M (Cortex-M0) has no ldrex,
 * movw or 32-bit branch: not handled (its sites keep breakpoints). */
#ifndef SONDE_ARCH_ARM_REMOTE_TRAMP_H
#define SONDE_ARCH_ARM_REMOTE_TRAMP_H

#include <stddef.h>
#include <stdint.h>

#include "arch/emit.h"

#define T32_TRAMP_MAX 96        /* bytes of one trampoline, at most */

/* Whether the site at `site`, in the function fn[0..n) at fn_start, can be
 * replaced by a 4-byte `b.w`: decoded from the function's start, the site
 * on an instruction boundary, neither an IT instruction nor in an IT block,
 * not within 16 instructions after a load-exclusive, each displaced
 * instruction relocatable (t32_reloc_refused); when the site's instruction
 * is 16-bit the next one is displaced too, which no direct branch of the
 * function may target and which a function with a table branch or a
 * computed jump never moves.  0 with *disp (the bytes displaced: 4 or 6),
 * or 1 with *why. */
int t32_site_check(const uint8_t *fn, size_t n, uint64_t fn_start, uint64_t site, int *disp, const char **why);

/* Whether the Thumb instruction at code (2 or 4 bytes) can run elsewhere,
 * and if not why: NULL when it can. */
const char *t32_reloc_refused(const uint8_t *code, size_t n);

/* The trampoline at `at` for the site at `site` whose displaced bytes are
 * code[0..disp): push {r0-r2}, movw/movt r0 = counter, the low word of the
 * 64-bit counter added 1 with ldrex/strex (a carry into the high word),
 * pop, the instructions relocated, `b.w site+disp`.  The flags (APSR) are
 * untouched: cbz / cbnz and b, never cmp.  Bytes into out (max of them);
 * their number, or -1 with *why. */
int t32_tramp(uint8_t *out, size_t max, uint64_t at, uint64_t site, const uint8_t *code, int disp,
              uint64_t counter, const char **why);

/* Timing calls in the target (record --target, remote_record_mcu.c; the
 * control block and its words in arch/emit.h).  A function's entry
 * trampoline at `at`, for the function at `site` whose displaced bytes are
 * code[0..disp): r0-r4, r12, the flags and PRIMASK saved, interrupts off;
 * unless lr is an EXC_RETURN (an exception's entry) or the shadow stack is
 * full (both counted in the block's LOST word), a shadow frame pushed (lr,
 * id, sp), the event (id << 1, the clock's value) written by the ring
 * writer, lr set to the exit trampoline (Thumb bit); all put back, the
 * displaced instructions relocated, `b.w site+disp`.  Its length, or -1
 * with *why. */
#define T32_REC_ENTRY_MAX 160
int t32_rec_entry(uint8_t *out, size_t max, uint64_t at, uint64_t site, const uint8_t *code, int disp, unsigned id,
                  const struct rec_addrs *a, const char **why);
/* The exit trampoline (one for all): the same registers saved, the clock
 * read, frames popped down to the one whose sp is ours (those deeper were
 * left by a longjmp; never below the first), the event (id << 1 | 1, the
 * time) written, and a return to the frame's lr with r0-r3 intact.  Its
 * length, or -1 (the ring writer out of reach). */
#define T32_REC_EXIT_MAX 96
int t32_rec_exit(uint8_t *out, size_t max, uint64_t at, const struct rec_addrs *a);
/* The ring writer (r0 the time, r1 the block, r3 the first word; r2 and
 * r12 clobbered; called with bl): the event at WP, WP moved on; a full
 * ring stops at its `bkpt` (*full), where sonde drains it and resumes the
 * writer from its start.  Its length.  Disabled when sonde leaves by a
 * `bx lr` written over its first instruction. */
#define T32_REC_PUT_MAX 32
int t32_rec_put(uint8_t *out, size_t max, uint64_t at, uint64_t *full);

/* `b.w to` placed at `from` into out[4]: 0, or -1 out of reach (±16 MiB). */
int t32_branch(uint8_t out[4], uint64_t from, uint64_t to);

/* Whether the ELF's .ARM.attributes (data[0..n)) say a core with
 * Thumb-2's ldrex, movw and b.w (ARMv7-M, ARMv7E-M, ARMv8-M mainline):
 * 1 yes, 0 no (ARMv6-M, ARMv8-M baseline, or not said). */
int t32_attrs_thumb2(const uint8_t *data, size_t n);

#endif

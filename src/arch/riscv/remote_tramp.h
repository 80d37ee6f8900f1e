/* remote_tramp.h — RV32 (RV32IMAC) code that sonde writes into a
 * microcontroller's RAM to count line hits there without stopping it
 * (src/probe/remote/remote_count.c, remote_count_mcu.c): which sites can be
 * moved (rv32_site_check), the trampoline of one site (count, the displaced
 * instructions relocated, `jal x0` back) and the `jal x0` that replaces the
 * site.  Pure code generation, little-endian; nothing here talks to the
 * target.  The counter is added with amoadd.w: the A extension. */
#ifndef SONDE_ARCH_RISCV_REMOTE_TRAMP_H
#define SONDE_ARCH_RISCV_REMOTE_TRAMP_H

#include <stddef.h>
#include <stdint.h>

#include "arch/emit.h"

#define RV32_TRAMP_MAX 112      /* bytes of one trampoline, at most */

/* Whether the site at `site`, in the function fn[0..n) at fn_start, can be
 * replaced by a 4-byte `jal x0`: on an instruction boundary decoding from
 * the function's start, not within 16 instructions after an lr.w, each
 * displaced instruction relocatable (rv32_reloc_refused), none part of a
 * semihosting sequence (slli/ebreak/srai); when the site's instruction is
 * compressed the next one is displaced too, which no direct branch of the
 * function may target and which a function with an indirect jump (a
 * switch's table) never moves.  0 with *disp (4 or 6), 1 with *why. */
int rv32_site_check(const uint8_t *fn, size_t n, uint64_t fn_start, uint64_t site, int *disp, const char **why);

/* Whether the instruction at code (2 or 4 bytes) can run elsewhere, and if
 * not why: NULL when it can. */
const char *rv32_reloc_refused(const uint8_t *code, size_t n);

/* The trampoline at `at` for the site at `site` whose displaced bytes are
 * code[0..disp): t0 and t1 saved below sp, 1 added to the 64-bit counter at
 * `counter` (amoadd.w on the low word, a carry into the high one), t0 and
 * t1 back, the instructions relocated, `jal x0, site+disp`.  Bytes into out
 * (max of them); their number, or -1 with *why. */
int rv32_tramp(uint8_t *out, size_t max, uint64_t at, uint64_t site, const uint8_t *code, int disp,
               uint64_t counter, const char **why);

/* Timing calls in the target (record --target, remote_record_mcu.c; the
 * control block in arch/emit.h), as t32_rec_entry / t32_rec_exit /
 * t32_rec_put do on Thumb-2: t0-t6 saved in a 32-byte frame below sp, MIE
 * off (csrrci mstatus: firmware in machine mode), a shadow frame (ra, id,
 * sp) pushed unless the shadow stack is full (counted in LOST), the event
 * written, ra set to the exit trampoline; the writer is called with `jal
 * t5` (t0 the block, t1 the first word, t2 the time; t3, t4 clobbered) and
 * ends on `ebreak` when the ring is full.  Lengths, or -1 (*why). */
#define RV32_REC_ENTRY_MAX 200
#define RV32_REC_EXIT_MAX 160
#define RV32_REC_PUT_MAX 40
#define RV32_REC_RETURN 0x000f0067u     /* jr t5: the writer's return, also written over its start when sonde leaves */
int rv32_rec_entry(uint8_t *out, size_t max, uint64_t at, uint64_t site, const uint8_t *code, int disp, unsigned id,
                   const struct rec_addrs *a, const char **why);
int rv32_rec_exit(uint8_t *out, size_t max, uint64_t at, const struct rec_addrs *a);
int rv32_rec_put(uint8_t *out, size_t max, uint64_t at, uint64_t *full);

/* `jal x0, to` placed at `from` into out[4]: 0, or -1 out of reach (±1 MiB). */
int rv32_branch(uint8_t out[4], uint64_t from, uint64_t to);

/* The semihosting sequence's ebreak (slli x0,x0,0x1f; ebreak; srai
 * x0,x0,7) at code[off], code[0..n) at base: 1 yes. */
int rv32_semihost_at(const uint8_t *code, size_t n, size_t off);

#endif

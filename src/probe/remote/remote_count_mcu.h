/* remote_count_mcu.h — the microcontroller half of in-target counting
 * (remote_count_mcu.c, used by remote_count.c only): Cortex-M3/M4 (Thumb-2)
 * and RV32 firmware, bare metal, where no system call can map a page: the
 * trampolines and counters go into target RAM the user gives sonde
 * (--target-ram ADDR:LEN), each site is replaced with M by a branch to its
 * trampoline, and the counters are read before the firmware's semihosting
 * exit (a breakpoint on each semihosting trap of the program). */
#ifndef SONDE_PROBE_REMOTE_COUNT_MCU_H
#define SONDE_PROBE_REMOTE_COUNT_MCU_H

#include <stddef.h>
#include <stdint.h>

struct rsess;

#define MCU_JUMP_LEN 4      /* b.w / jal x0 */

/* Whether this session counts on a microcontroller: an ARM or RV32 program
 * and --target-ram given.  1 yes; 0 not a microcontroller session (the
 * Linux path may apply); -1 a microcontroller session that cannot count in
 * the target (*why: ARMv6-M, no RAM given...): breakpoints. */
int mcu_count_kind(struct rsess *s, const char **why);

/* Whether site addr can be replaced by a branch: its function read from
 * the ELF, the arch's site check, the code writable, its bytes in the
 * target the ELF's.  0 with orig[0..*olen) (the bytes displaced), 1 not
 * (*why). */
int mcu_site(struct rsess *s, uint64_t addr, uint8_t orig[16], int *olen, const char **why);

/* The code for the RAM [ram, ram+len): the counters (8 bytes each, n of
 * them) at *counters, then on the next 4 KiB boundary a trampoline per
 * site; each site's jump into jumps[MCU_JUMP_LEN * i].  0 with *code and
 * *code_len (what to write there), 1 with *why (no room, out of reach). */
int mcu_build(struct rsess *s, int n, const uint64_t *addrs, const uint8_t (*orig)[16], const int *olen,
              uint8_t *buf, size_t max, uint64_t *code, size_t *code_len, uint64_t *counters, uint8_t *jumps,
              const char **why);

/* The semihosting traps of the program (bkpt 0xab; RV32's ebreak between
 * slli and srai), run-time addresses, malloc'd into *out: their count, or
 * -1 out of memory. */
int mcu_exit_sites(struct rsess *s, uint64_t **out);
/* A breakpoint of sonde's at each of them (the stop where the target's
 * counts or events are read for the last time): *sites and *nsites as
 * mcu_exit_sites gives them.  0, or -1 with err. */
int mcu_exit_breakpoints(struct rsess *s, uint64_t **sites, int *nsites, char *err, size_t n);
/* At a stop on one of them: whether the call is the exit (SYS_EXIT,
 * SYS_EXIT_EXTENDED). */
int mcu_exit_call(struct rsess *s);

#endif

/* remote_tramp.h — x86-64 code that sonde writes into a remote target
 * (gdbserver) to count line hits there without stopping it
 * (src/probe/remote/remote_count.c): a site's trampoline, reached by a 5-byte jmp
 * written over the site.  Pure code generation; the relocation of the
 * displaced instructions is the local agent's (src/arch/reloc.h). */
#ifndef SONDE_ARCH_X86_64_REMOTE_TRAMP_H
#define SONDE_ARCH_X86_64_REMOTE_TRAMP_H

#include <stddef.h>
#include <stdint.h>

#define X64_JMP_LEN 5
#define X64_TRAMP_MAX 192
#define X64_NR_MMAP 9
#define X64_NR_MUNMAP 11
#define X64_NR_EXIT_GROUP 231

/* The trampoline at `at` for the site at `site` (code: its bytes, avail
 * readable; fcode/flen/faddr: its function, to refuse a site a branch lands
 * inside): step over the red zone, pushfq, `lock incq counter(%rip)`, popfq,
 * back, the displaced instructions relocated (whole ones, at least 5
 * bytes: *displaced), `jmp` to the instruction after them.  Bytes into out
 * (X64_TRAMP_MAX); their number, or -1 with err. */
int x64_tramp(uint8_t *out, uint64_t at, uint64_t site, const uint8_t *code, size_t avail, const uint8_t *fcode,
              size_t flen, uint64_t faddr, uint64_t counter, size_t *displaced, char *err, size_t n);

/* `jmp to` (e9 rel32) at from: 0, -1 out of reach. */
int x64_jmp(uint8_t out[X64_JMP_LEN], uint64_t from, uint64_t to);

#endif

/* reloc.h — relocating the instructions at a probe site into a trampoline
 * (src/arch/x86_64/reloc.c), for the agent backend's jumps (tramp.h). */
#ifndef SONDE_ARCH_RELOC_H
#define SONDE_ARCH_RELOC_H

#include <stddef.h>
#include <stdint.h>

#define RELOC_MAX_CODE 128
struct reloc_out {
	uint8_t code[RELOC_MAX_CODE]; /* the displaced instructions rewritten to run at tramp_addr */
	size_t code_len;              /* bytes used in code[] */
	size_t displaced;             /* bytes of original code taken: whole instructions, >= need */
	int n_insn;                   /* instructions taken */
	int ends_flow;                /* 1 if the last taken instruction never falls through (jmp, ret): no jump back needed */
};
/* Relocate the whole instructions starting at `site` (bytes `code`, `avail` readable) covering at
 * least `need` bytes so that they run at `tramp_addr`. `func_code`/`func_len`/`func_addr` are the
 * enclosing function's bytes (may be NULL/0 when unknown: then a need > 1 is refused unless the
 * caller knows better), used to refuse a site when any branch in the function targets a byte
 * strictly inside (site, site+displaced). Returns 0, or -1 with a one-line reason in err. */
int reloc_build(const uint8_t *code, size_t avail, uint64_t site, size_t need,
                const uint8_t *func_code, size_t func_len, uint64_t func_addr,
                uint64_t tramp_addr, struct reloc_out *out, char *err, size_t errn);

#endif

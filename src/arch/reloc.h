/* reloc.h — the instruction relocator: whole instructions taken from a probe
 * site and rewritten to run at another address (a trampoline, or the
 * single-step slot of the ptrace engine), with RIP-relative operands and
 * relative branches fixed up.  x86-64 is src/arch/x86_64/reloc.c; the rules
 * are in docs/PROBES.md, "Relocation".  Host side: sonde computes the code,
 * the target only runs it. */
#ifndef SONDE_ARCH_RELOC_H
#define SONDE_ARCH_RELOC_H

#include <stddef.h>
#include <stdint.h>

#define RELOC_MAX_CODE 128
#define RELOC_MAX_EXT 16
struct reloc_out {
	uint8_t code[RELOC_MAX_CODE]; /* the displaced instructions rewritten to run at tramp_addr */
	size_t code_len;              /* bytes used in code[] */
	size_t displaced;             /* bytes of original code taken: whole instructions, >= need */
	int n_insn;                   /* instructions taken */
	int ends_flow;                /* 1 if the last taken instruction never falls through (jmp, ret): no jump back needed */
	int absolute;                 /* 1 if code[] holds an address of the original code as an immediate (a
	                               * relocated call's return address, an absolute jump): it runs right
	                               * only for the addresses it was built for, not moved with them */
	/* Where each taken instruction was (offset from site) and where its relocated form starts in
	 * code[] (RELOC_NOT_COPIED: after a jmp or ret, never reached): the first RELOC_MAP of them. */
	uint8_t src_off[16], dst_off[16];
	/* Where in code[] each rel32 is that reaches the original code (a branch's target, a RIP-
	 * relative operand, a return address's lea): what changes when code[] runs at another
	 * distance from it.  n_ext > RELOC_MAX_EXT: more than ext_off holds. */
	uint8_t ext_off[RELOC_MAX_EXT];
	int n_ext;
};
#define RELOC_MAP 16
#define RELOC_NOT_COPIED 0xff

/* Relocate the whole instructions starting at `site` (bytes `code`, `avail` readable) covering at
 * least `need` bytes so that they run at `tramp_addr`. `func_code`/`func_len`/`func_addr` are the
 * enclosing function's bytes (may be NULL/0 when unknown: then a need > 1 is refused unless the
 * caller knows better), used to refuse a site when any branch in the function targets a byte
 * strictly inside (site, site+displaced). Returns 0, or -1 with a one-line reason in err
 * (e.g. "rip-relative operand out of ±2 GiB from the trampoline", "branch target 0x... inside the
 * displaced bytes", "syscall cannot run displaced"). */
int reloc_build(const uint8_t *code, size_t avail, uint64_t site, size_t need,
                const uint8_t *func_code, size_t func_len, uint64_t func_addr,
                uint64_t tramp_addr, struct reloc_out *out, char *err, size_t errn);

/* reloc_build, with code that runs right wherever it moves together with
 * the original code (the distance kept): a call's return address is stored
 * from a RIP-relative lea, not pushed as an immediate.  out->absolute stays
 * 0 unless a branch is out of rel32 reach.  The stubs of functions patched
 * without a rebuild (src/instr/stubs.c): built before the program runs. */
int reloc_build_pic(const uint8_t *code, size_t avail, uint64_t site, size_t need,
                    const uint8_t *func_code, size_t func_len, uint64_t func_addr,
                    uint64_t tramp_addr, struct reloc_out *out, char *err, size_t errn);

/* One instruction copied to run at `to`, byte for byte except its RIP-relative
 * displacement, which is rewritten to reach the same address (the length does
 * not change).  No other fix-up: relative branches and calls are reloc_build's
 * (or the emulator's) job.  Returns the length written to out (i->len), or -1
 * with *why set when the displacement does not fit in 32 bits from `to`.  Used
 * by reloc_build and by the ptrace engine's out-of-line slots (ool.c). */
struct arch_insn;
int reloc_copy_insn(const struct arch_insn *i, uint64_t to, uint8_t *out, const char **why);

#endif

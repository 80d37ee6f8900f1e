/* remote_arch.h — what the GDB remote protocol client (src/probe/remote.c)
 * needs to know about an architecture: the breakpoint instruction, where the
 * pc is reported after it, the core registers in the stub's numbering (the
 * order of the `g` packet and of `p`/`P`, as the standard target.xml
 * features declare them), the return address (a register, or the word at
 * the stack pointer), and DWARF register numbers.  One instance per
 * architecture, in src/arch/<arch>/remote.c. */
#ifndef SONDE_ARCH_REMOTE_ARCH_H
#define SONDE_ARCH_REMOTE_ARCH_H

#include <stddef.h>
#include <stdint.h>

#define RARCH_MAX_BP 4

struct rarch {
	const char *name;           /* as in target.xml's <architecture> (prefix) */
	int elf_machine;            /* EM_* */
	int ptr_size;               /* bytes of a register and of an address */
	uint8_t bp_le[RARCH_MAX_BP]; /* the breakpoint instruction, little-endian target */
	uint8_t bp_be[RARCH_MAX_BP]; /* big-endian target */
	int bp_len;                 /* also the Z0 "kind" */
	int trap_pc_adj;            /* pc after a written breakpoint minus its address */
	int insn_align;             /* probed addresses must be multiples of this */
	int ncore;                  /* core registers at the start of `g`, each ptr_size */
	int pc, sp;                 /* stub register numbers */
	int ra;                     /* return-address register, -1: the word at sp */
	int ret_sp_adj;             /* sp after the return minus sp at the entry */
	/* Stub register number of DWARF register dw, -1 if not a core register. */
	int (*dwarf_to_stub)(int dw);
	const char *(*dwarf_name)(int dw);
};

extern const struct rarch rarch_x86_64, rarch_aarch64, rarch_mips;

#endif

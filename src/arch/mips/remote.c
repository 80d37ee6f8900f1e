/* remote.c — 32-bit MIPS (o32) for the remote protocol client
 * (arch/remote_arch.h): the `break` instruction (0x0000000d, in the target's
 * byte order: big-endian for gcc-mips-linux-gnu, little for mipsel), r0..r31
 * then sr, lo, hi, bad, cause, pc in gdb's mips-cpu.xml / mips-cp0.xml
 * numbering, the return address in $ra (r31), DWARF registers 0..31 = r0..r31.
 * The pc is reported on the break itself. */
#include "arch/remote_arch.h"

#include <elf.h>
#include <stdio.h>

static int dwarf_to_stub(int dw)
{
	return dw >= 0 && dw <= 31 ? dw : -1;
}

static const char *dwarf_name(int dw)
{
	static const char *const n[32] = {
		"zero", "at", "v0", "v1", "a0", "a1", "a2", "a3", "t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7",
		"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "t8", "t9", "k0", "k1", "gp", "sp", "fp", "ra",
	};
	return dw >= 0 && dw < 32 ? n[dw] : "?";
}

const struct rarch rarch_mips = {
	.name = "mips",
	.elf_machine = EM_MIPS,
	.ptr_size = 4,
	.bp_le = { 0x0d, 0, 0, 0 },
	.bp_be = { 0, 0, 0, 0x0d },
	.bp_len = 4,
	.trap_pc_adj = 0,
	.insn_align = 4,
	.ncore = 38,
	.pc = 37,
	.sp = 29,
	.ra = 31,
	.ret_sp_adj = 0,
	.dwarf_to_stub = dwarf_to_stub,
	.dwarf_name = dwarf_name,
};

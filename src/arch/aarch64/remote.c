/* remote.c — AArch64 for the remote protocol client (arch/remote_arch.h):
 * BRK #0 (the pc is reported on the BRK itself), x0..x30, sp, pc in the
 * numbering of gdb's aarch64-core.xml, the return address in x30 (the link
 * register), DWARF registers 0..31 = x0..x30, sp. */
#include "arch/remote_arch.h"
#include "arch/aarch64/brk.h"

#include <elf.h>
#include <stdio.h>

static int dwarf_to_stub(int dw)
{
	return dw >= 0 && dw <= 31 ? dw : -1;
}

static const char *dwarf_name(int dw)
{
	static char buf[8];
	if (dw == 31)
		return "sp";
	if (dw == 29)
		return "x29 (fp)";
	snprintf(buf, sizeof buf, "x%d", dw);
	return buf;
}

const struct rarch rarch_aarch64 = {
	.name = "aarch64",
	.elf_machine = EM_AARCH64,
	.ptr_size = 8,
	.bp_le = { AARCH64_BP_INSN & 0xff, (AARCH64_BP_INSN >> 8) & 0xff, (AARCH64_BP_INSN >> 16) & 0xff,
	           AARCH64_BP_INSN >> 24 },
	.bp_be = { AARCH64_BP_INSN >> 24, (AARCH64_BP_INSN >> 16) & 0xff, (AARCH64_BP_INSN >> 8) & 0xff,
	           AARCH64_BP_INSN & 0xff },
	.bp_len = AARCH64_BP_LEN,
	.trap_pc_adj = AARCH64_TRAP_PC_ADJ,
	.insn_align = 4,
	.ncore = 33,
	.pc = 32,
	.sp = 31,
	.ra = 30,
	.ret_sp_adj = 0,
	.dwarf_to_stub = dwarf_to_stub,
	.dwarf_name = dwarf_name,
};

/* remote.c — x86-64 for the remote protocol client (arch/remote_arch.h):
 * int3 (the pc is reported one byte past it when written with M; a stub's
 * own Z0 breakpoint reports it on the int3), rax..r15, rip in gdb's
 * 64bit-core.xml numbering, the return address in the word at rsp on entry
 * (sp 8 higher after the ret), and the System V DWARF numbering (rax, rdx,
 * rcx, rbx, rsi, rdi, rbp, rsp, r8..r15, return address).  Branch probes:
 * the local engine's decoder and condition (arch.h: arch_decode,
 * arch_cond_true) on eflags (register 17) and rcx. */
#include "arch/remote_arch.h"
#include "arch/arch.h"

#include <capstone/capstone.h>
#include <string.h>

#include <elf.h>

static int dwarf_to_stub(int dw)
{
	/* DWARF order rax rdx rcx rbx rsi rdi rbp rsp; gdb's rax rbx rcx rdx rsi rdi rbp rsp. */
	static const int m[17] = { 0, 3, 2, 1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	return dw >= 0 && dw <= 16 ? m[dw] : -1;
}

static const char *dwarf_name(int dw)
{
	static const char *const n[17] = { "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
		"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip" };
	return dw >= 0 && dw <= 16 ? n[dw] : "?";
}

static int decode(const uint8_t *code, size_t n, uint64_t addr, int big_endian, struct rbranch *o)
{
	(void)big_endian;
	struct arch_insn in;
	if (arch_decode(code, n, addr, &in))
		return -1;
	memset(o, 0, sizeof *o);
	o->addr = addr;
	o->len = in.len;
	o->next = addr + (uint64_t)in.len;
	o->ra = o->rb = -1;
	o->kind = in.kind == AI_JCC ? RB_COND : in.kind == AI_JMP || in.kind == AI_RET ? RB_END : RB_OTHER;
	if (o->kind == RB_COND) {
		o->cond = in.id;
		o->target = arch_branch_target(&in);
		snprintf(o->text, sizeof o->text, "%.63s", in.text);
	}
	return 0;
}

static int taken(const struct rbranch *b, rarch_reg_fn reg, void *ctx)
{
	struct arch_insn in = { .id = b->cond };
	arch_regs r;
	uint64_t v;
	memset(&r, 0, sizeof r);
	if (reg(ctx, 17, &v))
		return -1;
	r.eflags = v;
	if (b->cond == X86_INS_JRCXZ || b->cond == X86_INS_JECXZ) {
		if (reg(ctx, 2, &v))
			return -1;
		r.rcx = v;
	}
	return arch_cond_true(&in, &r);
}

const struct rarch rarch_x86_64 = {
	.name = "i386:x86-64",
	.elf_machine = EM_X86_64,
	.ptr_size = 8,
	.bp_le = { 0xcc },
	.bp_be = { 0xcc },
	.bp_len = 1,
	.trap_pc_adj = 1,
	.insn_align = 1,
	.ncore = 17,
	.pc = 16,
	.sp = 7,
	.ra = -1,
	.ret_sp_adj = 8,
	.dwarf_to_stub = dwarf_to_stub,
	.dwarf_name = dwarf_name,
	.flags = 17,
	.decode = decode,
	.taken = taken,
	.emulate = rarch_x86_64_emulate,
};

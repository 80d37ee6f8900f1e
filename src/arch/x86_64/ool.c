/* ool.c — x86-64 out-of-line slot code and system-call injection code.
 * A slot holds the displaced instruction, its RIP-relative displacement
 * rewritten for the slot's address (reloc_copy_insn), then an int3 (post-handler stop) or an
 * absolute `jmp *0(%rip)` back to the instruction that follows the original. */
#include "arch/arch.h"
#include "arch/reloc.h"

#include <string.h>

const uint8_t arch_syscall_code[ARCH_SYSCALL_CODE_LEN] = { 0x0f, 0x05, 0xcc };

int arch_ool_build(const struct arch_insn *i, uint64_t slot, int post_trap, uint8_t *out,
                   const char **why)
{
	if (i->kind == AI_BAD) {
		*why = "instruction depends on its own address and cannot be displaced";
		return -1;
	}
	if (i->kind != AI_OTHER && !i->emulable) {
		*why = "branch with an operand form that is not supported";
		return -1;
	}
	/* The one-instruction copy is the relocator's (src/arch/x86_64/reloc.c). */
	if (reloc_copy_insn(i, slot, out, why) < 0)
		return -1;
	int n = i->len;
	if (post_trap) {
		out[n++] = 0xcc;
	} else {
		static const uint8_t jmp[6] = { 0xff, 0x25, 0, 0, 0, 0 };
		uint64_t back = i->addr + (uint64_t)i->len;
		memcpy(out + n, jmp, 6);
		n += 6;
		memcpy(out + n, &back, 8);
		n += 8;
	}
	return n;
}

void arch_syscall_regs(arch_regs *r, uint64_t pc, long nr, const uint64_t args[6])
{
	r->rip = pc;
	r->rax = (uint64_t)nr;
	r->orig_rax = (uint64_t)-1; /* not in a system call: no restart */
	r->rdi = args[0];
	r->rsi = args[1];
	r->rdx = args[2];
	r->r10 = args[3];
	r->r8 = args[4];
	r->r9 = args[5];
}

int64_t arch_syscall_result(const arch_regs *r)
{
	return (int64_t)r->rax;
}

/* call.c — x86-64 registers for a function call injected into a stopped
 * thread (System V AMD64 ABI), its result, and whether the thread stopped
 * on its way out of a system call. */
#include "arch/arch.h"

#include <sys/syscall.h>

void arch_call_regs(arch_regs *r, uint64_t func, uint64_t sp, const uint64_t args[6])
{
	r->rip = func;
	/* The call pushes the return address: at the entry sp is 8 mod 16. */
	r->rsp = (sp & ~(uint64_t)(ARCH_STACK_ALIGN - 1)) - 8;
	r->rdi = args[0];
	r->rsi = args[1];
	r->rdx = args[2];
	r->rcx = args[3];
	r->r8 = args[4];
	r->r9 = args[5];
	r->rax = 0;                 /* no vector arguments, for variadic callees */
	/* Not in a system call: the kernel must not "restart" one at func when
	 * the thread resumes (it would rewind rip by 2 and redo orig_rax). */
	r->orig_rax = (uint64_t)-1;
	/* Direction flag clear at a call, as the ABI requires. */
	r->eflags &= ~(1ull << 10);
}

uint64_t arch_call_result(const arch_regs *r)
{
	return r->rax;
}

int arch_in_syscall(const arch_regs *r)
{
	return (int64_t)r->orig_rax >= 0;
}

int arch_in_memory_syscall(const arch_regs *r)
{
	switch ((int64_t)r->orig_rax) {
	case SYS_brk: case SYS_mmap: case SYS_munmap: case SYS_mremap: case SYS_madvise: case SYS_mprotect:
		return 1;
	default:
		return 0;
	}
}

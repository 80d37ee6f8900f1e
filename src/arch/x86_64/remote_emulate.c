/* remote_emulate.c — x86-64 instructions that sonde executes itself at a
 * remote breakpoint (rarch.emulate, arch/remote_arch.h) instead of a single
 * step: the local engine's emulator (emulate.c: nop/endbr64, push, pop, mov
 * reg<-reg/imm, lea, jmp, jcc, call, ret) on the registers read from the stub
 * (gdb's 64bit-core.xml numbering: rax rbx rcx rdx rsi rdi rbp rsp r8..r15
 * = 0..15, rip 16, eflags 17).  A push of a register needs only that
 * register, rsp and rip (gdbserver sends rbp, rsp and rip in its stop
 * replies: a function's `push %rbp` costs no read); the others read them all. */
#include "arch/remote_arch.h"
#include "arch/arch.h"

#include <capstone/capstone.h>
#include <string.h>

/* Stub number of a 64-bit general register, -1 otherwise. */
static int stub_reg(int cs)
{
	static const int r64[16] = { X86_REG_RAX, X86_REG_RBX, X86_REG_RCX, X86_REG_RDX, X86_REG_RSI, X86_REG_RDI,
		X86_REG_RBP, X86_REG_RSP, X86_REG_R8, X86_REG_R9, X86_REG_R10, X86_REG_R11, X86_REG_R12,
		X86_REG_R13, X86_REG_R14, X86_REG_R15 };
	for (int i = 0; i < 16; i++)
		if (r64[i] == cs)
			return i;
	return -1;
}

static unsigned long long *field(arch_regs *r, int stub)
{
	unsigned long long *f[18] = { &r->rax, &r->rbx, &r->rcx, &r->rdx, &r->rsi, &r->rdi, &r->rbp, &r->rsp,
		&r->r8, &r->r9, &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15, &r->rip, &r->eflags };
	return f[stub];
}

struct mem_ctx {
	struct remu *u;
};

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct mem_ctx *m = ctx;
	return m->u->read(m->u->ctx, addr, buf, n);
}

/* The one store an emulated instruction makes (push, call), kept for the
 * engine to send; a second store is not emulated. */
static int mem_write(void *ctx, uint64_t addr, const void *buf, size_t n)
{
	struct mem_ctx *m = ctx;
	if (m->u->store_len || n > sizeof m->u->store)
		return -1;
	m->u->store_addr = addr;
	m->u->store_len = (int)n;
	memcpy(m->u->store, buf, n);
	return 0;
}

int rarch_x86_64_emulate(const uint8_t *code, size_t n, uint64_t pc, int big_endian, struct remu *u)
{
	(void)big_endian;
	struct arch_insn in;
	u->nset = 0;
	u->store_len = 0;
	if (arch_decode(code, n, pc, &in) || !in.emulable)
		return 1;
	/* The registers it may read: all of them but for a nop or a push of a register. */
	int need[18], nneed = 0;
	int push_reg = in.kind == AI_PUSH && in.op[0].type == 1 ? stub_reg(in.op[0].reg) : -1;
	if (in.kind == AI_NOP) {
		need[nneed++] = 16;
	} else if (push_reg >= 0) {
		need[nneed++] = push_reg;
		need[nneed++] = 7;
		need[nneed++] = 16;
	} else {
		for (int i = 0; i < 18; i++)
			need[nneed++] = i;
	}
	arch_regs r, before;
	memset(&r, 0, sizeof r);
	for (int i = 0; i < nneed; i++) {
		uint64_t v;
		if (u->reg(u->ctx, need[i], &v))
			return -1;
		*field(&r, need[i]) = v;
	}
	before = r;
	struct mem_ctx mc = { u };
	struct arch_mem m = { mem_read, mem_write, &mc };
	int rc = arch_emulate(&in, &r, &m);
	if (rc) {
		u->store_len = 0;
		return rc;
	}
	for (int i = 0; i < 16; i++)
		if (*field(&r, i) != *field(&before, i)) {
			if (u->nset >= REMU_MAX_SET - 1)
				return 1;
			u->set[u->nset].regno = i;
			u->set[u->nset].val = *field(&r, i);
			u->nset++;
		}
	u->set[u->nset].regno = 16;
	u->set[u->nset].val = r.rip;
	u->nset++;
	return 0;
}

/* emulate.c — x86-64 emulation of a displaced instruction on the saved
 * registers of a stopped thread: nop/endbr64, push, pop, mov reg<-reg/imm,
 * lea, jmp, jcc, call, ret.  Memory goes through the caller's accessor; a
 * failed access leaves the registers untouched so the engine can let the
 * program execute the original instruction and take its own fault. */
#include "arch/arch.h"

#include <capstone/capstone.h>
#include <string.h>

static unsigned long long *gpr(arch_regs *r, int reg, int *size)
{
	int s = 8;
	unsigned long long *p = NULL;
	switch (reg) {
	case X86_REG_EAX: s = 4; /* fallthrough */ case X86_REG_RAX: p = &r->rax; break;
	case X86_REG_EBX: s = 4; /* fallthrough */ case X86_REG_RBX: p = &r->rbx; break;
	case X86_REG_ECX: s = 4; /* fallthrough */ case X86_REG_RCX: p = &r->rcx; break;
	case X86_REG_EDX: s = 4; /* fallthrough */ case X86_REG_RDX: p = &r->rdx; break;
	case X86_REG_ESI: s = 4; /* fallthrough */ case X86_REG_RSI: p = &r->rsi; break;
	case X86_REG_EDI: s = 4; /* fallthrough */ case X86_REG_RDI: p = &r->rdi; break;
	case X86_REG_EBP: s = 4; /* fallthrough */ case X86_REG_RBP: p = &r->rbp; break;
	case X86_REG_ESP: s = 4; /* fallthrough */ case X86_REG_RSP: p = &r->rsp; break;
	case X86_REG_R8D: s = 4; /* fallthrough */ case X86_REG_R8: p = &r->r8; break;
	case X86_REG_R9D: s = 4; /* fallthrough */ case X86_REG_R9: p = &r->r9; break;
	case X86_REG_R10D: s = 4; /* fallthrough */ case X86_REG_R10: p = &r->r10; break;
	case X86_REG_R11D: s = 4; /* fallthrough */ case X86_REG_R11: p = &r->r11; break;
	case X86_REG_R12D: s = 4; /* fallthrough */ case X86_REG_R12: p = &r->r12; break;
	case X86_REG_R13D: s = 4; /* fallthrough */ case X86_REG_R13: p = &r->r13; break;
	case X86_REG_R14D: s = 4; /* fallthrough */ case X86_REG_R14: p = &r->r14; break;
	case X86_REG_R15D: s = 4; /* fallthrough */ case X86_REG_R15: p = &r->r15; break;
	default: return NULL;
	}
	if (size)
		*size = s;
	return p;
}

static int reg_value(const arch_regs *r, int reg, uint64_t next_rip, uint64_t *v)
{
	if (reg == X86_REG_INVALID) {
		*v = 0;
		return 0;
	}
	if (reg == X86_REG_RIP) {
		*v = next_rip;
		return 0;
	}
	int s;
	unsigned long long *p = gpr((arch_regs *)r, reg, &s);
	if (!p)
		return -1;
	*v = s == 4 ? (uint32_t)*p : *p;
	return 0;
}

static int mem_addr(const struct arch_op *o, const arch_regs *r, uint64_t next_rip, uint64_t *a)
{
	uint64_t b, x;
	if (reg_value(r, o->base, next_rip, &b) || reg_value(r, o->index, next_rip, &x))
		return -1;
	uint64_t v = b + x * (uint64_t)(o->scale ? o->scale : 1) + (uint64_t)o->disp;
	if (o->seg == X86_REG_FS)
		v += r->fs_base;
	else if (o->seg == X86_REG_GS)
		v += r->gs_base;
	else if (o->seg != X86_REG_INVALID && o->seg != 0)
		return -1;
	*a = v;
	return 0;
}

int arch_cond_true(const struct arch_insn *i, const arch_regs *r)
{
	uint64_t f = r->eflags;
	int cf = !!(f & 1), pf = !!(f & 4), zf = !!(f & 0x40), sf = !!(f & 0x80), of = !!(f & 0x800);
	switch (i->id) {
	case X86_INS_JO: return of;
	case X86_INS_JNO: return !of;
	case X86_INS_JB: return cf;
	case X86_INS_JAE: return !cf;
	case X86_INS_JE: return zf;
	case X86_INS_JNE: return !zf;
	case X86_INS_JBE: return cf || zf;
	case X86_INS_JA: return !cf && !zf;
	case X86_INS_JS: return sf;
	case X86_INS_JNS: return !sf;
	case X86_INS_JP: return pf;
	case X86_INS_JNP: return !pf;
	case X86_INS_JL: return sf != of;
	case X86_INS_JGE: return sf == of;
	case X86_INS_JLE: return zf || sf != of;
	case X86_INS_JG: return !zf && sf == of;
	case X86_INS_JRCXZ: return r->rcx == 0;
	case X86_INS_JECXZ: return (uint32_t)r->rcx == 0;
	}
	return 0;
}

/* Value of a jmp/call operand: the destination. */
static int branch_dest(const struct arch_insn *i, const arch_regs *r, const struct arch_mem *m,
                       uint64_t next, uint64_t *dest)
{
	const struct arch_op *o = &i->op[0];
	if (o->type == 2) {
		*dest = (uint64_t)o->imm;
		return 0;
	}
	if (o->type == 1)
		return reg_value(r, o->reg, next, dest) ? 1 : 0;
	uint64_t a;
	if (mem_addr(o, r, next, &a))
		return 1;
	return m->read(m->ctx, a, dest, 8) ? -1 : 0;
}

int arch_emulate(const struct arch_insn *i, arch_regs *r, const struct arch_mem *m)
{
	if (!i->emulable)
		return 1;
	uint64_t next = i->addr + (uint64_t)i->len;
	const struct arch_op *a = &i->op[0], *b = &i->op[1];
	uint64_t v, dest;
	int rc, s;
	switch (i->kind) {
	case AI_NOP:
		r->rip = next;
		return 0;
	case AI_PUSH:
		if (a->type == 2)
			v = (uint64_t)a->imm;
		else if (reg_value(r, a->reg, next, &v))
			return 1;
		if (m->write(m->ctx, r->rsp - 8, &v, 8))
			return -1;
		r->rsp -= 8;
		r->rip = next;
		return 0;
	case AI_POP: {
		unsigned long long *p = gpr(r, a->reg, &s);
		if (!p || s != 8)
			return 1;
		if (m->read(m->ctx, r->rsp, &v, 8))
			return -1;
		r->rsp += 8;
		*p = v;
		r->rip = next;
		return 0;
	}
	case AI_MOV: case AI_LEA: {
		unsigned long long *p = gpr(r, a->reg, &s);
		if (!p)
			return 1;
		if (i->kind == AI_LEA) {
			if (mem_addr(b, r, next, &v))
				return 1;
		} else if (b->type == 2) {
			v = (uint64_t)b->imm;
		} else if (reg_value(r, b->reg, next, &v)) {
			return 1;
		}
		*p = s == 4 ? (uint32_t)v : v;
		r->rip = next;
		return 0;
	}
	case AI_JMP:
		if ((rc = branch_dest(i, r, m, next, &dest)))
			return rc;
		r->rip = dest;
		return 0;
	case AI_JCC:
		r->rip = arch_cond_true(i, r) ? (uint64_t)a->imm : next;
		return 0;
	case AI_CALL:
		if ((rc = branch_dest(i, r, m, next, &dest)))
			return rc;
		if (m->write(m->ctx, r->rsp - 8, &next, 8))
			return -1;
		r->rsp -= 8;
		r->rip = dest;
		return 0;
	case AI_RET:
		if (m->read(m->ctx, r->rsp, &dest, 8))
			return -1;
		r->rsp += 8 + (i->nops == 1 && a->type == 2 ? (uint64_t)a->imm : 0);
		r->rip = dest;
		return 0;
	}
	return 1;
}

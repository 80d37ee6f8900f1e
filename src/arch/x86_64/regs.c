/* regs.c — x86-64 DWARF register numbering (System V psABI) over the
 * ptrace register sets: integer registers, xmm0-15 and the x87 stack. */
#include "arch/arch.h"

#include <stdio.h>
#include <string.h>

static const char *const names[] = {
	"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip",
};

int arch_dwarf_reg(const arch_regs *r, int regno, uint64_t *val)
{
	const unsigned long long *p;
	switch (regno) {
	case 0: p = &r->rax; break;
	case 1: p = &r->rdx; break;
	case 2: p = &r->rcx; break;
	case 3: p = &r->rbx; break;
	case 4: p = &r->rsi; break;
	case 5: p = &r->rdi; break;
	case 6: p = &r->rbp; break;
	case 7: p = &r->rsp; break;
	case 8: p = &r->r8; break;
	case 9: p = &r->r9; break;
	case 10: p = &r->r10; break;
	case 11: p = &r->r11; break;
	case 12: p = &r->r12; break;
	case 13: p = &r->r13; break;
	case 14: p = &r->r14; break;
	case 15: p = &r->r15; break;
	case 16: p = &r->rip; break;
	case 49: p = &r->eflags; break;
	default: return -1;
	}
	*val = *p;
	return 0;
}

int arch_dwarf_is_fp(int regno)
{
	return regno >= 17 && regno <= 40;
}

int arch_dwarf_fpreg(const arch_fpregs *fp, int regno, uint8_t buf[16])
{
	memset(buf, 0, 16);
	if (regno >= 17 && regno <= 32) {
		memcpy(buf, (const char *)fp->xmm_space + (regno - 17) * 16, 16);
		return 0;
	}
	if (regno >= 33 && regno <= 40) {
		/* st(i) lives in slot (top + i) of st_space, 16 bytes each, 10 used. */
		memcpy(buf, (const char *)fp->st_space + (regno - 33) * 16, 10);
		return 0;
	}
	return -1;
}

const char *arch_dwarf_reg_name(int regno)
{
	static char buf[16];
	if (regno >= 0 && regno <= 16)
		return names[regno];
	if (regno >= 17 && regno <= 32) {
		snprintf(buf, sizeof buf, "xmm%d", regno - 17);
		return buf;
	}
	if (regno >= 33 && regno <= 40) {
		buf[0] = 's'; buf[1] = 't'; buf[2] = (char)('0' + regno - 33); buf[3] = 0;
		return buf;
	}
	return "?";
}

/* decode.c — x86-64 instruction decoding for the probe engine (capstone):
 * length, operands, RIP-relative displacement offset, and the class that
 * tells the engine whether to emulate the instruction or run it out of line.
 *
 * libcapstone is loaded with dlopen at the first decode, not linked: only
 * the probe engine decodes, and loading it (with its relocations) was part
 * of the start of every sonde command, `record -p`'s time to live among
 * them (docs/ATTACH.md).  Without it, decoding fails as for bad bytes. */
#include "arch/arch.h"

#include <capstone/capstone.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

const uint8_t arch_bp_insn[ARCH_BP_LEN] = { 0xcc };

#define STR_(x) #x
#define STR(x) STR_(x)
#define CAPSTONE_SONAME "libcapstone.so." STR(CS_API_MAJOR)

static struct {
	cs_err (*open)(cs_arch, cs_mode, csh *);
	cs_err (*option)(csh, cs_opt_type, size_t);
	size_t (*disasm)(csh, const uint8_t *, size_t, uint64_t, size_t, cs_insn **);
	void (*free)(cs_insn *, size_t);
	cs_insn *(*malloc)(csh);
	bool (*iter)(csh, const uint8_t **, size_t *, uint64_t *, cs_insn *);
} capstone;
static cs_insn *insn; /* the one instruction arch_decode fills (cs_disasm_iter), with the handle */

static int load_capstone(void)
{
	void *lib = dlopen(CAPSTONE_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		lib = dlopen("libcapstone.so", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return -1;
	*(void **)&capstone.open = dlsym(lib, "cs_open");
	*(void **)&capstone.option = dlsym(lib, "cs_option");
	*(void **)&capstone.disasm = dlsym(lib, "cs_disasm");
	*(void **)&capstone.free = dlsym(lib, "cs_free");
	*(void **)&capstone.malloc = dlsym(lib, "cs_malloc");
	*(void **)&capstone.iter = dlsym(lib, "cs_disasm_iter");
	return capstone.open && capstone.option && capstone.disasm && capstone.free ? 0 : -1;
}

static csh cs_handle(void)
{
	static csh h;
	static int state; /* 0 untried, 1 ok, -1 failed */
	if (state == 0) {
		state = -1;
		if (load_capstone() == 0 && capstone.open(CS_ARCH_X86, CS_MODE_64, &h) == CS_ERR_OK &&
		    capstone.option(h, CS_OPT_DETAIL, CS_OPT_ON) == CS_ERR_OK) {
			state = 1;
			if (capstone.malloc && capstone.iter)
				insn = capstone.malloc(h); /* no allocation per instruction (else cs_disasm's) */
		}
	}
	return state == 1 ? h : 0;
}

static int is_gpr64(int reg)
{
	switch (reg) {
	case X86_REG_RAX: case X86_REG_RBX: case X86_REG_RCX: case X86_REG_RDX:
	case X86_REG_RSI: case X86_REG_RDI: case X86_REG_RBP: case X86_REG_RSP:
	case X86_REG_R8: case X86_REG_R9: case X86_REG_R10: case X86_REG_R11:
	case X86_REG_R12: case X86_REG_R13: case X86_REG_R14: case X86_REG_R15:
		return 1;
	}
	return 0;
}

static int is_jcc(int id)
{
	switch (id) {
	case X86_INS_JAE: case X86_INS_JA: case X86_INS_JBE: case X86_INS_JB:
	case X86_INS_JE: case X86_INS_JGE: case X86_INS_JG: case X86_INS_JLE:
	case X86_INS_JL: case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP:
	case X86_INS_JNS: case X86_INS_JO: case X86_INS_JP: case X86_INS_JS:
	case X86_INS_JRCXZ: case X86_INS_JECXZ:
		return 1;
	}
	return 0;
}

static int in_group(const cs_detail *d, int g)
{
	for (int i = 0; i < d->groups_count; i++)
		if (d->groups[i] == g)
			return 1;
	return 0;
}

static void classify(struct arch_insn *o, const cs_detail *d)
{
	const struct arch_op *a = &o->op[0], *b = &o->op[1];
	o->kind = AI_OTHER;
	switch (o->id) {
	case X86_INS_NOP: case X86_INS_ENDBR64:
		o->kind = AI_NOP;
		break;
	case X86_INS_PUSH:
		if (o->nops == 1 && ((a->type == 1 && is_gpr64(a->reg)) || a->type == 2))
			o->kind = AI_PUSH;
		break;
	case X86_INS_POP:
		if (o->nops == 1 && a->type == 1 && is_gpr64(a->reg) && a->reg != X86_REG_RSP)
			o->kind = AI_POP;
		break;
	case X86_INS_MOV:
		if (o->nops == 2 && a->type == 1 && (a->size == 4 || a->size == 8) &&
		    ((b->type == 1 && b->size == a->size) || b->type == 2))
			o->kind = AI_MOV;
		break;
	case X86_INS_LEA:
		if (o->nops == 2 && a->type == 1 && (a->size == 4 || a->size == 8) && b->type == 3 &&
		    b->seg == X86_REG_INVALID && o->bytes[0] != 0x67)
			o->kind = AI_LEA;
		break;
	case X86_INS_JMP:
		o->kind = AI_JMP;
		break;
	case X86_INS_CALL:
		o->kind = AI_CALL;
		break;
	case X86_INS_RET:
		o->kind = AI_RET;
		break;
	case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE: case X86_INS_XBEGIN:
	case X86_INS_INT3: case X86_INS_JCXZ:
		o->kind = AI_BAD;
		break;
	default:
		if (is_jcc(o->id))
			o->kind = AI_JCC;
		else if (in_group(d, CS_GRP_BRANCH_RELATIVE))
			o->kind = AI_BAD;
		break;
	}
	/* Branches with a memory or register operand of an unusual size are left alone. */
	if ((o->kind == AI_JMP || o->kind == AI_CALL) && o->nops == 1) {
		if (a->type == 1 && !is_gpr64(a->reg))
			o->kind = AI_BAD;
		if (a->type == 3 && (a->size != 8 || a->seg != X86_REG_INVALID))
			o->kind = AI_BAD;
	}
	o->emulable = o->kind != AI_OTHER && o->kind != AI_BAD;
}

int arch_decode(const uint8_t *buf, size_t n, uint64_t addr, struct arch_insn *o)
{
	csh h = cs_handle();
	cs_insn *ci = insn;
	memset(o, 0, sizeof *o);
	if (!h)
		return -1;
	if (ci) {
		const uint8_t *p = buf;
		size_t left = n;
		uint64_t a = addr;
		if (!capstone.iter(h, &p, &left, &a, ci))
			return -1;
	} else if (capstone.disasm(h, buf, n, addr, 1, &ci) != 1) {
		return -1;
	}
	o->addr = addr;
	o->len = ci->size;
	memcpy(o->bytes, ci->bytes, ci->size);
	o->id = (int)ci->id;
	/* "mnemonic op_str", without printf (every instruction of a module goes through here) */
	size_t lm = strnlen(ci->mnemonic, sizeof ci->mnemonic), lo = strnlen(ci->op_str, sizeof ci->op_str);
	if (lm > sizeof o->text - 1)
		lm = sizeof o->text - 1;
	memcpy(o->text, ci->mnemonic, lm);
	if (lo && lm + 1 < sizeof o->text - 1) {
		o->text[lm++] = ' ';
		if (lo > sizeof o->text - 1 - lm)
			lo = sizeof o->text - 1 - lm;
		memcpy(o->text + lm, ci->op_str, lo);
		lm += lo;
	}
	o->text[lm] = 0;
	const cs_x86 *x = &ci->detail->x86;
	o->nops = x->op_count > 4 ? 4 : x->op_count;
	for (int k = 0; k < o->nops; k++) {
		const cs_x86_op *s = &x->operands[k];
		struct arch_op *d = &o->op[k];
		d->size = s->size;
		if (s->type == X86_OP_REG) {
			d->type = 1;
			d->reg = s->reg;
		} else if (s->type == X86_OP_IMM) {
			d->type = 2;
			d->imm = s->imm;
		} else if (s->type == X86_OP_MEM) {
			d->type = 3;
			d->base = s->mem.base;
			d->index = s->mem.index;
			d->scale = s->mem.scale;
			d->disp = s->mem.disp;
			d->seg = s->mem.segment;
			if (s->mem.base == X86_REG_RIP) {
				o->rip_rel = 1;
				o->disp_off = x->encoding.disp_offset;
			}
		}
	}
	classify(o, ci->detail);
	o->groups = (in_group(ci->detail, CS_GRP_INT) ? ARCH_GRP_INT : 0) |
	            (in_group(ci->detail, CS_GRP_IRET) ? ARCH_GRP_IRET : 0) |
	            (in_group(ci->detail, CS_GRP_PRIVILEGE) ? ARCH_GRP_PRIV : 0);
	if (ci != insn)
		capstone.free(ci, 1);
	return 0;
}

uint64_t arch_branch_target(const struct arch_insn *i)
{
	if ((i->kind == AI_JMP || i->kind == AI_JCC || i->kind == AI_CALL) && i->nops >= 1 &&
	    i->op[0].type == 2)
		return (uint64_t)i->op[0].imm;
	return 0;
}

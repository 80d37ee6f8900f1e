/* reloc.c — x86-64 instruction relocator (src/arch/reloc.h): the whole
 * instructions displaced by a probe's jump, rewritten to run in a trampoline.
 *
 * What changes when an instruction moves is everything that depends on its
 * own address: RIP-relative operands (displacement recomputed), relative
 * branches (re-targeted, short forms widened to rel32, or an absolute
 * `jmp *0(%rip)` when the target is out of ±2 GiB of the trampoline), `call`
 * (the return address it pushes: it must stay the ORIGINAL one, so that the
 * callee, the unwinder and return-address probes see the program as it is; the
 * call becomes "push the original return address; jmp target"), and the
 * branches that have no rel32 form (loop/loopcc/jrcxz/jecxz: kept short, over
 * a long jump).  Instructions that cannot run elsewhere (system calls, traps,
 * privileged ones, xbegin, far transfers) are refused, and so is a site when a
 * branch of its function lands strictly inside the displaced bytes: the jump
 * written over them would be cut in half.  Rules and limits: docs/PROBES.md,
 * "Relocation". */
#include "arch/reloc.h"

#include "arch/arch.h"

#include <capstone/capstone.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int reloc_copy_insn(const struct arch_insn *i, uint64_t to, uint8_t *out, const char **why)
{
	memcpy(out, i->bytes, (size_t)i->len);
	if (!i->rip_rel)
		return i->len;
	if (i->disp_off <= 0 || i->disp_off + 4 > i->len) {
		*why = "RIP-relative operand without a 32-bit displacement";
		return -1;
	}
	/* The length does not change, so the next-instruction address the
	 * displacement is relative to moves by exactly to - addr. */
	int32_t d;
	memcpy(&d, out + i->disp_off, 4);
	int64_t nd = (int64_t)d + (int64_t)(i->addr - to);
	if (nd < INT32_MIN || nd > INT32_MAX) {
		*why = "rip-relative operand out of ±2 GiB from the new address";
		return -1;
	}
	d = (int32_t)nd;
	memcpy(out + i->disp_off, &d, 4);
	return i->len;
}

/* ---- the code writer ---- */

struct emit {
	uint8_t *p;
	size_t n;
	uint64_t at;  /* address where p[0] will run */
	int full;     /* RELOC_MAX_CODE exceeded */
	int absolute; /* an address of the original code written as an immediate */
	int pic;      /* no such immediate: a call's return address stored from a lea */
	uint8_t ext[RELOC_MAX_EXT]; /* where each rel32 that reaches the original code is */
	int n_ext;    /* RELOC_MAX_EXT + 1: more than that */
};

/* The rel32 about to be written at e->n reaches the original code. */
static void mark_ext(struct emit *e, size_t at)
{
	if (e->n_ext < RELOC_MAX_EXT && at < 256)
		e->ext[e->n_ext++] = (uint8_t)at;
	else
		e->n_ext = RELOC_MAX_EXT + 1;
}

static void put(struct emit *e, const void *b, size_t n)
{
	if (e->full || e->n + n > RELOC_MAX_CODE) {
		e->full = 1;
		return;
	}
	memcpy(e->p + e->n, b, n);
	e->n += n;
}

static void put1(struct emit *e, uint8_t b) { put(e, &b, 1); }
static void put4(struct emit *e, uint32_t v) { put(e, &v, 4); }  /* little-endian host */
static void put8(struct emit *e, uint64_t v) { put(e, &v, 8); }
static uint64_t here(const struct emit *e) { return e->at + e->n; }
static int fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

#define JMP_REL32_LEN 5
#define JMP_ABS_LEN 14  /* jmp *0(%rip); .quad target */

/* Length of the jump emit_jmp() writes at address `at`. */
static int jmp_len(uint64_t at, uint64_t target)
{
	return fits32((int64_t)(target - (at + JMP_REL32_LEN))) ? JMP_REL32_LEN : JMP_ABS_LEN;
}

static void emit_jmp(struct emit *e, uint64_t target)
{
	if (jmp_len(here(e), target) == JMP_REL32_LEN) {
		put1(e, 0xe9);
		mark_ext(e, e->n);
		put4(e, (uint32_t)(int32_t)(int64_t)(target - (here(e) + 4)));
	} else {
		static const uint8_t abs_jmp[6] = { 0xff, 0x25, 0, 0, 0, 0 };
		e->absolute = 1;
		put(e, abs_jmp, sizeof abs_jmp);
		put8(e, target);
	}
}

/* jcc with condition code cc (the low nibble of 0x7X / 0x0f 0x8X). */
static void emit_jcc(struct emit *e, int cc, uint64_t target)
{
	int64_t rel = (int64_t)(target - (here(e) + 6));
	if (fits32(rel)) {
		put1(e, 0x0f);
		put1(e, (uint8_t)(0x80 | cc));
		mark_ext(e, e->n);
		put4(e, (uint32_t)(int32_t)rel);
	} else { /* the opposite condition jumps over an absolute jump */
		put1(e, (uint8_t)(0x70 | (cc ^ 1)));
		put1(e, JMP_ABS_LEN);
		emit_jmp(e, target);
	}
}

/* Push a 64-bit value without a scratch register and without touching the
 * flags: push imm32 (sign-extended), then the high half stored over it. */
static void emit_push_u64(struct emit *e, uint64_t v)
{
	e->absolute = 1;
	put1(e, 0x68);
	put4(e, (uint32_t)v);
	if ((uint64_t)(int64_t)(int32_t)(uint32_t)v != v) {
		static const uint8_t mov_hi[4] = { 0xc7, 0x44, 0x24, 0x04 }; /* movl $imm32, 4(%rsp) */
		put(e, mov_hi, sizeof mov_hi);
		put4(e, (uint32_t)(v >> 32));
	}
}

/* Push the return address `next` of a relocated call: an immediate (emit_push_u64),
 * or without one (e->pic), so that the code runs right wherever it moves
 * together with the original code:
 *     push %rax; push %rax; lea next(%rip),%rax; mov %rax,8(%rsp); pop %rax
 * No flag changes; the slot below the return address that it uses is the
 * callee's, which a real call would leave as free. */
static void emit_push_ret(struct emit *e, uint64_t next)
{
	if (!e->pic || !fits32((int64_t)(next - (here(e) + 9)))) { /* (out of a lea's reach: an immediate) */
		emit_push_u64(e, next);
		return;
	}
	static const uint8_t head[] = { 0x50, 0x50, 0x48, 0x8d, 0x05 }; /* push %rax; push %rax; lea rel32(%rip),%rax */
	static const uint8_t tail[] = { 0x48, 0x89, 0x44, 0x24, 0x08, 0x58 }; /* mov %rax,8(%rsp); pop %rax */
	put(e, head, sizeof head);
	mark_ext(e, e->n);
	put4(e, (uint32_t)(int32_t)(int64_t)(next - (here(e) + 4)));
	put(e, tail, sizeof tail);
}

/* Offset of the opcode: legacy prefixes and REX skipped. */
static int opcode_off(const struct arch_insn *i)
{
	int k = 0;
	while (k < i->len) {
		switch (i->bytes[k]) {
		case 0xf0: case 0xf2: case 0xf3: case 0x2e: case 0x36: case 0x3e: case 0x26:
		case 0x64: case 0x65: case 0x66: case 0x67:
			k++;
			continue;
		}
		break;
	}
	if (k < i->len && (i->bytes[k] & 0xf0) == 0x40)
		k++;
	return k;
}

static int uses_reg(const struct arch_insn *i, int reg)
{
	for (int k = 0; k < i->nops; k++) {
		const struct arch_op *o = &i->op[k];
		if ((o->type == 1 && o->reg == reg) || (o->type == 3 && (o->base == reg || o->index == reg)))
			return 1;
	}
	return 0;
}

/* The direct target of any relative branch (jmp, jcc, call, loop, jrcxz,
 * xbegin), else 0. */
static uint64_t rel_target(const struct arch_insn *i)
{
	if (i->nops < 1 || i->op[0].type != 2)
		return 0;
	switch (i->id) {
	case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
	case X86_INS_JRCXZ: case X86_INS_JECXZ: case X86_INS_JCXZ: case X86_INS_XBEGIN:
		return (uint64_t)i->op[0].imm;
	}
	return arch_branch_target(i);
}

static void mnemonic(const struct arch_insn *i, char *buf, size_t n)
{
	size_t m = strcspn(i->text, " ");
	if (m >= n)
		m = n - 1;
	memcpy(buf, i->text, m);
	buf[m] = 0;
}

/* Refusals that depend on the instruction alone.  NULL when it can move. */
static const char *cannot_move(const struct arch_insn *i)
{
	if (i->groups & ARCH_GRP_INT)
		return "cannot run displaced";  /* syscall, sysenter, int, int3, int1 */
	if (i->groups & (ARCH_GRP_IRET | ARCH_GRP_PRIV))
		return "is privileged and cannot run displaced";
	for (int k = 0; k < i->nops; k++)
		if (i->op[k].type == 3 && (i->op[k].base == X86_REG_EIP || i->op[k].base == X86_REG_IP))
			return "has an EIP-relative operand (addr32 prefix) that is not relocated";
	switch (i->id) {
	case X86_INS_UD0: case X86_INS_UD2: case X86_INS_UD2B:
	case X86_INS_IN: case X86_INS_INSB: case X86_INS_INSW: case X86_INS_INSD:
	case X86_INS_OUT: case X86_INS_OUTSB: case X86_INS_OUTSW: case X86_INS_OUTSD:
		return "cannot run displaced";  /* faults: the signal must name the original pc */
	case X86_INS_XBEGIN:
		return "cannot be displaced (its abort address and transaction)";
	case X86_INS_JCXZ:
		return "cannot be displaced";
	case X86_INS_LCALL: case X86_INS_LJMP: case X86_INS_RETF: case X86_INS_RETFQ:
		return "is a far control transfer and is not relocated";
	}
	return NULL;
}

/* Relocate one instruction to here(e).  *ends = 1 when the trampoline never
 * runs past it.  0, or -1 with *why. */
static int relocate_one(struct emit *e, const struct arch_insn *i, int *ends, const char **why)
{
	*ends = 0;
	if ((*why = cannot_move(i)))
		return -1;
	int k = opcode_off(i);
	uint64_t next = i->addr + (uint64_t)i->len;
	uint64_t t = rel_target(i);
	uint8_t buf[ARCH_MAX_INSN + 1];

	switch (i->id) {
	case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
	case X86_INS_JRCXZ: case X86_INS_JECXZ: {
		/* No rel32 form: "jrcxz 1f; jmp 2f; 1: jmp target; 2:" with the
		 * instruction's own prefixes (0x67 selects ecx) and a rel8 of 2. */
		if (!t || i->len < 2) {
			*why = "branch without a direct target";
			return -1;
		}
		size_t head = (size_t)i->len - 1;
		put(e, i->bytes, head);
		put1(e, 2);
		put1(e, 0xeb);
		put1(e, (uint8_t)jmp_len(here(e) + 1, t));
		emit_jmp(e, t);
		return 0;
	}
	}

	switch (i->kind) {
	case AI_JCC: {
		uint8_t op = i->bytes[k];
		int cc;
		if (op >= 0x70 && op <= 0x7f)
			cc = op & 15;
		else if (op == 0x0f && k + 1 < i->len && (i->bytes[k + 1] & 0xf0) == 0x80)
			cc = i->bytes[k + 1] & 15;
		else {
			*why = "conditional branch with an unknown encoding";
			return -1;
		}
		if (!t) {
			*why = "branch without a direct target";
			return -1;
		}
		emit_jcc(e, cc, t); /* prefixes (branch hints, bnd) dropped: no meaning here */
		return 0;
	}
	case AI_JMP:
		*ends = 1;
		if (t) {
			emit_jmp(e, t);
			return 0;
		}
		break; /* indirect: copied with its RIP-relative operand fixed */
	case AI_CALL: {
		*ends = 1; /* the callee returns to the original code, never here */
		if (t) {
			emit_push_ret(e, next);
			emit_jmp(e, t);
			return 0;
		}
		/* call *X → push next; jmp *X: ff /2 becomes ff /4.  The push
		 * moves rsp, so an operand that reads rsp would change. */
		if (uses_reg(i, X86_REG_RSP) || uses_reg(i, X86_REG_ESP) || uses_reg(i, X86_REG_SP)) {
			*why = "indirect call through %rsp is not relocated";
			return -1;
		}
		if (k + 1 >= i->len || i->bytes[k] != 0xff || ((i->bytes[k + 1] >> 3) & 7) != 2) {
			*why = "indirect call with an unknown encoding";
			return -1;
		}
		struct arch_insn j = *i;
		j.bytes[k + 1] = (uint8_t)((j.bytes[k + 1] & ~0x38) | (4 << 3));
		emit_push_ret(e, next);
		if (reloc_copy_insn(&j, here(e), buf, why) < 0)
			return -1;
		if (j.rip_rel)
			mark_ext(e, e->n + (size_t)j.disp_off);
		put(e, buf, (size_t)j.len);
		return 0;
	}
	case AI_RET:
		*ends = 1;
		break;
	case AI_BAD:
		*why = "cannot be displaced";
		return -1;
	}
	if (reloc_copy_insn(i, here(e), buf, why) < 0)
		return -1;
	if (i->rip_rel)
		mark_ext(e, e->n + (size_t)i->disp_off);
	put(e, buf, (size_t)i->len);
	return 0;
}

static int fail(char *err, size_t errn, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (err && errn)
		vsnprintf(err, errn, fmt, ap);
	va_end(ap);
	return -1;
}

/* Linear sweep of the function: a direct branch whose target is strictly
 * inside (lo, hi) (*from, *to), or whether `lo` is not an instruction start. */
enum { SCAN_OK, SCAN_TARGET, SCAN_NOT_BOUNDARY };
static int scan_function(const uint8_t *fc, size_t flen, uint64_t faddr, uint64_t lo, uint64_t hi,
                         uint64_t *from, uint64_t *to)
{
	int lo_seen = 0;
	size_t off = 0;
	while (off < flen) {
		struct arch_insn i;
		size_t n = flen - off < ARCH_MAX_INSN ? flen - off : ARCH_MAX_INSN;
		if (arch_decode(fc + off, n, faddr + off, &i) < 0) {
			off++; /* data or padding: go on with the next byte */
			continue;
		}
		if (faddr + off == lo)
			lo_seen = 1;
		uint64_t t = rel_target(&i);
		if (t > lo && t < hi) {
			*from = faddr + off;
			*to = t;
			return SCAN_TARGET;
		}
		off += (size_t)i.len;
	}
	return lo_seen ? SCAN_OK : SCAN_NOT_BOUNDARY;
}

static int build(const uint8_t *code, size_t avail, uint64_t site, size_t need,
                 const uint8_t *func_code, size_t func_len, uint64_t func_addr,
                 uint64_t tramp_addr, struct reloc_out *out, char *err, size_t errn, int pic)
{
	memset(out, 0, sizeof *out);
	if (!code || need == 0)
		return fail(err, errn, "nothing to relocate");
	if (!func_code || !func_len) {
		if (need > 1)
			return fail(err, errn, "the enclosing function of 0x%" PRIx64 " is unknown: cannot check "
			            "branch targets for %zu displaced bytes", site, need);
	} else if (site < func_addr || site - func_addr >= func_len) {
		return fail(err, errn, "0x%" PRIx64 " is outside its function [0x%" PRIx64 ", 0x%" PRIx64 ")",
		            site, func_addr, func_addr + func_len);
	}

	struct emit e = { .p = out->code, .at = tramp_addr, .pic = pic };
	size_t off = 0;
	int dead = 0; /* past an instruction the trampoline never runs past */
	while (off < need) {
		uint64_t a = site + off;
		if (func_code && func_len && a - func_addr >= func_len)
			return fail(err, errn, "the %zu displaced bytes at 0x%" PRIx64 " run past the end of the "
			            "function (0x%" PRIx64 ")", need, site, func_addr + func_len);
		if (off >= avail)
			return fail(err, errn, "only %zu bytes readable at 0x%" PRIx64 ", %zu needed", avail, site, need);
		struct arch_insn i;
		size_t n = avail - off < ARCH_MAX_INSN ? avail - off : ARCH_MAX_INSN;
		if (arch_decode(code + off, n, a, &i) < 0)
			return fail(err, errn, "undecodable bytes at 0x%" PRIx64, a);
		if (func_code && func_len && i.len > (int)(func_addr + func_len - a))
			return fail(err, errn, "instruction at 0x%" PRIx64 " runs past the end of the function", a);
		/* After a jmp or ret the bytes up to `need` are unreachable from the
		 * trampoline (no branch lands inside: checked below): taken, not
		 * copied.  A call is the exception: its callee returns to the
		 * original address after it, which must be outside the jump. */
		if (out->n_insn < RELOC_MAP) {
			out->src_off[out->n_insn] = (uint8_t)off;
			out->dst_off[out->n_insn] = dead || e.n >= RELOC_NOT_COPIED ? RELOC_NOT_COPIED : (uint8_t)e.n;
		}
		if (!dead) {
			const char *why = NULL;
			int ends = 0;
			if (relocate_one(&e, &i, &ends, &why) < 0) {
				/* "syscall cannot run displaced", "rip-relative operand out of ..." */
				char m[32] = "";
				if (!strncmp(why, "cannot ", 7) || !strncmp(why, "is ", 3) || !strncmp(why, "has ", 4)) {
					mnemonic(&i, m, sizeof m - 1);
					strcat(m, " ");
				}
				if (!strncmp(why, "rip-relative", 12))
					why = "rip-relative operand out of ±2 GiB from the trampoline";
				return fail(err, errn, "%s%s (0x%" PRIx64 ": %s)", m, why, a, i.text);
			}
			if (e.full)
				return fail(err, errn, "relocated code longer than %d bytes", RELOC_MAX_CODE);
			if (ends && i.kind == AI_CALL && off + (size_t)i.len < need)
				return fail(err, errn, "call at 0x%" PRIx64 " would return into the displaced bytes "
				            "(it must be the last one)", a);
			dead = ends;
		}
		off += (size_t)i.len;
		out->n_insn++;
	}
	if (func_code && func_len) {
		uint64_t from = 0, to = 0;
		switch (scan_function(func_code, func_len, func_addr, site, site + off, &from, &to)) {
		case SCAN_TARGET:
			return fail(err, errn, "branch target 0x%" PRIx64 " (from 0x%" PRIx64 ") inside the "
			            "displaced bytes [0x%" PRIx64 ", 0x%" PRIx64 ")", to, from, site, site + off);
		case SCAN_NOT_BOUNDARY:
			return fail(err, errn, "0x%" PRIx64 " is not on an instruction boundary of its function", site);
		}
	}
	out->code_len = e.n;
	out->displaced = off;
	out->ends_flow = dead;
	out->absolute = e.absolute;
	out->n_ext = e.n_ext;
	memcpy(out->ext_off, e.ext, sizeof out->ext_off);
	return 0;
}

int reloc_build(const uint8_t *code, size_t avail, uint64_t site, size_t need,
                const uint8_t *func_code, size_t func_len, uint64_t func_addr,
                uint64_t tramp_addr, struct reloc_out *out, char *err, size_t errn)
{
	return build(code, avail, site, need, func_code, func_len, func_addr, tramp_addr, out, err, errn, 0);
}

int reloc_build_pic(const uint8_t *code, size_t avail, uint64_t site, size_t need,
                    const uint8_t *func_code, size_t func_len, uint64_t func_addr,
                    uint64_t tramp_addr, struct reloc_out *out, char *err, size_t errn)
{
	return build(code, avail, site, need, func_code, func_len, func_addr, tramp_addr, out, err, errn, 1);
}

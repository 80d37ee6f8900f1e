/* brief.c — what a linear sweep of a module's code needs of each x86-64
 * instruction (arch.h's struct arch_brief: its length, whether it is a nop,
 * whether nothing runs on after it, the target of a direct branch), read
 * from the encoding without capstone.
 *
 * The plan of a module patched without a rebuild (src/instr/plan.c) sweeps
 * every instruction of every function; through capstone, with its operand
 * details and its printed text, that sweep was nine tenths of the planning
 * (SQLite's 1,426 functions: ~200 of ~250 ms).  This decoder knows the
 * encodings compilers emit: legacy prefixes, REX, the one-byte map, the
 * 0F, 0F 38 and 0F 3A maps, VEX and EVEX.  Whatever it does not know for
 * certain (XOP, 3DNow!, APX, opcodes invalid in 64-bit mode, branches with a
 * prefix that changes their meaning, the reserved-nop hints) it leaves to
 * capstone (arch_brief falls back to arch_decode), so its answers are
 * capstone's: tests/unit/test_brief.c compares the two on every instruction
 * of real binaries. */
#include "arch/arch.h"

#include <string.h>

enum {
	M = 1,   /* a ModRM byte (and SIB / displacement) */
	I8 = 2,  /* an 8-bit immediate */
	IZ = 4,  /* a 16- or 32-bit immediate (operand size) */
	X = 8,   /* not known here: capstone decides */
	S = 16,  /* special: handled in the code */
};

/* The one-byte map in 64-bit mode. */
static const uint8_t map1[256] = {
	/* 00 */ M, M, M, M, I8, IZ, X, X, M, M, M, M, I8, IZ, X, S,
	/* 10 */ M, M, M, M, I8, IZ, X, X, M, M, M, M, I8, IZ, X, X,
	/* 20 */ M, M, M, M, I8, IZ, S, X, M, M, M, M, I8, IZ, S, X,
	/* 30 */ M, M, M, M, I8, IZ, S, X, M, M, M, M, I8, IZ, S, X,
	/* 40 */ S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S,
	/* 50 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 60 */ X, X, X, M, S, S, S, S, IZ, M | IZ, I8, M | I8, 0, 0, 0, 0,
	/* 70 */ S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S,
	/* 80 */ M | I8, M | IZ, X, M | I8, M, M, M, M, M, M, M, M, M, M, M, S,
	/* 90 */ S, 0, 0, 0, 0, 0, 0, 0, 0, 0, X, 0, 0, 0, 0, 0,
	/* a0 */ S, S, S, S, 0, 0, 0, 0, I8, IZ, 0, 0, 0, 0, 0, 0,
	/* b0 */ I8, I8, I8, I8, I8, I8, I8, I8, S, S, S, S, S, S, S, S,
	/* c0 */ M | I8, M | I8, S, S, S, S, M | I8, S, S, 0, S, 0, S, I8, X, 0,
	/* d0 */ M, M, M, M, X, X, X, 0, M, M, M, M, M, M, M, M,
	/* e0 */ S, S, S, S, I8, I8, I8, I8, S, S, X, S, 0, 0, 0, 0,
	/* f0 */ S, 0, S, S, S, 0, S, S, 0, 0, 0, 0, 0, 0, M | S, M | S,
};

/* The two-byte map, 0F xx. */
static const uint8_t map2[256] = {
	/* 00 */ M, M, M, M, X, 0, 0, 0, 0, 0, X, S, X, M, 0, X,
	/* 10 */ M, M, M, M, M, M, M, M, M, X, X, X, X, X, S, S,
	/* 20 */ X, X, X, X, X, X, X, X, M, M, M, M, M, M, M, M,
	/* 30 */ 0, 0, 0, 0, 0, 0, X, 0, S, X, S, X, X, X, X, X,
	/* 40 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	/* 50 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	/* 60 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	/* 70 */ M | I8, M | I8, M | I8, M | I8, M, M, M, 0, X, X, X, X, M, M, M, M,
	/* 80 */ S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S,
	/* 90 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	/* a0 */ 0, 0, 0, M, M | I8, M, X, X, 0, 0, 0, M, M | I8, M, M, M,
	/* b0 */ M, M, M, M, M, M, M, M, S, X, M | I8, M, M, M, M, M,
	/* c0 */ M, M, M | I8, M, M | I8, M | I8, M | I8, M, 0, 0, 0, 0, 0, 0, 0, 0,
	/* d0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	/* e0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
	/* f0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, X,
};

/* The ModRM byte at p[0] and what follows it (SIB, displacement): its
 * length, or 0 if the buffer ends first. */
static size_t modrm_len(const uint8_t *p, size_t n)
{
	if (n < 1)
		return 0;
	uint8_t mod = p[0] >> 6, rm = p[0] & 7;
	size_t len = 1;
	if (mod == 3)
		return len;
	if (rm == 4) {
		if (n < 2)
			return 0;
		len++;
		if (mod == 0 && (p[1] & 7) == 5)
			len += 4;
	} else if (mod == 0 && rm == 5) {
		len += 4; /* rip + disp32 */
	}
	if (mod == 1)
		len += 1;
	else if (mod == 2)
		len += 4;
	return len <= n ? len : 0;
}

static int64_t rel_at(const uint8_t *p, int size)
{
	if (size == 1)
		return (int8_t)p[0];
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

int arch_brief_quick(const uint8_t *buf, size_t n, uint64_t addr, struct arch_brief *o)
{
	size_t i = 0;
	int opsize16 = 0, addr32 = 0, rep = 0, seg = 0, rexw = 0, rex = 0, lock = 0;
	memset(o, 0, sizeof *o);
	o->kind = AI_OTHER;
	if (n > ARCH_MAX_INSN)
		n = ARCH_MAX_INSN;
	for (;; i++) {
		if (i >= n)
			return 1;
		uint8_t b = buf[i];
		if (rex && !(b >= 0x40 && b <= 0x4f) && (b == 0x66 || b == 0x67 || b == 0xf0 || b == 0xf2 || b == 0xf3 ||
		                                          b == 0x26 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x64 ||
		                                          b == 0x65))
			return 1; /* a prefix after REX: REX is dropped; leave it to capstone */
		if (b == 0x66)
			opsize16 = 1;
		else if (b == 0x67)
			addr32 = 1;
		else if (b == 0xf2 || b == 0xf3)
			rep = b;
		else if (b == 0xf0)
			lock = 1;
		else if (b == 0x26 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x64 || b == 0x65)
			seg = b;
		else if (b >= 0x40 && b <= 0x4f) {
			if (rex)
				return 1;
			rex = b;
			rexw = (b & 8) != 0;
		} else
			break;
	}
	uint8_t op = buf[i++];
	size_t len;
	if (op == 0x0f) {
		if (i >= n)
			return 1;
		uint8_t op2 = buf[i++];
		uint8_t f = map2[op2];
		if (op2 >= 0x80 && op2 <= 0x8f) { /* jcc rel32 */
			if (opsize16 || rep || seg || lock || i + 4 > n)
				return 1;
			o->len = (int)(i + 4);
			o->kind = AI_JCC;
			o->target = addr + (uint64_t)o->len + (uint64_t)rel_at(buf + i, 4);
			return 0;
		}
		if (f & X)
			return 1;
		if (op2 == 0x0b) { /* ud2 */
			o->len = (int)i;
			o->terminal = 1;
			return 0;
		}
		if (op2 == 0x1f) { /* nop r/m */
			size_t m = modrm_len(buf + i, n - i);
			if (!m || rep || lock)
				return 1;
			o->len = (int)(i + m);
			o->kind = AI_NOP;
			return 0;
		}
		if (op2 == 0x1e) { /* endbr64; other forms (rdssp, hint nops) to capstone */
			if (rep != 0xf3 || i >= n || buf[i] != 0xfa || opsize16 || rex || seg || lock)
				return 1;
			o->len = (int)(i + 1);
			o->kind = AI_NOP;
			return 0;
		}
		if (op2 == 0xb8) { /* popcnt (F3); jmpe without */
			if (rep != 0xf3)
				return 1;
			f = M;
		}
		if (op2 == 0x38 || op2 == 0x3a) {
			if (i >= n)
				return 1;
			i++; /* the third opcode byte */
			f = op2 == 0x38 ? M : M | I8;
		}
		len = i;
		if (f & M) {
			size_t m = modrm_len(buf + i, n - i);
			if (!m)
				return 1;
			len += m;
		}
		if (f & I8)
			len += 1;
		if (len > n)
			return 1;
		o->len = (int)len;
		return 0;
	}
	if (op == 0xc4 || op == 0xc5 || op == 0x62) { /* VEX, EVEX: a ModRM always, an imm8 by map and opcode */
		if (opsize16 || rep || lock || rex)
			return 1;
		size_t vl = op == 0xc5 ? 1 : op == 0xc4 ? 2 : 3;
		if (i + vl >= n)
			return 1;
		int map = op == 0xc5 ? 1 : op == 0xc4 ? buf[i] & 0x1f : buf[i] & 0x07;
		if (op == 0x62 && (buf[i] & 0x08 || !(buf[i + 1] & 0x04)))
			return 1; /* reserved bits (APX, or not EVEX): to capstone */
		i += vl;
		uint8_t vop = buf[i++];
		if (map < 1 || map > 3)
			return 1;
		len = i;
		if (!(op != 0x62 && map == 1 && vop == 0x77)) { /* vzeroupper / vzeroall: no ModRM */
			size_t m = modrm_len(buf + i, n - i);
			if (!m)
				return 1;
			len += m;
		}
		if (map == 3 || (map == 1 && ((vop >= 0x70 && vop <= 0x73) || vop == 0xc2 || (vop >= 0xc4 && vop <= 0xc6))))
			len += 1;
		if (len > n)
			return 1;
		o->len = (int)len;
		return 0;
	}
	uint8_t f = map1[op];
	if (f & X)
		return 1;
	len = i;
	/* branches: with a prefix that changes them (operand size, bnd, notrack,
	 * a segment) capstone decides */
	int plain = !opsize16 && !rep && !seg && !lock;
	if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3) || op == 0xeb) {
		if (!plain || i + 1 > n)
			return 1;
		o->len = (int)(i + 1);
		if (op >= 0xe0 && op <= 0xe2) { /* loop*: capstone's kind */
			o->kind = AI_BAD;
			return 0;
		}
		o->kind = op == 0xeb ? AI_JMP : AI_JCC;
		o->terminal = op == 0xeb;
		o->target = addr + (uint64_t)o->len + (uint64_t)rel_at(buf + i, 1);
		return 0;
	}
	if (op == 0xe8 || op == 0xe9) {
		if (!plain || i + 4 > n)
			return 1;
		o->len = (int)(i + 4);
		o->kind = op == 0xe8 ? AI_CALL : AI_JMP;
		o->terminal = 1;
		o->target = addr + (uint64_t)o->len + (uint64_t)rel_at(buf + i, 4);
		return 0;
	}
	switch (op) {
	case 0x90: /* nop (pause with F3, xchg with REX.B) */
		if (rep || rex || lock)
			return 1;
		o->len = (int)i;
		o->kind = AI_NOP;
		return 0;
	case 0xc2: case 0xc3: /* ret */
		if (!plain)
			return 1;
		o->len = (int)(i + (op == 0xc2 ? 2 : 0));
		if ((size_t)o->len > n)
			return 1;
		o->kind = AI_RET;
		o->terminal = 1;
		return 0;
	case 0xca: /* retf imm16 */
		len += 2;
		break;
	case 0xc8: /* enter imm16, imm8 */
		len += 3;
		break;
	case 0xcc: /* int3: capstone's kind; nothing runs on after it */
		if (opsize16 || rep || seg || lock || rex)
			return 1;
		o->len = (int)i;
		o->kind = AI_BAD;
		o->terminal = 1;
		return 0;
	case 0xf4: /* hlt */
		if (opsize16 || rep || seg || lock || rex)
			return 1;
		o->len = (int)i;
		o->terminal = 1;
		return 0;
	case 0xa0: case 0xa1: case 0xa2: case 0xa3: /* mov moffs */
		len += addr32 ? 4 : 8;
		break;
	case 0x8f: /* pop r/m; XOP otherwise */
		if (i >= n || ((buf[i] >> 3) & 7) != 0)
			return 1;
		f = M;
		break;
	case 0xc7: /* mov r/m, imm; xbegin (C7 F8) to capstone */
		if (i >= n || buf[i] == 0xf8)
			return 1;
		f = M | IZ;
		break;
	case 0xf6: case 0xf7: /* test has an immediate, the others none */
		if (i >= n)
			return 1;
		f = ((buf[i] >> 3) & 7) <= 1 ? (op == 0xf6 ? M | I8 : M | IZ) : M;
		break;
	case 0xfe:
		if (i >= n || ((buf[i] >> 3) & 7) > 1)
			return 1;
		f = M;
		break;
	case 0xff: {
		if (i >= n)
			return 1;
		int reg = (buf[i] >> 3) & 7;
		if (reg == 7)
			return 1;
		if (reg == 2 || reg == 4) { /* call / jmp through a register or memory */
			if (!plain)
				return 1;
			o->kind = reg == 2 ? AI_CALL : AI_JMP;
			o->terminal = 1;
		}
		f = M;
		break;
	}
	default:
		if (op >= 0xb8 && op <= 0xbf) {
			len += rexw ? 8 : opsize16 ? 2 : 4;
			f = 0;
		} else if (f & S) {
			return 1; /* a prefix where an opcode should be: cannot happen, be safe */
		}
		break;
	}
	if (f & M) {
		size_t m = modrm_len(buf + len, n > len ? n - len : 0);
		if (!m)
			return 1;
		len += m;
	}
	if (f & I8)
		len += 1;
	if (f & IZ)
		len += opsize16 ? 2 : 4;
	if (len > n)
		return 1;
	o->len = (int)len;
	return 0;
}

void arch_brief_of(const struct arch_insn *in, struct arch_brief *o)
{
	memset(o, 0, sizeof *o);
	o->len = in->len;
	switch (in->kind) {
	case AI_NOP: case AI_JMP: case AI_JCC: case AI_CALL: case AI_RET: case AI_BAD:
		o->kind = in->kind;
		break;
	default:
		o->kind = AI_OTHER;
		break;
	}
	o->target = arch_branch_target(in);
	o->terminal = in->kind == AI_JMP || in->kind == AI_RET || in->kind == AI_CALL || !strncmp(in->text, "int3", 4) ||
	              !strncmp(in->text, "ud2", 3) || !strncmp(in->text, "hlt", 3);
}

int arch_brief(const uint8_t *buf, size_t n, uint64_t addr, struct arch_brief *o)
{
	if (arch_brief_quick(buf, n, addr, o) == 0)
		return 0;
	struct arch_insn in;
	if (arch_decode(buf, n, addr, &in) < 0)
		return -1;
	arch_brief_of(&in, o);
	return 0;
}

/* tramp.c — x86-64 slot code for the agent backend's probe sites (tramp.h).
 *
 *   lea -128(%rsp),%rsp          the red zone of the interrupted code
 *   pushfq; push rax rcx rdx rsi rdi r8 r9 r10 r11 rbx rbp r12 r13 r14 r15
 *   mov %rsp,%rbx; and $-16,%rsp
 *   mov $idx,%edi; lea 256(%rbx),%rsi   (the stack pointer at the site)
 *   mov %rbx,%rdx                       (the saved registers: enum pa_reg)
 *   movabs $hit,%rax; call *%rax
 *   mov %rbx,%rsp; pop (reverse); popfq; lea 128(%rsp),%rsp
 *   <the displaced instructions>     ← displaced_off; an int3 site starts here
 *   jmp site+displaced
 *
 * Only the general registers are saved: the hit function is built with
 * -mgeneral-regs-only.  The callee-saved ones are saved too, so that a var
 * site reads their values at the site (probe_area.h, enum pa_reg). */
#include "arch/tramp.h"

#include "arch/arch.h"
#include "arch/reloc.h"

#include <stdio.h>
#include <string.h>

static const uint8_t head[] = {
	0x48, 0x8d, 0x64, 0x24, 0x80,                   /* lea -0x80(%rsp),%rsp */
	0x9c,                                           /* pushfq */
	0x50, 0x51, 0x52, 0x56, 0x57,                   /* push rax rcx rdx rsi rdi */
	0x41, 0x50, 0x41, 0x51, 0x41, 0x52, 0x41, 0x53, /* push r8 r9 r10 r11 */
	0x53,                                           /* push rbx */
	0x55, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57, /* push rbp r12 r13 r14 r15 */
	0x48, 0x89, 0xe3,                               /* mov %rsp,%rbx */
	0x48, 0x83, 0xe4, 0xf0,                         /* and $-16,%rsp */
};
static const uint8_t tail[] = {
	0x48, 0x89, 0xdc,                               /* mov %rbx,%rsp */
	0x41, 0x5f, 0x41, 0x5e, 0x41, 0x5d, 0x41, 0x5c, 0x5d, /* pop r15 r14 r13 r12 rbp */
	0x5b,                                           /* pop rbx */
	0x41, 0x5b, 0x41, 0x5a, 0x41, 0x59, 0x41, 0x58, /* pop r11 r10 r9 r8 */
	0x5f, 0x5e, 0x5a, 0x59, 0x58,                   /* pop rdi rsi rdx rcx rax */
	0x9d,                                           /* popfq */
	0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00, /* lea 0x80(%rsp),%rsp */
};

static size_t put(uint8_t *o, size_t at, const void *b, size_t n)
{
	memcpy(o + at, b, n);
	return at + n;
}

static size_t call_part(uint8_t *o, uint32_t idx, uint64_t hit)
{
	size_t k = put(o, 0, head, sizeof head);
	o[k++] = 0xbf; /* mov $idx,%edi */
	k = put(o, k, &idx, 4);
	static const uint8_t lea[] = { 0x48, 0x8d, 0xb3 }; /* lea disp32(%rbx),%rsi */
	k = put(o, k, lea, 3);
	uint32_t d = 16 * 8 + 128;
	k = put(o, k, &d, 4);
	static const uint8_t regs[] = { 0x48, 0x89, 0xda }; /* mov %rbx,%rdx */
	k = put(o, k, regs, 3);
	o[k++] = 0x48; /* movabs $hit,%rax */
	o[k++] = 0xb8;
	k = put(o, k, &hit, 8);
	o[k++] = 0xff; /* call *%rax */
	o[k++] = 0xd0;
	return put(o, k, tail, sizeof tail);
}

/* The displaced code at slot_addr+off and the jump back; the length, or 0. */
static size_t displaced_part(struct tramp *t, size_t off, const uint8_t *code, size_t avail, uint64_t site,
                             size_t need, const uint8_t *fn, size_t fn_len, uint64_t fn_addr, uint64_t slot_addr,
                             char *err, size_t n)
{
	struct reloc_out r;
	if (reloc_build(code, avail, site, need, fn, fn_len, fn_addr, slot_addr + off, &r, err, n))
		return 0;
	if (off + r.code_len + 5 > sizeof t->code) {
		snprintf(err, n, "the displaced code does not fit in a slot");
		return 0;
	}
	size_t k = put(t->code, off, r.code, r.code_len);
	if (!r.ends_flow) {
		int64_t rel = (int64_t)(site + r.displaced) - (int64_t)(slot_addr + k + 5);
		if (rel < INT32_MIN || rel > INT32_MAX) {
			snprintf(err, n, "the slot is out of a jump's reach");
			return 0;
		}
		int32_t r32 = (int32_t)rel;
		t->code[k++] = 0xe9;
		k = put(t->code, k, &r32, 4);
	}
	t->orig_len = r.displaced;
	t->n_insn = r.n_insn;
	t->back_off = r.ends_flow ? 0 : r.displaced;
	return k;
}

int tramp_build(const uint8_t *code, size_t avail, uint64_t site, const uint8_t *fn, size_t fn_len,
                uint64_t fn_addr, uint64_t slot_addr, uint64_t hit_fn, uint32_t idx, int allow_jmp,
                struct tramp *t, char *err, size_t n)
{
	memset(t, 0, sizeof *t);
	if (allow_jmp) {
		size_t off = call_part(t->code, idx, hit_fn);
		size_t len = displaced_part(t, off, code, avail, site, TRAMP_JMP_LEN, fn, fn_len, fn_addr, slot_addr,
		                            t->why_int3, sizeof t->why_int3);
		if (len) {
			t->len = len;
			t->displaced_off = off;
			t->jmp = 1;
			return 0;
		}
	} else {
		snprintf(t->why_int3, sizeof t->why_int3, "asked for int3");
	}
	/* int3: one instruction, run from the slot after the handler. */
	memset(t->code, 0, sizeof t->code);
	size_t len = displaced_part(t, 0, code, avail, site, 1, NULL, 0, 0, slot_addr, err, n);
	if (!len)
		return -1;
	t->len = len;
	t->displaced_off = 0;
	t->orig_len = 1;
	t->jmp = 0;
	return 0;
}

/* --- post calls (plugin probes with a post handler) -------------------------
 * After the first displaced instruction:
 *   lea -128(%rsp),%rsp; push $idx; call *post(%rip); lea 136(%rsp),%rsp
 * where post is an 8-byte literal at the end of the slot: the agent's
 * pa_post_stub, which saves the registers, calls the post handlers with the
 * registers the instruction left and restores them (src/rt/probe_plugin.c).
 * The instruction must go on to the next one (not a branch, call or ret). */
static const uint8_t post_a[] = { 0x48, 0x8d, 0x64, 0x24, 0x80 }; /* lea -0x80(%rsp),%rsp */
static const uint8_t post_b[] = { 0x48, 0x8d, 0xa4, 0x24, 0x88, 0x00, 0x00, 0x00 }; /* lea 0x88(%rsp),%rsp */

static int build_post(const uint8_t *code, size_t avail, uint64_t site, const uint8_t *fn, size_t fn_len,
                      uint64_t fn_addr, uint64_t slot_addr, uint64_t post_fn, uint32_t idx, struct tramp *t,
                      char *err, size_t n)
{
	size_t k = t->displaced_off;
	struct reloc_out r;
	if (reloc_build(code, avail, site, 1, NULL, 0, 0, slot_addr + k, &r, err, n))
		return -1;
	size_t len1 = r.displaced;
	size_t total = t->jmp ? t->orig_len : len1; /* an int3 site displaces its one instruction */
	if (k + r.code_len + 64 > sizeof t->code) {
		snprintf(err, n, "the displaced code does not fit in a slot");
		return -1;
	}
	uint8_t *o = t->code;
	k = put(o, k, r.code, r.code_len);
	k = put(o, k, post_a, sizeof post_a);
	o[k++] = 0x68; /* push $idx (imm32) */
	k = put(o, k, &idx, 4);
	o[k++] = 0xff; /* call *disp32(%rip) */
	o[k++] = 0x15;
	size_t disp_at = k;
	k += 4;
	size_t call_end = k;
	k = put(o, k, post_b, sizeof post_b);
	int ends = 0;
	if (total > len1) {
		if (reloc_build(code + len1, avail - len1, site + len1, total - len1, fn, fn_len, fn_addr,
		                slot_addr + k, &r, err, n))
			return -1;
		if (len1 + r.displaced != total || k + r.code_len + 13 > sizeof t->code) {
			snprintf(err, n, "the displaced code does not fit in a slot");
			return -1;
		}
		k = put(o, k, r.code, r.code_len);
		ends = r.ends_flow;
	}
	if (!ends) {
		int64_t rel = (int64_t)(site + total) - (int64_t)(slot_addr + k + 5);
		if (rel < INT32_MIN || rel > INT32_MAX) {
			snprintf(err, n, "the slot is out of a jump's reach");
			return -1;
		}
		int32_t r32 = (int32_t)rel;
		o[k++] = 0xe9;
		k = put(o, k, &r32, 4);
	}
	if (k + 8 > sizeof t->code) {
		snprintf(err, n, "the displaced code does not fit in a slot");
		return -1;
	}
	int32_t d = (int32_t)(k - call_end);
	memcpy(o + disp_at, &d, 4);
	k = put(o, k, &post_fn, 8);
	t->len = k;
	t->post_len = len1;
	return 0;
}

int tramp_build_post(const uint8_t *code, size_t avail, uint64_t site, const uint8_t *fn, size_t fn_len,
                     uint64_t fn_addr, uint64_t slot_addr, uint64_t hit_fn, uint64_t post_fn, uint32_t idx,
                     int allow_jmp, struct tramp *t, char *err, size_t n)
{
	struct arch_insn in;
	if (arch_decode(code, avail, site, &in)) {
		snprintf(err, n, "cannot decode the instruction at 0x%llx", (unsigned long long)site);
		return -1;
	}
	if (in.kind == AI_JMP || in.kind == AI_JCC || in.kind == AI_CALL || in.kind == AI_RET || in.kind == AI_BAD) {
		snprintf(err, n, "on the agent, a post handler needs an instruction that goes on to the next one, "
		         "not '%s': --engine=ptrace runs it", in.text);
		return -1;
	}
	/* The jump (or int3) as without post, which also checks the bytes. */
	if (tramp_build(code, avail, site, fn, fn_len, fn_addr, slot_addr, hit_fn, idx, allow_jmp, t, err, n))
		return -1;
	struct tramp keep = *t;
	if (!build_post(code, avail, site, fn, fn_len, fn_addr, slot_addr, post_fn, idx, t, err, n))
		return 0;
	if (!keep.jmp)
		return -1;
	/* The jump's slot is too small with the post call: int3. */
	if (tramp_build(code, avail, site, NULL, 0, 0, slot_addr, hit_fn, idx, 0, t, err, n) ||
	    build_post(code, avail, site, NULL, 0, 0, slot_addr, post_fn, idx, t, err, n))
		return -1;
	snprintf(t->why_int3, sizeof t->why_int3, "the slot has no room for a jump's code and the post call");
	return 0;
}

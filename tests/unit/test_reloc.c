/* test_reloc.c — unit tests of the instruction relocator (src/arch/x86_64/reloc.c).
 * Each test patches real code of this program the way the probe engine will:
 * the relocated instructions are written into an RWX page mapped near (or
 * more than 2 GiB away from) the site, behind a prefix that counts the hits,
 * followed by a jump back; the site gets a jmp to the page and the rest of the
 * displaced bytes become int3.  The function is called before and after: the
 * results (and what a callee sees as its return address) must be the same, and
 * the hit counter says the trampoline ran.  The code is assembled by the system
 * `as` from the asm block below, plus one function compiled by gcc -O2 whose
 * every relocatable site is tried. */
#include "unit.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch/arch.h"
#include "arch/reloc.h"

/* ---- data and callees the assembly uses ---- */
int64_t t_gval = 0x1122334455667788;
int32_t t_gval32 = 5;
uint64_t t_seen_ret;
__attribute__((noinline, used)) long t_callee(void)
{
	t_seen_ret = (uint64_t)__builtin_return_address(0);
	return 42;
}
long (*t_fnptr)(void) = t_callee;

__asm__(
	".intel_syntax noprefix\n"
	".text\n"
	".p2align 4\n"
	/* RIP-relative lea, load, store, and a compare with an immediate after the displacement */
	".globl t_lea, t_lea_end\n"
	"t_lea:\n"
	"	lea rax, [rip + t_gval]\n"
	"	mov rax, [rax]\n"
	"	ret\n"
	"t_lea_end:\n"
	".globl t_load32, t_load32_end\n"
	"t_load32:\n"
	"	mov eax, dword ptr [rip + t_gval32]\n"
	"	add eax, 1\n"
	"	ret\n"
	"t_load32_end:\n"
	".globl t_store, t_store_end\n"
	"t_store:\n"
	"	mov qword ptr [rip + t_gval], rdi\n"
	"	mov rax, qword ptr [rip + t_gval]\n"
	"	ret\n"
	"t_store_end:\n"
	".globl t_cmpimm, t_cmpimm_site, t_cmpimm_end\n"
	"t_cmpimm:\n"
	"	xor eax, eax\n"
	"t_cmpimm_site:\n"
	"	cmp dword ptr [rip + t_gval32], 5\n"
	"	sete al\n"
	"	ret\n"
	"t_cmpimm_end:\n"
	/* calls: direct and through RIP-relative memory */
	".globl t_call, t_call_site, t_call_ret, t_call_end\n"
	"t_call:\n"
	"	sub rsp, 8\n"
	"t_call_site:\n"
	"	call t_callee\n"
	"t_call_ret:\n"
	"	add rsp, 8\n"
	"	ret\n"
	"t_call_end:\n"
	".globl t_callmem, t_callmem_site, t_callmem_ret, t_callmem_end\n"
	"t_callmem:\n"
	"	sub rsp, 8\n"
	"t_callmem_site:\n"
	"	call qword ptr [rip + t_fnptr]\n"
	"t_callmem_ret:\n"
	"	add rsp, 8\n"
	"	ret\n"
	"t_callmem_end:\n"
	/* short branches */
	".globl t_jcc, t_jcc_je, t_jcc_end\n"
	"t_jcc:\n"
	"	cmp edi, 0\n"
	"t_jcc_je:\n"
	"	je 1f\n"
	"	mov eax, 1\n"
	"	ret\n"
	"1:	mov eax, 2\n"
	"	ret\n"
	"t_jcc_end:\n"
	".globl t_jmp, t_jmp_site, t_jmp_end\n"
	"t_jmp:\n"
	"	mov eax, 1\n"
	"t_jmp_site:\n"
	"	jmp 1f\n"
	"	mov eax, 5\n"
	"1:	add eax, 1\n"
	"	ret\n"
	"t_jmp_end:\n"
	".globl t_jrcxz, t_jrcxz_site, t_jrcxz_end\n"
	"t_jrcxz:\n"
	"	mov rcx, rdi\n"
	"t_jrcxz_site:\n"
	"	jrcxz 1f\n"
	"	mov eax, 1\n"
	"	ret\n"
	"1:	mov eax, 2\n"
	"	ret\n"
	"t_jrcxz_end:\n"
	".globl t_loop, t_loop_site, t_loop_end\n"
	"t_loop:\n"
	"	mov ecx, edi\n"
	"	xor eax, eax\n"
	"1:	add eax, 3\n"
	"t_loop_site:\n"
	"	loop 1b\n"
	"	add eax, 1000\n"
	"	ret\n"
	"t_loop_end:\n"
	/* a -O0 style prologue */
	".globl t_prologue, t_prologue_end\n"
	"t_prologue:\n"
	"	endbr64\n"
	"	push rbp\n"
	"	mov rbp, rsp\n"
	"	mov dword ptr [rbp - 4], edi\n"
	"	mov eax, dword ptr [rbp - 4]\n"
	"	imul eax, eax\n"
	"	pop rbp\n"
	"	ret\n"
	"t_prologue_end:\n"
	".globl t_ret, t_ret_end\n"
	"t_ret:\n"
	"	mov eax, 7\n"
	"	ret\n"
	"t_ret_end:\n"
	/* refusals */
	".globl t_sys, t_sys_site, t_sys_end\n"
	"t_sys:\n"
	"	mov eax, 39\n"
	"t_sys_site:\n"
	"	syscall\n"
	"	ret\n"
	"t_sys_end:\n"
	".globl t_mid, t_mid_head, t_mid_end\n"
	"t_mid:\n"
	"	mov ecx, edi\n"
	"	xor eax, eax\n"
	"t_mid_head:\n"
	"	add eax, ecx\n"
	"	dec ecx\n"
	"	jnz t_mid_head\n"
	"	ret\n"
	"t_mid_end:\n"
	".att_syntax prefix\n");

extern char t_lea[], t_lea_end[], t_load32[], t_load32_end[], t_store[], t_store_end[];
extern char t_cmpimm[], t_cmpimm_site[], t_cmpimm_end[];
extern char t_call[], t_call_site[], t_call_ret[], t_call_end[];
extern char t_callmem[], t_callmem_site[], t_callmem_ret[], t_callmem_end[];
extern char t_jcc[], t_jcc_je[], t_jcc_end[], t_jmp[], t_jmp_site[], t_jmp_end[];
extern char t_jrcxz[], t_jrcxz_site[], t_jrcxz_end[], t_loop[], t_loop_site[], t_loop_end[];
extern char t_prologue[], t_prologue_end[], t_ret[], t_ret_end[];
extern char t_sys[], t_sys_site[], t_sys_end[], t_mid[], t_mid_head[], t_mid_end[];

typedef long (*fn0)(void);
typedef long (*fn1)(long);
#define CALL0(f) (((fn0)(void *)(f))())
#define CALL1(f, x) (((fn1)(void *)(f))(x))

/* ---- the patcher ---- */

#define PAGE 4096ull
#define PREFIX_AT 128
/* lea -128(%rsp),%rsp; pushfq; incq counter(%rip); popfq; lea 128(%rsp),%rsp:
 * counts the hit without touching the flags or the red zone. */
#define PREFIX_LEN 22

struct patch {
	uint64_t site, entry;
	uint8_t saved[64];
	uint8_t *page, *stub;
	struct reloc_out ro;
	char err[256];
};

static uint8_t *map_at(uint64_t want)
{
	void *p = mmap((void *)want, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if ((uint64_t)p != want) { /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
		munmap(p, PAGE);
		return NULL;
	}
	return p;
}

/* A free page about `dist` bytes after (or before) addr. */
static uint8_t *map_near(uint64_t addr, int64_t dist)
{
	for (int k = 0; k < 256; k++) {
		uint64_t want = ((addr + (uint64_t)dist) & ~(PAGE - 1)) + (uint64_t)k * 16 * PAGE;
		uint8_t *p = map_at(want);
		if (p)
			return p;
	}
	return NULL;
}

static size_t put_jmp(uint8_t *at, uint64_t target)
{
	int64_t rel = (int64_t)(target - ((uint64_t)at + 5));
	if (rel >= INT32_MIN && rel <= INT32_MAX) {
		int32_t r = (int32_t)rel;
		at[0] = 0xe9;
		memcpy(at + 1, &r, 4);
		return 5;
	}
	static const uint8_t abs_jmp[6] = { 0xff, 0x25, 0, 0, 0, 0 };
	memcpy(at, abs_jmp, 6);
	memcpy(at + 6, &target, 8);
	return 14;
}

static uint64_t hits(const struct patch *p) { return *(volatile uint64_t *)p->page; }

/* Relocate [site, site+need) of the function [f, f_end) into a page near the
 * site (far = 0) or more than 4 GiB away (far = 1, entered through an absolute
 * jump in a near stub), then redirect the site.  0, or -1 with p->err (nothing
 * changed). */
static int use_pic; /* install() relocates with reloc_build_pic */

static int install(struct patch *p, const void *site_p, size_t need, const void *f, const void *f_end, int far)
{
	uint64_t site = (uint64_t)site_p, fa = (uint64_t)f;
	size_t flen = (size_t)((uint64_t)f_end - fa);
	memset(p, 0, sizeof *p);
	p->site = site;
	p->page = map_near(site, far ? (int64_t)(6ull << 30) : (int64_t)(32ull << 20));
	CHECK(p->page);
	uint8_t *pre = p->page + PREFIX_AT, *c = pre;
	static const uint8_t lea_down[5] = { 0x48, 0x8d, 0x64, 0x24, 0x80 };
	static const uint8_t lea_up[8] = { 0x48, 0x8d, 0xa4, 0x24, 0x80, 0, 0, 0 };
	memcpy(c, lea_down, 5), c += 5;
	*c++ = 0x9c;
	int32_t d = (int32_t)((int64_t)(uint64_t)p->page - (int64_t)((uint64_t)c + 7));
	*c++ = 0x48, *c++ = 0xff, *c++ = 0x05;
	memcpy(c, &d, 4), c += 4;
	*c++ = 0x9d;
	memcpy(c, lea_up, 8), c += 8;
	CHECK(c - pre == PREFIX_LEN);
	if ((use_pic ? reloc_build_pic : reloc_build)(site_p, (size_t)(fa + flen - site), site, need, f, flen, fa,
	                                              (uint64_t)c, &p->ro, p->err, sizeof p->err) < 0) {
		munmap(p->page, PAGE);
		p->page = NULL;
		return -1;
	}
	CHECK(p->ro.displaced >= need && p->ro.displaced >= 5 && p->ro.displaced <= sizeof p->saved);
	CHECK(p->ro.code_len <= RELOC_MAX_CODE && p->ro.n_insn >= 1);
	memcpy(c, p->ro.code, p->ro.code_len);
	c += p->ro.code_len;
	if (!p->ro.ends_flow)
		put_jmp(c, site + p->ro.displaced);
	p->entry = (uint64_t)pre;
	if (far) {
		CHECK((uint64_t)pre - site > (4ull << 30));
		p->stub = map_near(site, 32ll << 20);
		CHECK(p->stub);
		CHECK(put_jmp(p->stub, (uint64_t)pre) == 14);
		p->entry = (uint64_t)p->stub;
	}
	/* The site: jmp to the trampoline, the rest of the displaced bytes int3
	 * (nothing may run them now). */
	uint64_t pg = site & ~(PAGE - 1);
	CHECK(mprotect((void *)pg, 2 * PAGE, PROT_READ | PROT_WRITE | PROT_EXEC) == 0);
	memcpy(p->saved, site_p, p->ro.displaced);
	CHECK(put_jmp((uint8_t *)site, p->entry) == 5);
	memset((uint8_t *)site + 5, 0xcc, p->ro.displaced - 5);
	return 0;
}

static void uninstall(struct patch *p)
{
	memcpy((void *)p->site, p->saved, p->ro.displaced);
	munmap(p->page, PAGE);
	if (p->stub)
		munmap(p->stub, PAGE);
}

#define INSTALL(p, site, need, f, far) do { \
	if (install((p), (site), (need), (f), f##_end, (far)) < 0) { \
		printf("  reloc_build refused: %s\n", (p)->err); CHECK(0); } } while (0)

/* ---- tests ---- */

static void rip_relative_loads(void)
{
	struct patch p;
	long want = CALL0(t_lea);
	CHECK(want == 0x1122334455667788);
	INSTALL(&p, t_lea, 5, t_lea, 0);
	CHECK(p.ro.displaced == 7 && p.ro.n_insn == 1 && !p.ro.ends_flow);
	CHECK(CALL0(t_lea) == want);
	CHECK_EQ_U(hits(&p), 1);
	uninstall(&p);

	t_gval32 = 41;
	INSTALL(&p, t_load32, 5, t_load32, 0);
	CHECK(CALL0(t_load32) == 42);
	CHECK_EQ_U(hits(&p), 1);
	uninstall(&p);
}

static void rip_relative_store_and_imm(void)
{
	struct patch p;
	INSTALL(&p, t_store, 5, t_store, 0);
	CHECK(CALL1(t_store, 12345) == 12345 && t_gval == 12345);
	CHECK_EQ_U(hits(&p), 1);
	uninstall(&p);
	/* cmpl $5, disp(%rip): the immediate follows the displacement */
	t_gval32 = 5;
	long eq = CALL0(t_cmpimm);
	t_gval32 = 6;
	long ne = CALL0(t_cmpimm);
	CHECK(eq == 1 && ne == 0);
	INSTALL(&p, t_cmpimm_site, 5, t_cmpimm, 0);
	t_gval32 = 5;
	CHECK(CALL0(t_cmpimm) == eq);
	t_gval32 = 6;
	CHECK(CALL0(t_cmpimm) == ne);
	CHECK_EQ_U(hits(&p), 2);
	uninstall(&p);
}

/* The callee must see the original return address (after the call in
 * t_call), not one in the trampoline. */
static void call_keeps_return_address(void)
{
	for (int far = 0; far <= 1; far++) {
		struct patch p;
		t_seen_ret = 0;
		CHECK(CALL0(t_call) == 42 && t_seen_ret == (uint64_t)t_call_ret);
		INSTALL(&p, t_call_site, 5, t_call, far);
		CHECK(p.ro.ends_flow && p.ro.displaced == 5);
		t_seen_ret = 0;
		CHECK(CALL0(t_call) == 42);
		CHECK_EQ_U(t_seen_ret, (uint64_t)t_call_ret);
		CHECK_EQ_U(hits(&p), 1);
		uninstall(&p);
	}
}

/* reloc_build_pic: the same calls, run (the callee sees the original return
 * address); and the code is the same byte for byte when the site and the
 * trampoline move together, which reloc_build's is not (an immediate). */
static void pic_calls(void)
{
	use_pic = 1;
	call_keeps_return_address();
	struct patch p;
	t_seen_ret = 0;
	INSTALL(&p, t_callmem_site, 5, t_callmem, 0);
	CHECK(CALL0(t_callmem) == 42);
	CHECK_EQ_U(t_seen_ret, (uint64_t)t_callmem_ret);
	uninstall(&p);
	use_pic = 0;
	uint64_t site = (uint64_t)t_call_site, fa = (uint64_t)t_call, flen = (uint64_t)t_call_end - fa;
	const uint8_t *sp = (const uint8_t *)t_call_site, *fp = (const uint8_t *)t_call;
	const uint64_t tramp = site + 0x100000, d = 0x123450000ull; /* near: within a lea's reach */
	struct reloc_out a, b, x;
	char err[160];
	CHECK(reloc_build_pic(sp, fa + flen - site, site, 5, fp, flen, fa, tramp, &a, err, sizeof err) == 0);
	CHECK(reloc_build_pic(sp, fa + flen - site, site + d, 5, fp, flen, fa + d, tramp + d, &b, err,
	                      sizeof err) == 0);
	CHECK(!a.absolute && a.code_len == b.code_len && !memcmp(a.code, b.code, a.code_len));
	CHECK(reloc_build(sp, fa + flen - site, site, 5, fp, flen, fa, tramp, &x, err, sizeof err) == 0);
	CHECK(x.absolute);
	/* at another distance: the code built there equals this code with each
	 * rel32 that reaches the original code (ext_off) moved by the distance */
	const uint64_t m = 0x40000;
	CHECK(reloc_build_pic(sp, fa + flen - site, site, 5, fp, flen, fa, tramp + m, &b, err,
	                      sizeof err) == 0);
	CHECK(a.n_ext >= 2 && a.n_ext <= RELOC_MAX_EXT && b.code_len == a.code_len); /* the lea, the jmp */
	for (int q = 0; q < a.n_ext; q++) {
		int32_t v;
		memcpy(&v, a.code + a.ext_off[q], 4);
		v -= (int32_t)m;
		memcpy(a.code + a.ext_off[q], &v, 4);
	}
	CHECK(!memcmp(a.code, b.code, a.code_len));
}

static void call_through_rip_memory(void)
{
	struct patch p;
	t_seen_ret = 0;
	CHECK(CALL0(t_callmem) == 42 && t_seen_ret == (uint64_t)t_callmem_ret);
	INSTALL(&p, t_callmem_site, 5, t_callmem, 0);
	t_seen_ret = 0;
	CHECK(CALL0(t_callmem) == 42);
	CHECK_EQ_U(t_seen_ret, (uint64_t)t_callmem_ret);
	CHECK_EQ_U(hits(&p), 1);
	uninstall(&p);
}

/* je rel8 taken and not taken, with the compare displaced too or not, near
 * (jcc rel32) and far (inverted jcc over an absolute jump). */
static void jcc_short_taken_and_not(void)
{
	long taken = CALL1(t_jcc, 0), not_taken = CALL1(t_jcc, 5);
	CHECK(taken == 2 && not_taken == 1);
	const void *sites[2] = { t_jcc, t_jcc_je };
	for (int s = 0; s < 2; s++)
		for (int far = 0; far <= 1; far++) {
			struct patch p;
			INSTALL(&p, sites[s], 5, t_jcc, far);
			CHECK(CALL1(t_jcc, 0) == taken);
			CHECK(CALL1(t_jcc, 5) == not_taken);
			CHECK(CALL1(t_jcc, -3) == not_taken);
			CHECK_EQ_U(hits(&p), 3);
			uninstall(&p);
		}
}

static void jmp_short_ends_flow(void)
{
	long want = CALL0(t_jmp);
	CHECK(want == 2);
	for (int far = 0; far <= 1; far++) {
		struct patch p;
		INSTALL(&p, t_jmp_site, 5, t_jmp, far);
		/* jmp rel8 + the dead mov after it: taken, only the jmp relocated */
		CHECK(p.ro.ends_flow && p.ro.n_insn == 2 && p.ro.displaced == 7);
		CHECK(CALL0(t_jmp) == want);
		CHECK_EQ_U(hits(&p), 1);
		uninstall(&p);
	}
}

static void jrcxz_and_loop(void)
{
	long z = CALL1(t_jrcxz, 0), nz = CALL1(t_jrcxz, 7);
	CHECK(z == 2 && nz == 1);
	long l1 = CALL1(t_loop, 1), l5 = CALL1(t_loop, 5);
	CHECK(l1 == 1003 && l5 == 1015);
	for (int far = 0; far <= 1; far++) {
		struct patch p;
		INSTALL(&p, t_jrcxz_site, 5, t_jrcxz, far);
		CHECK(CALL1(t_jrcxz, 0) == z && CALL1(t_jrcxz, 7) == nz);
		CHECK_EQ_U(hits(&p), 2);
		uninstall(&p);
		/* the loop instruction itself is the site: one hit per iteration */
		INSTALL(&p, t_loop_site, 5, t_loop, far);
		CHECK(CALL1(t_loop, 1) == l1 && CALL1(t_loop, 5) == l5);
		CHECK_EQ_U(hits(&p), 6);
		uninstall(&p);
	}
}

static void prologue_and_ret(void)
{
	long want = CALL1(t_prologue, 9);
	CHECK(want == 81);
	static const size_t needs[3] = { 1, 5, 8 };
	static const size_t disp[3] = { 4, 5, 8 };  /* endbr64 | +push rbp | +mov rbp,rsp */
	for (int k = 0; k < 3; k++) {
		struct patch p;
		if (needs[k] < 5) { /* too short for the jmp: only check what is taken */
			struct reloc_out o;
			char err[256];
			CHECK(reloc_build((const uint8_t *)t_prologue, 16, (uint64_t)t_prologue, needs[k], NULL, 0, 0,
			                  (uint64_t)t_prologue + 4096, &o, err, sizeof err) == 0);
			CHECK(o.displaced == disp[k] && o.n_insn == 1 && o.code_len == 4);
			continue;
		}
		INSTALL(&p, t_prologue, needs[k], t_prologue, 0);
		CHECK(p.ro.displaced == disp[k] && p.ro.code_len == disp[k]);
		CHECK(CALL1(t_prologue, 9) == want && CALL1(t_prologue, -4) == 16);
		CHECK_EQ_U(hits(&p), 2);
		uninstall(&p);
	}
	struct patch p;
	INSTALL(&p, t_ret, 6, t_ret, 0);
	CHECK(p.ro.ends_flow && p.ro.displaced == 6);
	CHECK(CALL0(t_ret) == 7);
	CHECK_EQ_U(hits(&p), 1);
	uninstall(&p);
}

static void refuses_syscall_and_traps(void)
{
	struct patch p;
	CHECK(install(&p, t_sys, 6, t_sys, t_sys_end, 0) == -1);
	CHECK(strstr(p.err, "syscall") && strstr(p.err, "displaced"));
	/* the mov alone is fine */
	CHECK(install(&p, t_sys, 5, t_sys, t_sys_end, 0) == 0);
	CHECK(CALL0(t_sys) == getpid());
	uninstall(&p);
	static const struct { const char *name; uint8_t b[8]; } bad[] = {
		{ "int3", { 0xcc } }, { "int", { 0xcd, 0x80 } }, { "ud2", { 0x0f, 0x0b } },
		{ "hlt", { 0xf4 } }, { "sysenter", { 0x0f, 0x34 } },
		{ "xbegin", { 0xc7, 0xf8, 0, 0, 0, 0 } }, { "ljmp", { 0xff, 0x28 } },
		{ "mov", { 0x67, 0x8b, 0x05, 1, 0, 0, 0 } }, /* EIP-relative */
	};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		struct reloc_out o;
		char err[256] = "";
		CHECK(reloc_build(bad[k].b, sizeof bad[k].b, 0x401000, 1, NULL, 0, 0, 0x402000, &o, err, sizeof err) == -1);
		if (strncmp(err, bad[k].name, strlen(bad[k].name))) {
			printf("  %s: %s\n", bad[k].name, err);
			CHECK(0);
		}
	}
}

/* A loop whose head is 4 bytes after the site: the jmp would cut it. */
static void refuses_branch_into_displaced(void)
{
	struct patch p;
	long want = CALL1(t_mid, 4);
	CHECK(want == 10);
	CHECK(install(&p, t_mid, 5, t_mid, t_mid_end, 0) == -1);
	char head[32];
	snprintf(head, sizeof head, "0x%" PRIx64 " ", (uint64_t)t_mid_head);
	if (!strstr(p.err, "inside") || !strstr(p.err, head)) {
		printf("  %s (head %s)\n", p.err, head);
		CHECK(0);
	}
	/* the loop head itself is a fine site */
	INSTALL(&p, t_mid_head, 5, t_mid, 0);
	CHECK(CALL1(t_mid, 4) == want);
	CHECK_EQ_U(hits(&p), 4);
	uninstall(&p);
	/* without the function, more than one byte is refused */
	struct reloc_out o;
	CHECK(reloc_build((const uint8_t *)t_mid, 16, (uint64_t)t_mid, 5, NULL, 0, 0, (uint64_t)t_mid + 4096, &o,
	                  p.err, sizeof p.err) == -1 && strstr(p.err, "unknown"));
}

static void refuses_rip_out_of_range(void)
{
	struct reloc_out o;
	char err[256];
	uint64_t site = (uint64_t)t_lea;
	/* The function is t_lea's bytes only: 16 bytes from it reach into
	 * t_load32, whose displacement bytes (the distance to t_gval, which the
	 * link decides) can decode as a branch back into the displaced range. */
	size_t len = (size_t)(t_lea_end - t_lea);
	CHECK(reloc_build((const uint8_t *)t_lea, 16, site, 5, (const uint8_t *)t_lea, len, site, site + (3ull << 30),
	                  &o, err, sizeof err) == -1);
	CHECK(strstr(err, "rip-relative operand out of ±2 GiB from the trampoline"));
	CHECK(reloc_build((const uint8_t *)t_lea, 16, site, 5, (const uint8_t *)t_lea, len, site, site - (3ull << 30),
	                  &o, err, sizeof err) == -1);
	/* the same at 1 GiB is fine */
	CHECK(reloc_build((const uint8_t *)t_lea, 16, site, 5, (const uint8_t *)t_lea, len, site, site + (1ull << 30),
	                  &o, err, sizeof err) == 0);
}

/* The code of a call relocated at a low and a high address, read back with
 * capstone: push of the original return address, then a jump to the callee. */
static void call_push_forms(void)
{
	static const uint64_t sites[2] = { 0x401000, 0x7f1234561000 };
	const uint8_t call[5] = { 0xe8, 0x10, 0x20, 0, 0 }; /* call .+0x2015 */
	for (int k = 0; k < 2; k++) {
		struct reloc_out o;
		char err[256];
		uint64_t tr = sites[k] + 0x100000;
		CHECK(reloc_build(call, 5, sites[k], 5, call, 5, sites[k], tr, &o, err, sizeof err) == 0);
		CHECK(o.ends_flow && o.displaced == 5);
		struct arch_insn i;
		size_t off = 0;
		CHECK(arch_decode(o.code, o.code_len, tr, &i) == 0 && i.kind == AI_PUSH && i.op[0].type == 2);
		off += (size_t)i.len;
		if (k == 1) { /* movl $hi, 4(%rsp) */
			CHECK(arch_decode(o.code + off, o.code_len - off, tr + off, &i) == 0 && i.id != 0);
			CHECK(i.op[0].type == 3 && i.op[0].disp == 4 && i.op[1].type == 2);
			CHECK_EQ_U((uint64_t)i.op[1].imm & 0xffffffffull, sites[k] >> 32);
			off += (size_t)i.len;
		} else {
			CHECK_EQ_U((uint64_t)i.op[0].imm, sites[k] + 5);
		}
		CHECK(arch_decode(o.code + off, o.code_len - off, tr + off, &i) == 0 && i.kind == AI_JMP);
		CHECK_EQ_U(arch_branch_target(&i), sites[k] + 5 + 0x2010);
		CHECK(off + (size_t)i.len == o.code_len);
	}
	/* a call that is not the last instruction would return into the jmp */
	const uint8_t two[7] = { 0xff, 0xd0, 0xb8, 1, 0, 0, 0 }; /* call *%rax; mov $1,%eax */
	struct reloc_out o;
	char err[256];
	CHECK(reloc_build(two, 7, 0x401000, 5, two, 7, 0x401000, 0x402000, &o, err, sizeof err) == -1);
	CHECK(strstr(err, "return into"));
	/* call *8(%rsp): the push would move its operand */
	const uint8_t viarsp[4] = { 0xff, 0x54, 0x24, 0x08 };
	CHECK(reloc_build(viarsp, 4, 0x401000, 1, NULL, 0, 0, 0x402000, &o, err, sizeof err) == -1);
}

/* Bad input: short or undecodable bytes, a site outside its function or not
 * on an instruction boundary. */
static void bad_input(void)
{
	struct reloc_out o;
	char err[256];
	const uint8_t nops[8] = { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90 };
	CHECK(reloc_build(nops, 3, 0x1000, 5, nops, 8, 0x1000, 0x2000, &o, err, sizeof err) == -1 && strstr(err, "readable"));
	CHECK(reloc_build((const uint8_t[]){ 0x0f }, 1, 0x1000, 1, NULL, 0, 0, 0x2000, &o, err, sizeof err) == -1 &&
	      strstr(err, "undecodable"));
	CHECK(reloc_build(nops, 8, 0x1000, 5, nops, 8, 0x2000, 0x3000, &o, err, sizeof err) == -1 && strstr(err, "outside"));
	CHECK(reloc_build(nops, 8, 0x1000, 5, nops, 4, 0x1000, 0x3000, &o, err, sizeof err) == -1 && strstr(err, "end of the function"));
	/* mov $0x90909090,%eax seen from its second byte */
	const uint8_t movi[8] = { 0xb8, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xc3 };
	CHECK(reloc_build(movi + 1, 7, 0x1001, 5, movi, 8, 0x1000, 0x3000, &o, err, sizeof err) == -1 && strstr(err, "boundary"));
	CHECK(reloc_build(NULL, 0, 0x1000, 5, NULL, 0, 0, 0x3000, &o, err, sizeof err) == -1);
	/* the ptrace engine's one-instruction copy is the same code */
	struct arch_insn i;
	uint8_t a[ARCH_SLOT_SIZE], b[16];
	const char *why = NULL;
	CHECK(arch_decode((const uint8_t *)t_lea, 16, (uint64_t)t_lea, &i) == 0 && i.rip_rel);
	CHECK(arch_ool_build(&i, (uint64_t)t_lea + 4096, 1, a, &why) == i.len + 1);
	CHECK(reloc_copy_insn(&i, (uint64_t)t_lea + 4096, b, &why) == i.len && !memcmp(a, b, (size_t)i.len));
}

/* Random bytes: an answer every time, within bounds, never a crash. */
static void random_bytes(void)
{
	uint64_t x = 88172645463325252ull;
	int ok = 0;
	for (int round = 0; round < 20000; round++) {
		uint8_t b[48];
		for (size_t k = 0; k < sizeof b; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[k] = (uint8_t)x;
		}
		size_t need = 1 + (size_t)(x >> 40) % 16;
		uint64_t site = 0x400000 + (x >> 20) % 16, tramp = (x & 1) ? site + 0x10000 : site + (5ull << 30);
		struct reloc_out o;
		char err[128];
		memset(err, 0, sizeof err);
		int rc = reloc_build(b + (site - 0x400000), sizeof b - (site - 0x400000), site, need, b, sizeof b,
		                     0x400000, tramp, &o, err, sizeof err);
		if (rc == 0) {
			CHECK(o.displaced >= need && o.displaced <= sizeof b && o.code_len <= RELOC_MAX_CODE);
			CHECK(o.n_insn >= 1 && (size_t)o.n_insn <= o.displaced);
			ok++;
		} else {
			CHECK(rc == -1 && err[0] && strlen(err) < sizeof err);
		}
	}
	printf("  %d of 20000 random sites relocated\n", ok);
	CHECK(ok > 0);
}

/* ---- real gcc -O2 code: every site of one function ---- */

int t_c_scale = 3;
__attribute__((noinline)) long t_c_helper(long s) { return s / 7 + 1; }
__attribute__((noinline, section("reloc_gcc_text"))) long t_c_work(const int *a, int n)
{
	long s = 0;
	for (int i = 0; i < n; i++) {
		if (a[i] & 1)
			s += a[i] * t_c_scale;
		else
			s -= a[i] >> 1;
		if (s > 5000)
			s = t_c_helper(s);
	}
	return s;
}
extern const uint8_t __start_reloc_gcc_text[], __stop_reloc_gcc_text[];

static long run_work(void)
{
	static int a[300];
	long sum = 0;
	for (int k = 0; k < 300; k++)
		a[k] = (k * 7919) % 1009;
	for (int n = 0; n < 300; n += 37)
		sum = sum * 31 + t_c_work(a, n);
	return sum;
}

/* Near: jcc/jmp/call retargeted with rel32.  Far (more than 4 GiB away): the
 * absolute forms, and the sites covering the RIP-relative load refused. */
static void every_site(int far)
{
	const uint8_t *f = __start_reloc_gcc_text;
	size_t flen = (size_t)(__stop_reloc_gcc_text - f);
	/* (through a volatile: gcc folds the comparison of two distinct symbols) */
	volatile uintptr_t fn = (uintptr_t)t_c_work;
	CHECK(fn == (uintptr_t)f && flen > 16 && flen < 4096);
	long want = run_work();
	/* instruction starts and direct branch targets, read with capstone */
	uint64_t starts[1024], targets[256];
	int ripr[1024];
	int ns = 0, nt = 0;
	for (size_t off = 0; off < flen && ns < 1024;) {
		struct arch_insn i;
		CHECK(arch_decode(f + off, flen - off, (uint64_t)f + off, &i) == 0);
		ripr[ns] = i.rip_rel;
		starts[ns++] = (uint64_t)f + off;
		uint64_t t = arch_branch_target(&i);
		if (t >= (uint64_t)f && t < (uint64_t)f + flen && nt < 256)
			targets[nt++] = t;
		off += (size_t)i.len;
	}
	CHECK(nt > 0);
	int accepted = 0, refused_inside = 0, expected_inside = 0, refused_rip = 0, expected_rip = 0;
	uint64_t total_hits = 0;
	for (int k = 0; k < ns; k++) {
		/* the instructions a 5-byte jump at starts[k] covers */
		int e = k;
		while (e < ns && starts[e] < starts[k] + 5)
			e++;
		if (e >= ns)
			break; /* runs past the end of the function */
		int inside = 0;
		for (int t = 0; t < nt; t++)
			if (targets[t] > starts[k] && targets[t] < starts[e])
				inside = 1;
		int rip = 0;
		for (int j = k; j < e; j++)
			rip |= far && ripr[j];
		expected_inside += inside;
		expected_rip += rip && !inside;
		struct patch p;
		if (install(&p, (const void *)starts[k], 5, f, f + flen, far) < 0) {
			if (inside) {
				CHECK(strstr(p.err, "inside"));
				refused_inside++;
			} else if (rip) {
				CHECK(strstr(p.err, "rip-relative operand out of"));
				refused_rip++;
			} else {
				printf("  refused 0x%" PRIx64 " (+%" PRIu64 "): %s\n", starts[k], starts[k] - (uint64_t)f, p.err);
			}
			continue;
		}
		CHECK(!inside && !rip);
		CHECK_EQ_U(p.ro.displaced, starts[e] - starts[k]);
		accepted++;
		long got = run_work();
		if (got != want) {
			printf("  site +%" PRIu64 ": %ld, want %ld\n", starts[k] - (uint64_t)f, got, want);
			CHECK(0);
		}
		total_hits += hits(&p);
		uninstall(&p);
	}
	printf("  gcc -O2 function, %s trampoline: %d instructions, %d sites relocated and run, %d refused for a "
	       "branch target inside, %d for a RIP-relative operand\n", far ? "far" : "near", ns, accepted,
	       refused_inside, refused_rip);
	CHECK(refused_inside == expected_inside && refused_inside > 0);
	CHECK(refused_rip == expected_rip && (!far || refused_rip > 0));
	CHECK(accepted > ns / 2 && total_hits > 0);
}

static void gcc_o2_every_site(void) { every_site(0); }
static void gcc_o2_every_site_far(void) { every_site(1); }

int main(void)
{
	RUN(rip_relative_loads);
	RUN(rip_relative_store_and_imm);
	RUN(call_keeps_return_address);
	RUN(call_through_rip_memory);
	RUN(pic_calls);
	RUN(jcc_short_taken_and_not);
	RUN(jmp_short_ends_flow);
	RUN(jrcxz_and_loop);
	RUN(prologue_and_ret);
	RUN(refuses_syscall_and_traps);
	RUN(refuses_branch_into_displaced);
	RUN(refuses_rip_out_of_range);
	RUN(call_push_forms);
	RUN(bad_input);
	RUN(random_bytes);
	RUN(gcc_o2_every_site);
	RUN(gcc_o2_every_site_far);
	UNIT_END();
}

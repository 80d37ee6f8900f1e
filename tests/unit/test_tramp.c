/* test_tramp.c — unit tests of the agent's slot code with a post call
 * (src/arch/x86_64/tramp.c, tramp_build_post; plugin probes of ABI 2).
 * The slot is built for a page mapped near a small function of this
 * program and run by calling the slot as if the function's site had jumped
 * there: the function's result must be unchanged, the hit function called
 * before the displaced instruction and the post stub after it, with the
 * site's index and the register the instruction set.  Refusals: a post at a
 * ret or a branch. */
#include "unit.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/tramp.h"

#define PAGE 4096ul

/* t_int3: xor eax,eax; add rax,rdi; ret  → rdi
 * t_jmp:  lea eax,[rdi+rdi*2+1]; add eax,10; ret  → 3*rdi+11
 * t_post: the post stub: records 8(%rsp) (the index) and rax, keeps the rest */
__asm__(".text\n"
        ".globl t_int3, t_int3_end, t_jmp, t_jmp_end, t_post\n"
        "t_int3:\n  xor %eax,%eax\n  add %rdi,%rax\n  ret\nt_int3_end:\n"
        "t_jmp:\n  lea 1(%rdi,%rdi,2),%eax\n  add $10,%eax\n  ret\nt_jmp_end:\n"
        "t_post:\n  mov 8(%rsp),%r11\n  mov %r11,t_post_idx(%rip)\n  mov %rax,t_post_rax(%rip)\n"
        "  incq t_post_n(%rip)\n  ret\n");
extern char t_int3[], t_int3_end[], t_jmp[], t_jmp_end[], t_post[];
uint64_t t_post_idx, t_post_rax, t_post_n;
static uint64_t hit_n, hit_idx;

static void t_hit(uint32_t idx, uint64_t *sp, const uint64_t *regs)
{
	(void)sp;
	(void)regs;
	hit_n++;
	hit_idx = idx;
}

static uint8_t *map_near(uint64_t addr)
{
	for (int k = 1; k < 4096; k++) {
		uint64_t want = ((addr - (uint64_t)k * 0x100000) & ~(PAGE - 1));
		void *p = mmap((void *)want, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != MAP_FAILED && (uint64_t)p == want)
			return p;
		if (p != MAP_FAILED)
			munmap(p, PAGE);
	}
	return NULL;
}

static void int3_site(void)
{
	uint8_t *pg = map_near((uint64_t)t_int3);
	CHECK(pg);
	struct tramp t;
	char err[200];
	size_t len = (size_t)(t_int3_end - t_int3);
	CHECK(tramp_build_post((const uint8_t *)t_int3, len, (uint64_t)t_int3, NULL, 0, 0, (uint64_t)pg,
	                       (uint64_t)t_hit, (uint64_t)t_post, 7, 0, &t, err, sizeof err) == 0);
	CHECK(!t.jmp);
	CHECK_EQ_U(t.post_len, 2);
	CHECK_EQ_U(t.displaced_off, 0);
	memcpy(pg, t.code, t.len);
	long (*slot)(long) = (long (*)(long))(void *)pg; /* as the SIGTRAP handler sends the thread there */
	CHECK_EQ_U(slot(5), 5);
	CHECK_EQ_U(slot(41), 41);
	CHECK_EQ_U(t_post_n, 2);
	CHECK_EQ_U(t_post_idx, 7);
	CHECK_EQ_U(t_post_rax, 0); /* after the xor */
}

static void jmp_site(void)
{
	uint8_t *pg = map_near((uint64_t)t_jmp);
	CHECK(pg);
	struct tramp t;
	char err[200];
	size_t len = (size_t)(t_jmp_end - t_jmp);
	CHECK(tramp_build_post((const uint8_t *)t_jmp, len, (uint64_t)t_jmp, (const uint8_t *)t_jmp, len,
	                       (uint64_t)t_jmp, (uint64_t)pg, (uint64_t)t_hit, (uint64_t)t_post, 9, 1, &t, err,
	                       sizeof err) == 0);
	CHECK(t.jmp);
	CHECK_EQ_U(t.post_len, 4);
	CHECK_EQ_U(t.orig_len, 7); /* lea and add: the jump needs 5 bytes */
	memcpy(pg, t.code, t.len);
	long (*slot)(long) = (long (*)(long))(void *)pg; /* as the site's jump sends the thread there */
	CHECK_EQ_U(slot(5), 26);
	CHECK_EQ_U(hit_n, 1);
	CHECK_EQ_U(hit_idx, 9);
	CHECK_EQ_U(t_post_n, 1);
	CHECK_EQ_U(t_post_idx, 9);
	CHECK_EQ_U(t_post_rax, 16); /* after the lea, before the add */
}

static void refusals(void)
{
	static const uint8_t ret[] = { 0xc3 }, jmp[] = { 0xeb, 0x00, 0x90, 0x90, 0x90, 0x90 },
	                     call[] = { 0xe8, 0, 0, 0, 0, 0x90 };
	struct tramp t;
	char err[200];
	CHECK(tramp_build_post(ret, sizeof ret, 0x401000, NULL, 0, 0, 0x402000, 0x403000, 0x404000, 1, 0, &t, err,
	                       sizeof err) == -1 && strstr(err, "post handler") && strstr(err, "--engine=ptrace"));
	CHECK(tramp_build_post(jmp, sizeof jmp, 0x401000, NULL, 0, 0, 0x402000, 0x403000, 0x404000, 1, 0, &t, err,
	                       sizeof err) == -1 && strstr(err, "post handler"));
	CHECK(tramp_build_post(call, sizeof call, 0x401000, NULL, 0, 0, 0x402000, 0x403000, 0x404000, 1, 0, &t, err,
	                       sizeof err) == -1 && strstr(err, "post handler"));
}

int main(void)
{
	RUN(int3_site);
	RUN(jmp_site);
	RUN(refusals);
	UNIT_END();
}

/* probe_plugin.c — the agent's side of plugin probes (ABI 2 of
 * include/sonde/probe.h; sonde's side is src/probe/agent/agent_plugin.c and
 * kind_plugin.c, docs/PROBES.md "Plugins on the agent").
 *
 * sonde names the plugin in the shared area and asks PA_OP_PLUGIN: the
 * agent's thread dlopens it (never dlclosed: a thread may be in a handler
 * when sonde goes).  A hit of a site with a plugin probe calls its pre
 * handler from probes.c's hit function; a post site's slot calls
 * pa_post_stub after the displaced instruction, which calls the post
 * handler with the registers the instruction left.  Around a handler the
 * thread's whole extended state (xsavec, xsave, or fxsave) and errno are
 * saved: the handler is ordinary code, this file is built with
 * -mgeneral-regs-only like probes.c.  Once sonde is gone no handler is
 * called any more. */
#include "rt/probe_plugin.h"
#include "common/clock.h"

#include "sonde/probe.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define XSAVE_MAX 4096 /* bytes of extended state saved on the stack at most (AVX-512: 2696) */
#define READ_MAX  (1u << 20)

static const struct sonde_probe_plugin *plug;
static struct pa_hdr *hdr;
static uint32_t hdr_n;
static struct pa_plugins *blk;
static int live;
static uint32_t xsave_size;   /* 0: fxsave (512 bytes) */
static int xsavec;            /* the compacted form (only the components in use are written) */
static pid_t my_pid;
static __thread uint64_t post_hits __attribute__((tls_model("initial-exec")));
static __thread int tid_tls __attribute__((tls_model("initial-exec"))); /* 0: not known yet */

RT_HIDDEN void pa_post(uint32_t idx, uint64_t sp, const uint64_t *regs);
extern char pa_post_stub[] RT_HIDDEN;

/* Called by a post site's slot (src/arch/x86_64/tramp.c, tramp_build_post):
 * [rsp] its return, 8(%rsp) the site's index, then the red zone; the
 * registers are saved as the trampoline does (enum pa_reg). */
__asm__(".text\n"
        ".globl pa_post_stub\n"
        ".hidden pa_post_stub\n"
        ".type pa_post_stub,@function\n"
        "pa_post_stub:\n"
        "  pushfq\n"
        "  push %rax\n  push %rcx\n  push %rdx\n  push %rsi\n  push %rdi\n"
        "  push %r8\n  push %r9\n  push %r10\n  push %r11\n"
        "  push %rbx\n  push %rbp\n  push %r12\n  push %r13\n  push %r14\n  push %r15\n"
        "  mov %rsp, %rbx\n"
        "  and $-16, %rsp\n"
        "  mov 136(%rbx), %edi\n"     /* the index */
        "  lea 272(%rbx), %rsi\n"     /* the stack pointer after the instruction */
        "  mov %rbx, %rdx\n"
        "  call pa_post\n"
        "  mov %rbx, %rsp\n"
        "  pop %r15\n  pop %r14\n  pop %r13\n  pop %r12\n  pop %rbp\n  pop %rbx\n"
        "  pop %r11\n  pop %r10\n  pop %r9\n  pop %r8\n"
        "  pop %rdi\n  pop %rsi\n  pop %rdx\n  pop %rcx\n  pop %rax\n"
        "  popfq\n"
        "  ret\n"
        ".size pa_post_stub, .-pa_post_stub\n");

static void child_pid(void)
{
	my_pid = getpid();
	tid_tls = 0; /* the forking thread, the child's only one, has a new id */
}

/* The program's own memory; a bad address is -1, never a fault. */
static int self_read(const struct sonde_probe_ctx *c, uint64_t addr, void *buf, size_t len)
{
	(void)c;
	if (!len)
		return 0;
	if (!buf || len > READ_MAX)
		return -1;
	struct iovec l = { buf, len }, r = { (void *)addr, len };
	return syscall(SYS_process_vm_readv, my_pid, &l, 1UL, &r, 1UL, 0UL) == (long)len ? 0 : -1;
}

RT_HIDDEN int pa_plugin_load(struct pa_hdr *h, uint32_t nsites, char *msg, size_t n)
{
	struct pa_plugins *b = (struct pa_plugins *)((char *)h + pa_plugins_off(nsites));
	char path[PA_PLUGIN_PATH];
	for (size_t i = 0; i < sizeof path; i++)
		path[i] = b->path[i];
	path[sizeof path - 1] = 0;
	if (path[0] != '/') {
		snprintf(msg, n, "the plugin's path is not absolute");
		return -EINVAL;
	}
	void *d = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!d) {
		snprintf(msg, n, "the program cannot load the plugin (%s)", dlerror());
		return -ENOENT;
	}
	const struct sonde_probe_plugin *pl = dlsym(d, "sonde_probe_plugin");
	if (!pl || pl->abi != SONDE_PROBE_ABI2 || pl->result_size > PA_RESULT_MAX) {
		snprintf(msg, n, "the plugin %s is not one of SONDE_PROBE_ABI2 here", path);
		return -EINVAL; /* stays loaded: its constructors ran */
	}
	unsigned a, bx, c, dx;
	xsave_size = 0;
	if (__get_cpuid(1, &a, &bx, &c, &dx) && (c & (1u << 27)) && __get_cpuid_count(0xd, 0, &a, &bx, &c, &dx))
		xsave_size = bx; /* OSXSAVE: the size of the state XCR0 enables */
	xsavec = xsave_size && __get_cpuid_count(0xd, 1, &a, &bx, &c, &dx) && (a & 2);
	if (xsave_size > XSAVE_MAX) {
		snprintf(msg, n, "the extended state of this CPU (%u bytes) is more than the agent saves", xsave_size);
		return -ENOSPC;
	}
	static int forked_hook;
	my_pid = getpid();
	if (!forked_hook && pthread_atfork(NULL, NULL, child_pid) == 0)
		forked_hook = 1;
	hdr = h;
	hdr_n = nsites;
	blk = b;
	b->post_fn = (uint64_t)pa_post_stub;
	__atomic_store_n(&plug, pl, __ATOMIC_RELEASE);
	__atomic_store_n(&live, 1, __ATOMIC_RELEASE);
	b->loaded = 1;
	return 0;
}

RT_HIDDEN void pa_plugin_end(void)
{
	__atomic_store_n(&live, 0, __ATOMIC_RELEASE);
}

static void call(void (*fn)(struct sonde_probe_ctx *), struct pa_pprobe *pp, const struct pa_site *s, uint64_t sp,
                 const uint64_t *regs, uint64_t pc, uint64_t hits);
static void call_saving_fp(void (*fn)(struct sonde_probe_ctx *), struct pa_pprobe *pp, const struct pa_site *s,
                           uint64_t sp, const uint64_t *regs, uint64_t pc, uint64_t hits);

/* plugin1: the site's plugin probe + 1 as the hit found it before the hit was
 * counted (pa_hit's plugin_of).  The probe's hits are counted here, by that
 * probe, just before its pre handler runs: a probe's pre calls are never
 * fewer than its hits, also while it is deleted (agent_kinds.c). */
static void run(const struct pa_site *s, uint32_t plugin1, int post, uint64_t sp, const uint64_t *regs, uint64_t pc)
{
	const struct sonde_probe_plugin *pl = __atomic_load_n(&plug, __ATOMIC_ACQUIRE);
	uint32_t k = plugin1 - 1;
	if (!pl || !__atomic_load_n(&live, __ATOMIC_ACQUIRE) || k >= PA_PLUGIN_MAX)
		return;
	void (*fn)(struct sonde_probe_ctx *) = post ? pl->post : pl->pre;
	struct pa_pprobe *pp = &blk->probes[k];
	/* The probe's hits (sonde's count of it, agent_kinds.c), a plugin
	 * without a pre handler's too; counted just before the handler runs,
	 * and done after it returns, so that a reading that waits for done to
	 * reach its hits has every one of their pre calls finished. */
	uint64_t hits = post ? post_hits : __atomic_add_fetch(&pp->hits, 1, __ATOMIC_RELEASE);
	if (!post)
		post_hits = hits;
	if (fn && (pl->flags & SONDE_PROBE_GENERAL_REGS_ONLY))
		call(fn, pp, s, sp, regs, pc, hits);
	else if (fn)
		call_saving_fp(fn, pp, s, sp, regs, pc, hits);
	/* the pre call over: a reading that waits for done to reach hits sees
	 * every counted hit's pre handler finished (agent_kinds.c) */
	if (!post)
		__atomic_add_fetch(&pp->done, 1, __ATOMIC_RELEASE);
}

/* call, with the floating-point and vector state saved around it. */
static void call_saving_fp(void (*fn)(struct sonde_probe_ctx *), struct pa_pprobe *pp, const struct pa_site *s,
                           uint64_t sp, const uint64_t *regs, uint64_t pc, uint64_t hits)
{
	_Alignas(64) uint8_t x[XSAVE_MAX];
	volatile uint64_t *hd = (volatile uint64_t *)(x + 512);
	for (int i = 0; i < 8; i++) /* the xsave header: xsave writes only its first word */
		hd[i] = 0;
	if (xsavec)
		__asm__ volatile("xsavec64 %0" : "+m"(*(uint8_t(*)[XSAVE_MAX])x) : "a"(-1), "d"(-1) : "memory");
	else if (xsave_size)
		__asm__ volatile("xsave64 %0" : "+m"(*(uint8_t(*)[XSAVE_MAX])x) : "a"(-1), "d"(-1) : "memory");
	else
		__asm__ volatile("fxsave64 %0" : "+m"(*(uint8_t(*)[XSAVE_MAX])x) : : "memory");
	call(fn, pp, s, sp, regs, pc, hits);
	if (xsave_size)
		__asm__ volatile("xrstor64 %0" : : "m"(*(uint8_t(*)[XSAVE_MAX])x), "a"(-1), "d"(-1) : "memory");
	else
		__asm__ volatile("fxrstor64 %0" : : "m"(*(uint8_t(*)[XSAVE_MAX])x) : "memory");
}

/* The handler itself, errno kept. */
static void call(void (*fn)(struct sonde_probe_ctx *), struct pa_pprobe *pp, const struct pa_site *s, uint64_t sp,
                 const uint64_t *regs, uint64_t pc, uint64_t hits)
{
	int saved_errno = errno;
	struct sonde_probe_ctx c = {
		.id = pp->id, .spec = pp->spec, .arg = pp->arg, .pid = my_pid,
		.tid = tid_tls ? tid_tls : (tid_tls = (int)syscall(SYS_gettid)), .addr = s->addr,
		.time_ns = clock_mono_ns(), .hits = hits,
		.regs = {
			.rax = regs[PA_RAX], .rbx = regs[PA_RBX], .rcx = regs[PA_RCX], .rdx = regs[PA_RDX],
			.rsi = regs[PA_RSI], .rdi = regs[PA_RDI], .rbp = regs[PA_RBP], .rsp = sp,
			.r8 = regs[PA_R8], .r9 = regs[PA_R9], .r10 = regs[PA_R10], .r11 = regs[PA_R11],
			.r12 = regs[PA_R12], .r13 = regs[PA_R13], .r14 = regs[PA_R14], .r15 = regs[PA_R15],
			.rip = pc, .eflags = regs[PA_FLAGS],
		},
		.read = self_read, .result = pp->result, .result_size = blk->result_size, .in_target = 1,
	};
	fn(&c);
	__atomic_fetch_add(&blk->calls, 1, __ATOMIC_RELAXED);
	errno = saved_errno;
}

RT_HIDDEN void pa_plugin_pre(const struct pa_site *s, uint32_t plugin1, uint64_t sp, const uint64_t *regs)
{
	run(s, plugin1, 0, sp, regs, s->addr);
}

RT_HIDDEN void pa_post(uint32_t idx, uint64_t sp, const uint64_t *regs)
{
	if (!hdr || idx >= hdr_n)
		return;
	const struct pa_site *s = &hdr->sites[idx];
	uint32_t len = __atomic_load_n(&s->post, __ATOMIC_ACQUIRE);
	if (len && !__atomic_load_n(&s->off, __ATOMIC_RELAXED)) /* not disabled (`disable ID`) */
		run(s, __atomic_load_n(&s->plugin1, __ATOMIC_ACQUIRE), 1, sp, regs, s->addr + len);
}

/* probes.c — the agent's probe engine, inside the probed program (the agent
 * backend of `sonde probe`; sonde's side is src/probe/agent/agent_be.c, the
 * memory both share src/common/probe_area.h, docs/PROBES.md "Engines").
 *
 * A site is reached either by a 5-byte jmp to its slot (a trampoline sonde
 * built: save the registers, call pa_hit, restore, run the displaced
 * instructions, jump back) or by an int3 that the SIGTRAP handler here turns
 * into the same call, then sends to the slot's displaced instructions.  A
 * func site replaces the return address with pa_exit_stub, which times the
 * call and returns where the call would have (a per-thread shadow stack).
 *
 * Code is changed through /proc/self/mem, int3 first, with every core
 * serialised (membarrier SYNC_CORE) between the steps, so that a thread
 * never runs half a jump; a thread that traps on an int3 that is gone again
 * re-runs the original instruction.  A server thread takes sonde's requests
 * (a byte on the pipe, the request in the shared area); the end of file of
 * that pipe means sonde is gone: every site gets its bytes back, and the
 * agent stays loaded, inert (returns still pending pass through the stub).
 *
 * Built with -mgeneral-regs-only: pa_hit and pa_exit run between the
 * program's instructions with only the general registers saved. */
#include "common/clock.h"
#include "common/probe_area.h"
#include "common/var_hist.h"
#include "rt/got.h"
#include "rt/probe_float.h"
#include "rt/probe_plugin.h"
#include "rt/probe_record.h"
#include "rt/probe_stack.h"
#include "rt/rt.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#define SHADOW_MAX  2048
#define REGION_SIZE (64 * 1024)
#define MAX_REGIONS 64

/* tag: the session's (sess_tag) | 1 when the return is recorded (--record). */
struct sframe { uint64_t ret, sp, ticks; uint32_t site, tag; };
/* A thread's own memory: the shadow stack of its probed calls, and the
 * latest hit of each time probe (of session tgen; probe_area.h). */
struct shadow {
	uint32_t n, pad;
	struct sframe f[SHADOW_MAX];
	uint64_t tgen;
	uint64_t tlast[PA_TIME_MAX];
};

static struct pa_hdr *pa;
static uint64_t pa_size;          /* its bytes mapped */
static void *pa_prev;             /* the session before's area, unmapped at the next start */
static uint64_t pa_prev_size;
static uint32_t pa_n;
/* Each start() takes the next tag (bit 0 kept for "recorded"): a return
 * pending from an earlier session is not booked into this one's sites. */
static uint32_t sess_tag;
static int mem_fd = -1, alive_fd = -1;
static int area_keep = -1;      /* the session's area (close-on-exec), for an exec that keeps it */
static int sync_core_ok;
static pid_t self_pid;
static struct sigaction old_trap;
static int trap_installed;
static pthread_key_t shadow_key;
static int running;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { uint64_t base, used; } regions[MAX_REGIONS];
static int nregions;
static __thread struct shadow *sh_tls __attribute__((tls_model("initial-exec")));

/* The sites sonde has written so far (probe_area.h, nused): the loops over
 * sites go no further, so the pages of the table's unused records are never
 * touched (resident) in the program. */
static inline uint32_t sites_used(const struct pa_hdr *h)
{
	uint32_t n = __atomic_load_n(&h->nused, __ATOMIC_ACQUIRE);
	return n < pa_n ? n : pa_n;
}

RT_HIDDEN void pa_hit(uint32_t idx, uint64_t *sp, const uint64_t *regs);
RT_HIDDEN uint64_t pa_exit(uint64_t sp_after);
static void exec_follow(void);
extern char pa_exit_stub[] RT_HIDDEN;

/* The return of a probed function lands here: the real return address is
 * found by pa_exit (which gets the stack pointer after the ret) and returned
 * to.  Every general register and the flags survive: the ABI would let a
 * return clobber all but rax, rdx and the callee-saved ones, but a caller in
 * the same unit as its callee is compiled knowing which registers the
 * callee really touches (gcc's -fipa-ra, on at -O2), and keeps values in the
 * others across the call (measured: a loop's sum in rsi across a call of a
 * 4-byte function came out wrong when the stub clobbered it).  The vector
 * registers are not touched (this file has no vector code). */
__asm__(".text\n"
        ".globl pa_exit_stub\n"
        ".hidden pa_exit_stub\n"
        ".type pa_exit_stub,@function\n"
        "pa_exit_stub:\n"
        "  sub $8, %rsp\n"               /* the real return address goes here */
        "  pushfq\n"
        "  push %rax\n  push %rcx\n  push %rdx\n  push %rsi\n  push %rdi\n"
        "  push %r8\n  push %r9\n  push %r10\n  push %r11\n"
        "  push %rbx\n"
        "  mov %rsp, %rbx\n"
        "  lea 96(%rsp), %rdi\n"         /* the stack pointer after the ret */
        "  and $-16, %rsp\n"
        "  call pa_exit\n"
        "  mov %rbx, %rsp\n"
        "  mov %rax, 88(%rsp)\n"
        "  pop %rbx\n"
        "  pop %r11\n  pop %r10\n  pop %r9\n  pop %r8\n"
        "  pop %rdi\n  pop %rsi\n  pop %rdx\n  pop %rcx\n  pop %rax\n"
        "  popfq\n"
        "  ret\n"
        ".size pa_exit_stub, .-pa_exit_stub\n");

static void shadow_free(void *p)
{
	if (p)
		munmap(p, sizeof(struct shadow));
}

static struct shadow *shadow_get(void)
{
	struct shadow *s = sh_tls;
	if (s)
		return s;
	void *m = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	sh_tls = s = m;
	pthread_setspecific(shadow_key, s);
	return s;
}

static void count_caller(struct pa_site *s, uint64_t ret)
{
	for (int i = 0; i < PA_CALLERS; i++) {
		uint64_t c = __atomic_load_n(&s->callers[i].ret, __ATOMIC_ACQUIRE);
		if (!c) {
			uint64_t z = 0;
			if (__atomic_compare_exchange_n(&s->callers[i].ret, &z, ret, 0, __ATOMIC_ACQ_REL,
			                                __ATOMIC_ACQUIRE))
				c = ret;
			else
				c = z;
		}
		if (c == ret) {
			__atomic_fetch_add(&s->callers[i].n, 1, __ATOMIC_RELAXED);
			return;
		}
	}
	__atomic_fetch_add(&s->callers_lost, 1, __ATOMIC_RELAXED);
}

#if defined(__GNUC__) && !defined(__clang__)
#define NO_LIBC_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define NO_LIBC_LOOPS
#endif
static int map_find(uint64_t addr, uint64_t n, uint64_t *lo_out, uint64_t *hi_out, char perm[4], char *buf,
                    size_t size);

/* This thread's stack (the readable mapping that held its stack pointer at
 * its first var read with memory): read directly while the thread runs on
 * it (a stack mapping does not shrink under its running thread). */
struct stack_map { uint64_t lo, hi; int state; /* 0 unknown, 1 known, 2 not found */ };
static __thread struct stack_map stk_tls __attribute__((tls_model("initial-exec")));

/* A child keeps the sites (and the shared memory): its reads are its own. */
static void child_pid(void)
{
	self_pid = getpid();
}

/* n bytes at addr of this process, or -1: directly from this thread's
 * stack or from what sonde found in the site's own module (direct: the
 * module cannot go while its code runs), else through the kernel, so that a
 * bad address is an error and never a fault. */
RT_HIDDEN int pa_var_read(uint64_t addr, void *buf, size_t n, uint64_t sp, int direct)
{
	struct stack_map *k = &stk_tls;
	if (!k->state) {
		char mb[1024], perm[4];
		k->state = map_find(sp, 1, &k->lo, &k->hi, perm, mb, sizeof mb) == 0 && perm[0] == 'r' ? 1 : 2;
	}
	if (direct || (k->state == 1 && sp >= k->lo && sp < k->hi && addr >= k->lo && addr + n <= k->hi &&
	               addr + n > addr)) {
		const void *p = (const void *)addr;
		switch (n) { /* inline copies: no call to libc's memcpy (vector registers) */
		case 1: __builtin_memcpy(buf, p, 1); return 0;
		case 2: __builtin_memcpy(buf, p, 2); return 0;
		case 4: __builtin_memcpy(buf, p, 4); return 0;
		case 8: __builtin_memcpy(buf, p, 8); return 0;
		default: break;
		}
	}
	struct iovec l = { buf, n }, r = { (void *)addr, n };
	return syscall(SYS_process_vm_readv, self_pid, &l, 1UL, &r, 1UL, 0UL) == (long)n ? 0 : -1;
}

/* This thread's stack mapping (stk_tls above), for stack probes. */
RT_HIDDEN int pa_stack_end(uint64_t sp, uint64_t *hi)
{
	struct stack_map *k = &stk_tls;
	if (!k->state) {
		char mb[1024], perm[4];
		k->state = map_find(sp, 1, &k->lo, &k->hi, perm, mb, sizeof mb) == 0 && perm[0] == 'r' ? 1 : 2;
	}
	if (k->state != 1 || sp < k->lo || sp >= k->hi)
		return -1;
	*hi = k->hi;
	return 0;
}

/* The return slots of this thread's followed calls (struct sframe: sp is
 * the slot's address) that fall inside the copy and still hold the stub. */
RT_HIDDEN void pa_shadow_unpatch(uint64_t sp, uint8_t *copy, uint32_t n)
{
	struct shadow *sh = sh_tls;
	if (!sh)
		return;
	for (uint32_t i = sh->n; i-- > 0;) {
		uint64_t a = sh->f[i].sp, v;
		if (n < 8 || a < sp || a - sp > (uint64_t)n - 8)
			continue;
		__builtin_memcpy(&v, copy + (a - sp), 8);
		if (v == (uint64_t)pa_exit_stub) {
			v = sh->f[i].ret;
			__builtin_memcpy(copy + (a - sp), &v, 8);
		}
	}
}

/* The return address v read from slot (a stack walk's): the real one when a
 * followed call of this thread replaced it by the exit stub there. */
RT_HIDDEN uint64_t pa_shadow_ret(uint64_t slot, uint64_t v)
{
	struct shadow *sh = sh_tls;
	if (!sh || v != (uint64_t)pa_exit_stub)
		return v;
	for (uint32_t i = sh->n; i-- > 0;)
		if (sh->f[i].sp == slot)
			return sh->f[i].ret;
	return v;
}

/* A hit from the SIGTRAP handler: the program's x87/SSE registers at the
 * site are in the signal frame (the handler runs with fresh ones); from a
 * trampoline (NULL) they are still in the registers: nothing before a var
 * program runs uses vector code (this file is built without it). */
static __thread const struct _libc_fpstate *trap_fp __attribute__((tls_model("initial-exec")));

/* The low 64 bits of xmm n at the site. */
static int xmm_low(int n, uint64_t *out)
{
	const struct _libc_fpstate *fp = trap_fp;
	if (fp) {
		*out = fp->_xmm[n].element[0] | (uint64_t)fp->_xmm[n].element[1] << 32;
		return 0;
	}
	uint64_t v;
	switch (n) {
#define XMM(k) case k: __asm__ volatile("movq %%xmm" #k ", %0" : "=r"(v)); break;
	XMM(0) XMM(1) XMM(2) XMM(3) XMM(4) XMM(5) XMM(6) XMM(7)
	XMM(8) XMM(9) XMM(10) XMM(11) XMM(12) XMM(13) XMM(14) XMM(15)
#undef XMM
	default: return -1;
	}
	*out = v;
	return 0;
}

/* The value of DWARF register r at the site (probe_area.h, enum pa_reg). */
RT_HIDDEN int pa_var_reg(int r, const uint64_t *regs, uint64_t sp, uint64_t pc, uint64_t *out)
{
	static const signed char map[17] = { PA_RAX, PA_RDX, PA_RCX, PA_RBX, PA_RSI, PA_RDI, PA_RBP, -1,
		PA_R8, PA_R9, PA_R10, PA_R11, PA_R12, PA_R13, PA_R14, PA_R15, -1 };
	if (r >= 17 && r <= 32)
		return xmm_low(r - 17, out);
	if (r < 0 || r > 16)
		return -1;
	*out = r == 7 ? sp : r == 16 ? pc : regs[(int)map[r]];
	return 0;
}

/* Runs site s's var program: 0 and the value, 1 no value here, -1 a read
 * failed, -2 a bad program, -3 a division by zero.  Bounded:
 * PA_VAR_PROG_MAX instructions run at most once each (jumps go forward), a
 * stack of PA_VAR_STACK, PA_VAR_READ_MAX bytes read.  saved (PA_VAR_SAVE
 * values) and *mask get what PA_V_SAVE kept. */
static int var_eval(const struct pa_var *v, const uint64_t *regs, uint64_t sp, uint64_t pc, int64_t *out,
                    int64_t *saved, uint32_t *mask)
{
	uint64_t st[PA_VAR_STACK], x;
	int n = 0;
	uint32_t read = 0, np = v->nprog;
	*mask = 0;
	if (np > PA_VAR_PROG_MAX || !regs)
		return -2;
	for (uint32_t i = 0; i < np; i++) {
		const struct pa_vinsn *in = &v->prog[i];
		switch (in->op) {
		case PA_V_PUSH:
		case PA_V_REG:
			if (n == PA_VAR_STACK)
				return -2;
			if (in->op == PA_V_PUSH)
				x = (uint64_t)in->k;
			else if (pa_var_reg(in->a, regs, sp, pc, &x))
				return -2;
			st[n++] = x;
			break;
		case PA_V_ADD:
			if (n < 1)
				return -2;
			st[n - 1] += (uint64_t)in->k;
			break;
		case PA_V_NEG: case PA_V_NOT: case PA_V_DUP:
			if (n < 1 || (in->op == PA_V_DUP && n == PA_VAR_STACK))
				return -2;
			if (in->op == PA_V_NEG)
				st[n - 1] = 0 - st[n - 1];
			else if (in->op == PA_V_NOT)
				st[n - 1] = ~st[n - 1];
			else
				st[n] = st[n - 1], n++;
			break;
		case PA_V_DROP:
			if (n < 1)
				return -2;
			n--;
			break;
		case PA_V_SWAP:
			if (n < 2)
				return -2;
			x = st[n - 1], st[n - 1] = st[n - 2], st[n - 2] = x;
			break;
		case PA_V_OVER:
			if (n < 2 || n == PA_VAR_STACK)
				return -2;
			st[n] = st[n - 2], n++;
			break;
		case PA_V_PLUS: case PA_V_MINUS: case PA_V_MUL: case PA_V_AND: case PA_V_OR: case PA_V_XOR:
		case PA_V_SHL: case PA_V_SHR: case PA_V_SHRA: {
			if (n < 2)
				return -2;
			uint64_t y = st[--n];
			x = st[n - 1];
			switch (in->op) {
			case PA_V_PLUS: x += y; break;
			case PA_V_MINUS: x -= y; break;
			case PA_V_MUL: x *= y; break;
			case PA_V_AND: x &= y; break;
			case PA_V_OR: x |= y; break;
			case PA_V_XOR: x ^= y; break;
			case PA_V_SHL: x = y < 64 ? x << y : 0; break;
			case PA_V_SHR: x = y < 64 ? x >> y : 0; break;
			default: x = (uint64_t)((int64_t)x >> (y < 63 ? y : 63)); break;
			}
			st[n - 1] = x;
			break;
		}
		case PA_V_DEREF: {
			uint32_t sz = in->a & 15u;
			if (n < 1 || (sz != 1 && sz != 2 && sz != 4 && sz != 8))
				return -2;
			if ((read += sz) > PA_VAR_READ_MAX)
				return -2;
			uint64_t val = 0;
			if (pa_var_read(st[n - 1], &val, sz, sp, (in->a & 0x40) != 0))
				return -1;
			if ((in->a & 0x80) && sz < 8) {
				int sh = 64 - 8 * (int)sz;
				val = (uint64_t)((int64_t)(val << sh) >> sh);
			}
			st[n - 1] = val;
			break;
		}
		case PA_V_NOVALUE:
			return 1;
		case PA_V_EXT: case PA_V_SAVE: case PA_V_LNOT: case PA_V_BOOL: {
			if (n < 1)
				return -2;
			x = st[n - 1];
			if (in->op == PA_V_EXT) {
				uint32_t sz = in->a & 15u;
				if (sz != 1 && sz != 2 && sz != 4 && sz != 8)
					return -2;
				int sh = 64 - 8 * (int)sz;
				if (sz < 8)
					x = (in->a & 0x80) ? (uint64_t)((int64_t)(x << sh) >> sh) : (x << sh) >> sh;
			} else if (in->op == PA_V_SAVE) {
				if (in->a >= PA_VAR_SAVE)
					return -2;
				saved[in->a] = (int64_t)x;
				*mask |= 1u << in->a;
			} else {
				x = in->op == PA_V_LNOT ? x == 0 : x != 0;
			}
			st[n - 1] = x;
			break;
		}
		case PA_V_DIV: case PA_V_MOD:
		case PA_V_EQ: case PA_V_NE: case PA_V_LT: case PA_V_LE: case PA_V_GT: case PA_V_GE: {
			if (n < 2)
				return -2;
			int64_t b = (int64_t)st[--n], a = (int64_t)st[n - 1], r;
			switch (in->op) {
			case PA_V_DIV:
			case PA_V_MOD:
				if (!b)
					return -3;
				if (a == INT64_MIN && b == -1)
					r = in->op == PA_V_DIV ? a : 0;
				else
					r = in->op == PA_V_DIV ? a / b : a % b;
				break;
			case PA_V_EQ: r = a == b; break;
			case PA_V_NE: r = a != b; break;
			case PA_V_LT: r = a < b; break;
			case PA_V_LE: r = a <= b; break;
			case PA_V_GT: r = a > b; break;
			default: r = a >= b; break;
			}
			st[n - 1] = (uint64_t)r;
			break;
		}
		case PA_V_JZ: case PA_V_JNZ: {
			if (n < 1 || in->k <= 0 || (uint64_t)in->k > np - i)
				return -2;
			int t = st[n - 1] != 0;
			if (t == (in->op == PA_V_JNZ)) {
				st[n - 1] = (uint64_t)t;
				i += (uint32_t)in->k - 1; /* the loop's i++ makes it k */
			} else {
				n--;
			}
			break;
		}
		default:
			return -2;
		}
	}
	if (n < 1 || (v->size != 1 && v->size != 2 && v->size != 4 && v->size != 8))
		return -2;
	x = st[n - 1];
	if (v->size < 8) {
		int sh = 64 - 8 * v->size;
		x = v->type == PA_VT_INT ? (uint64_t)((int64_t)(x << sh) >> sh) : (x << sh) >> sh;
	}
	*out = (int64_t)x;
	return 0;
}

static void smin(int64_t *p, int64_t v)
{
	int64_t c = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (v < c && !__atomic_compare_exchange_n(p, &c, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void smax(int64_t *p, int64_t v)
{
	int64_t c = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (v > c && !__atomic_compare_exchange_n(p, &c, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* An assertion failed: counted, and one of the first PA_FAIL_MAX kept
 * with its thread and its variables' values. */
static void assert_fail(struct pa_var *v, const int64_t *saved, uint32_t mask)
{
	__atomic_fetch_add(&v->failures, 1, __ATOMIC_RELAXED);
	if (__atomic_load_n(&v->nfail, __ATOMIC_RELAXED) >= PA_FAIL_MAX)
		return;
	uint32_t k = __atomic_fetch_add(&v->nfail, 1, __ATOMIC_RELAXED);
	if (k >= PA_FAIL_MAX)
		return;
	struct pa_fail *f = &v->fail[k];
	f->t = clock_ticks();
	f->tid = (uint32_t)syscall(SYS_gettid);
	f->mask = mask;
	for (int i = 0; i < PA_VAR_SAVE; i++)
		f->vals[i] = mask >> i & 1 ? saved[i] : 0;
	__atomic_store_n(&f->ready, 1, __ATOMIC_RELEASE);
}

/* A var site's hit: its value into the statistics (each one atomic; the
 * sum as 128 bits: the low half's carry goes to the high half); an
 * assertion's: evaluated, and failed when 0. */
static void var_hit(struct pa_site *s, uint32_t idx, const uint64_t *regs, uint64_t sp, uint64_t rec_t)
{
	struct pa_var *v = &s->var;
	int64_t x, saved[PA_VAR_SAVE];
	uint32_t mask;
	int rc;
	if (v->fprog) { /* floating point: src/rt/probe_float.c, the program's x87/SSE state saved around it */
		struct pa_feval fe = { v, regs, sp, s->addr, trap_fp, 0, { 0 }, 0 };
		rc = pa_float_eval(&fe);
		x = fe.x;
		mask = fe.mask;
		for (int i = 0; i < PA_VAR_SAVE; i++)
			saved[i] = fe.saved[i];
	} else {
		rc = var_eval(v, regs, sp, s->addr, &x, saved, &mask);
	}
	if (rc) {
		__atomic_fetch_add(rc == 1 ? &v->unavailable : rc == -1 ? &v->read_errors : rc == -3 ? &v->div_zero
		                   : &v->bad_prog, 1, __ATOMIC_RELAXED);
		if (rec_t)
			pa_rec_put(idx, PA_EV_NOVAL, rc, rec_t);
		return;
	}
	if (v->type == PA_VT_FLOAT && !v->is_assert) {
		uint64_t d = pa_float_hit(v, (uint64_t)x); /* the program's vector registers saved around it */
		if (rec_t)
			pa_rec_put(idx, PA_EV_FVAL, (int64_t)d, rec_t);
		return;
	}
	if (v->is_assert) {
		__atomic_fetch_add(&v->count, 1, __ATOMIC_RELAXED);
		if (!x)
			assert_fail(v, saved, mask);
		if (rec_t && x)
			pa_rec_put(idx, PA_EV_PASS, 0, rec_t);
		else if (rec_t)
			pa_rec_fail(idx, mask, saved, PA_VAR_SAVE, rec_t);
		return;
	}
	if (rec_t)
		pa_rec_put(idx, PA_EV_VAL, x, rec_t);
	uint64_t old = __atomic_fetch_add(&v->sum_lo, (uint64_t)x, __ATOMIC_RELAXED);
	uint64_t hi = (x < 0 ? ~0ull : 0) + (old + (uint64_t)x < old);
	if (hi)
		__atomic_fetch_add(&v->sum_hi, hi, __ATOMIC_RELAXED);
	smin(&v->min, x);
	smax(&v->max, x);
	__atomic_store_n(&v->last, x, __ATOMIC_RELAXED);
	__atomic_fetch_add(&v->hist[var_hist_bucket_i64(x)], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&v->count, 1, __ATOMIC_RELAXED);
}

static void atomic_min(uint64_t *p, uint64_t v);
static void atomic_max(uint64_t *p, uint64_t v);

/* A time site's hit: first and last, and the interval from the previous
 * time probe's latest hit in this thread (probe_area.h, struct pa_time).
 * Returns the interval in ns, -1 when there is none. */
static int64_t time_hit(struct pa_time *tm)
{
	int64_t interval = -1;
	uint32_t slot1 = tm->slot1;
	if (!slot1 || slot1 > PA_TIME_MAX)
		return -1;
	uint64_t t = clock_ticks();
	atomic_min(&tm->first, t);
	atomic_max(&tm->last, t);
	struct shadow *sh = shadow_get();
	if (!sh) {
		__atomic_fetch_add(&tm->lost, 1, __ATOMIC_RELAXED);
		return -1;
	}
	uint64_t gen = __atomic_load_n(&pa->time_gen, __ATOMIC_RELAXED);
	if (sh->tgen != gen) {
		for (int i = 0; i < PA_TIME_MAX; i++)
			sh->tlast[i] = 0;
		sh->tgen = gen;
	}
	uint64_t mine = sh->tlast[slot1 - 1];
	uint32_t prev1 = __atomic_load_n(&tm->prev1, __ATOMIC_RELAXED);
	if (prev1 && prev1 <= PA_TIME_MAX) {
		uint64_t pt = sh->tlast[prev1 - 1];
		if (pt && pt > mine && t >= pt) {
			uint64_t mult = __atomic_load_n(&pa->time_mult, __ATOMIC_RELAXED);
			uint64_t dt = (uint64_t)(((unsigned __int128)(t - pt) * mult) >> 32);
			int b = dt ? 63 - __builtin_clzll(dt) : 0;
			__atomic_fetch_add(&tm->n, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&tm->total_ns, dt, __ATOMIC_RELAXED);
			__atomic_fetch_add(&tm->hist[b], 1, __ATOMIC_RELAXED);
			uint64_t c = __atomic_load_n(&tm->min_ns, __ATOMIC_RELAXED);
			while (dt < c && !__atomic_compare_exchange_n(&tm->min_ns, &c, dt, 1, __ATOMIC_RELAXED,
			                                              __ATOMIC_RELAXED))
				;
			atomic_max(&tm->max_ns, dt);
			interval = (int64_t)dt;
		}
	}
	sh->tlast[slot1 - 1] = t;
	return interval;
}

/* A hit of site idx; sp points at the stack as it was at the site (for a
 * func site at the entry: the return address), regs at the general
 * registers there (enum pa_reg). */
/* Whether the conditional jump with x86 condition code cc (or PA_CC_*)
 * jumps, on the flags and rcx at the site. */
static int cond_true(uint32_t cc, uint64_t fl, uint64_t rcx)
{
	int cf = fl & 1, pf = (fl >> 2) & 1, zf = (fl >> 6) & 1, sf = (fl >> 7) & 1, of = (fl >> 11) & 1, t;
	switch (cc >> 1) {
	case 0: t = of; break;
	case 1: t = cf; break;
	case 2: t = zf; break;
	case 3: t = cf | zf; break;
	case 4: t = sf; break;
	case 5: t = pf; break;
	case 6: t = sf != of; break;
	case 7: t = zf | (sf != of); break;
	case PA_CC_RCXZ >> 1:
		return cc == PA_CC_RCXZ ? rcx == 0 : (uint32_t)rcx == 0;
	default: return 0;
	}
	return (cc & 1) ? !t : t;
}

static void futex_wait_ms(uint32_t *w, uint32_t val, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	syscall(SYS_futex, w, FUTEX_WAIT, val, &ts, NULL, 0);
}

/* The dynamic linker's r_brk: a library came or went.  Once its link map
 * is consistent, this thread (the one in dlopen or dlclose, before the
 * library's constructors) waits until sonde has looked for the probes
 * pending on it (bounded, and not when sonde is gone). */
static void load_hit(void)
{
	if (__atomic_load_n(&_r_debug.r_state, __ATOMIC_ACQUIRE) != RT_CONSISTENT)
		return;
	uint32_t n = __atomic_add_fetch(&pa->loads, 1, __ATOMIC_SEQ_CST);
	for (int waited = 0; waited < PA_LOAD_WAIT_MS && __atomic_load_n(&running, __ATOMIC_ACQUIRE); waited += 10) {
		uint32_t seen = __atomic_load_n(&pa->loads_seen, __ATOMIC_ACQUIRE);
		if ((int32_t)(seen - n) >= 0)
			return;
		futex_wait_ms(&pa->loads_seen, seen, 10);
	}
}

/* Whether record s's probe is disabled (its var, time and plugin work skipped). */
static inline int rec_off(const struct pa_site *s)
{
	return __atomic_load_n(&s->off, __ATOMIC_RELAXED) != 0;
}

/* The plugin probe + 1 whose pre handler this hit runs (0: none, or the
 * probe disabled), read before the hit is counted.  A plugin probe's hits
 * are counted per probe by this value, just before its pre handler runs
 * (probe_plugin.c), not by the site's counter: a site record taken again
 * after a deletion counts hits of threads still inside the old placement
 * (agent_kinds.c's agent_collect).  So pre calls are never fewer than
 * hits; one in flight at a deletion's reading may run after it. */
static inline uint32_t plugin_of(const struct pa_site *s)
{
	uint32_t pl1 = __atomic_load_n(&s->plugin1, __ATOMIC_ACQUIRE);
	return pl1 && !rec_off(s) ? pl1 : 0;
}

/* The hit, for pa_hit: rec is the site's PA_REC_* (--record), a constant 0
 * in the unrecorded copy, where the compiler leaves every recording step out. */
static inline __attribute__((always_inline)) void hit(uint32_t idx, uint64_t *sp, const uint64_t *regs,
                                                      struct pa_site *s, uint32_t rec, uint32_t pl1)
{
	uint64_t rec_t = rec ? clock_ticks() | 1 : 0;
	int taken = 0;
	uint32_t cc1 = __atomic_load_n(&s->branch_cc1, __ATOMIC_RELAXED);
	if (cc1 && (taken = cond_true(cc1 - 1, regs[PA_FLAGS], regs[PA_RCX])))
		__atomic_fetch_add(&s->taken, 1, __ATOMIC_RELAXED);
	if (rec & PA_REC_SITE)
		pa_rec_put(idx, PA_EV_SITE, taken, rec_t);
	/* Var programs first: a func site changes the return address below. */
	if (s->var.nprog && !rec_off(s))
		var_hit(s, idx, regs, (uint64_t)sp, rec_t);
	if (s->time.slot1 && !rec_off(s)) {
		int64_t dt = time_hit(&s->time);
		if (rec_t)
			pa_rec_put(idx, PA_EV_TIME, dt, rec_t);
	}
	if (pl1)
		pa_plugin_pre(s, pl1, (uint64_t)sp, regs);
	if (s->stack_bytes && !rec_off(s)) /* before a func site's return address is replaced below */
		pa_stack_put(s, idx, (uint64_t)sp, regs);
	uint32_t nx = __atomic_load_n(&s->var.next, __ATOMIC_ACQUIRE);
	for (int guard = 0; nx && nx <= pa_n && guard < 64; guard++) {
		struct pa_site *o = &pa->sites[nx - 1];
		uint32_t opl1 = plugin_of(o);
		__atomic_fetch_add(&o->hits, 1, __ATOMIC_RELAXED);
		if (o->var.nprog && !rec_off(o))
			var_hit(o, nx - 1, regs, (uint64_t)sp, rec_t);
		if (o->time.slot1 && !rec_off(o)) {
			int64_t dt = time_hit(&o->time);
			if (rec_t)
				pa_rec_put(nx - 1, PA_EV_TIME, dt, rec_t);
		}
		if (opl1) {
			if (rec_t) /* a plugin probe's hit on the timeline, as on ptrace */
				pa_rec_put(nx - 1, PA_EV_SITE, taken, rec_t);
			pa_plugin_pre(o, opl1, (uint64_t)sp, regs);
		}
		if (o->stack_bytes && !rec_off(o)) {
			if (rec_t)
				pa_rec_put(nx - 1, PA_EV_SITE, taken, rec_t);
			pa_stack_put(o, nx - 1, (uint64_t)sp, regs);
		}
		nx = __atomic_load_n(&o->var.next, __ATOMIC_ACQUIRE);
	}
	if (s->kind == PA_KIND_LOAD)
		load_hit();
	if (s->kind != PA_KIND_CALL)
		return;
	uint64_t ret = *sp;
	struct shadow *sh = shadow_get();
	/* A tail call from a probed function: its caller is the real one. */
	count_caller(s, ret == (uint64_t)pa_exit_stub && sh && sh->n ? sh->f[sh->n - 1].ret : ret);
	if (!sh) {
		__atomic_fetch_add(&pa->shadow_fail, 1, __ATOMIC_RELAXED);
		return;
	}
	if (sh->n >= SHADOW_MAX) {
		__atomic_fetch_add(&pa->lost_depth, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&s->lost_returns, 1, __ATOMIC_RELAXED);
		return;
	}
	sh->f[sh->n++] = (struct sframe){ ret, (uint64_t)sp, clock_ticks(), idx, sess_tag | (rec_t != 0) };
	*sp = (uint64_t)pa_exit_stub;
}

static __attribute__((noinline, cold)) void hit_recorded(uint32_t idx, uint64_t *sp, const uint64_t *regs,
                                                         struct pa_site *s, uint32_t rec, uint32_t pl1)
{
	hit(idx, sp, regs, s, rec, pl1);
}

RT_HIDDEN void pa_hit(uint32_t idx, uint64_t *sp, const uint64_t *regs)
{
	struct pa_site *s = &pa->sites[idx];
	uint32_t pl1 = plugin_of(s);
	__atomic_fetch_add(&s->hits, 1, __ATOMIC_RELAXED);
	/* --record: the one test of the hot path, in the site's own line (0: not recording) */
	uint32_t rec = __atomic_load_n(&s->rec, __ATOMIC_RELAXED);
	if (__builtin_expect(rec != 0, 0))
		hit_recorded(idx, sp, regs, s, rec, pl1);
	else
		hit(idx, sp, regs, s, 0, pl1);
}



/* 0 is "none yet" for these two (ticks and durations are never 0). */
static void atomic_min(uint64_t *p, uint64_t v)
{
	uint64_t c = __atomic_load_n(p, __ATOMIC_RELAXED);
	while ((c == 0 || v < c) && !__atomic_compare_exchange_n(p, &c, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void atomic_max(uint64_t *p, uint64_t v)
{
	uint64_t c = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (v > c && !__atomic_compare_exchange_n(p, &c, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* A return of a call of site s, d ticks after its call. */
static inline __attribute__((always_inline)) void exit_account(struct pa_site *s, uint64_t d)
{
	__atomic_fetch_add(&s->returns, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->ticks_total, d, __ATOMIC_RELAXED);
	atomic_min(&s->ticks_min, d ? d : 1);
	atomic_max(&s->ticks_max, d);
}

/* --record: the same, and the end of the call's slice (a tail call of pa_exit's). */
static __attribute__((noinline, cold)) uint64_t exit_recorded(uint32_t site, uint64_t now, uint64_t then,
                                                              uint64_t ret)
{
	exit_account(&pa->sites[site], now - then);
	pa_rec_put(site, PA_EV_RET, 0, now);
	return ret;
}

/* A probed function returned through pa_exit_stub; sp_after is the stack
 * pointer after its ret (the entry's + 8).  Frames deeper than that were
 * left by longjmp or an exception: dropped.  Returns where to go on. */
RT_HIDDEN uint64_t pa_exit(uint64_t sp_after)
{
	uint64_t now = clock_ticks();
	struct shadow *sh = sh_tls;
	while (sh->n > 1 && sh->f[sh->n - 1].sp + 8 < sp_after)
		sh->n--;
	struct sframe f = sh->f[--sh->n];
	if (__builtin_expect(f.tag != sess_tag, 0)) { /* tested first: nothing else is live across the accounting */
		if ((f.tag & ~1u) != sess_tag)
			return f.ret; /* an earlier session's call: its sites are not these */
		return exit_recorded(f.site, now, f.ticks, f.ret);
	}
	exit_account(&pa->sites[f.site], now - f.ticks);
	return f.ret;
}

/* An exception is about to unwind this thread (unwind.c): the unwinder
 * cannot pass pa_exit_stub, so every return address of ours goes back to
 * the real one; those calls' returns are not followed (lost_returns). */
RT_HIDDEN void rt_probes_unhook(void)
{
	struct shadow *sh = sh_tls;
	if (!sh)
		return;
	for (uint32_t i = sh->n; i-- > 0;) {
		uint64_t *slot = (uint64_t *)sh->f[i].sp;
		if (*slot == (uint64_t)pa_exit_stub) {
			*slot = sh->f[i].ret;
			if (pa && sh->f[i].site < pa_n && (sh->f[i].tag & ~1u) == sess_tag)
				__atomic_fetch_add(&pa->sites[sh->f[i].site].lost_returns, 1, __ATOMIC_RELAXED);
		}
	}
	sh->n = 0;
}

/* --- changing code ------------------------------------------------------- */

static void sync_cores(void)
{
	if (sync_core_ok)
		syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
	else
		usleep(2000); /* no SYNC_CORE: let every core leave the bytes (x86 tolerates this in practice) */
}

static int poke(uint64_t addr, const void *b, size_t n)
{
	return pwrite(mem_fd, b, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

static int peek(uint64_t addr, void *b, size_t n)
{
	return pread(mem_fd, b, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

/* The mapping that holds [addr, addr+n): 0 with its bounds and its
 * permissions ("rwxp"), or -1.  Read with plain system calls into the
 * caller's buffer (sonde may hold the other threads stopped, one of them
 * perhaps inside malloc or stdio, and a var hit runs on any thread), and
 * with no call into libc's string functions: a hit must not touch the
 * vector registers (the compiler is told not to make such calls of the
 * loops either). */
NO_LIBC_LOOPS static int map_find(uint64_t addr, uint64_t n, uint64_t *lo_out, uint64_t *hi_out, char perm[4],
                                  char *buf, size_t size)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	off_t off = 0;
	int found = -1;
	for (;;) {
		ssize_t r = pread(fd, buf, size, off);
		if (r <= 0)
			break;
		size_t i = 0, used = 0;
		while (i < (size_t)r) {
			size_t j = i;
			while (j < (size_t)r && buf[j] != '\n')
				j++;
			if (j == (size_t)r)
				break; /* a partial line: read again from its start */
			uint64_t v[2] = { 0, 0 };
			size_t k = i;
			for (int f = 0; f < 2; f++, k++)
				for (; k < j; k++) {
					char c = buf[k];
					int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
					if (d < 0)
						break;
					v[f] = v[f] << 4 | (uint64_t)d;
				}
			/* k: after the space that ends the range */
			if (addr >= v[0] && addr + n <= v[1] && addr + n > addr) {
				if (k + 4 <= j) {
					for (int q = 0; q < 4; q++)
						perm[q] = buf[k + q];
					*lo_out = v[0];
					*hi_out = v[1];
					found = 0;
				}
				close(fd);
				return found;
			}
			i = used = j + 1;
		}
		off += used ? (off_t)used : r; /* a line longer than the buffer: not a mapping line we need */
	}
	close(fd);
	return found;
}

/* Is [addr, addr+n) inside one executable mapping of ours? */
static int executable(uint64_t addr, uint64_t n)
{
	static char buf[8192];
	uint64_t lo, hi;
	char perm[4];
	return map_find(addr, n, &lo, &hi, perm, buf, sizeof buf) == 0 && perm[2] == 'x';
}

static int64_t dist(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

static int near(uint64_t a, uint64_t b)
{
	int64_t d = dist(a, b);
	return d > -0x7fff0000ll && d < 0x7fff0000ll;
}

/* A slot of PA_SLOT_SIZE bytes within ±2 GiB of addr. */
static uint64_t slot_near(uint64_t addr)
{
	for (int i = 0; i < nregions; i++)
		if (regions[i].used + PA_SLOT_SIZE <= REGION_SIZE && near(regions[i].base, addr) &&
		    near(regions[i].base + REGION_SIZE, addr)) {
			uint64_t s = regions[i].base + regions[i].used;
			regions[i].used += PA_SLOT_SIZE;
			return s;
		}
	if (nregions == MAX_REGIONS)
		return 0;
	uint64_t page = addr & ~(uint64_t)0xffff;
	for (int64_t k = 1; k < 1800; k++) { /* below the code first, then above, in 1 MiB steps */
		uint64_t hint = k < 900 ? page - (uint64_t)k * 0x100000 : page + (uint64_t)(k - 899) * 0x100000;
		if (hint < 0x10000 || !near(hint, addr) || !near(hint + REGION_SIZE, addr))
			continue;
		void *m = mmap((void *)hint, REGION_SIZE, PROT_READ | PROT_WRITE | PROT_EXEC,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (m == MAP_FAILED)
			continue;
		if ((uint64_t)m != hint) { /* an old kernel took the hint as a hint */
			munmap(m, REGION_SIZE);
			continue;
		}
		regions[nregions].base = hint;
		regions[nregions].used = PA_SLOT_SIZE;
		nregions++;
		return hint;
	}
	return 0;
}

static int fail(int err, const char *fmt, uint64_t a)
{
	snprintf(pa->msg, sizeof pa->msg, fmt, (unsigned long long)a);
	return err;
}

static int op_slot(struct pa_site *s)
{
	uint64_t slot = slot_near(s->addr);
	if (!slot)
		return fail(-ENOMEM, "no memory for a trampoline within 2 GiB of 0x%llx", s->addr);
	s->slot_addr = slot;
	return 0;
}

static int op_place(struct pa_site *s)
{
	if (s->state == PA_ACTIVE)
		return 0;
	if (s->orig_len < 1 || s->orig_len > PA_ORIG_MAX || s->code_len > PA_CODE_MAX || s->code_len > PA_SLOT_SIZE ||
	    s->displaced_off >= s->code_len || (s->mode != PA_MODE_JMP && s->mode != PA_MODE_INT3) ||
	    (s->mode == PA_MODE_JMP && s->orig_len < 5) || !s->slot_addr)
		return fail(-EINVAL, "bad site record for 0x%llx", s->addr);
	int in_region = 0;
	for (int i = 0; i < nregions; i++)
		in_region |= s->slot_addr >= regions[i].base && s->slot_addr + PA_SLOT_SIZE <= regions[i].base + REGION_SIZE;
	if (!in_region)
		return fail(-EINVAL, "the slot of 0x%llx is not one the agent gave", s->addr);
	if (!executable(s->addr, s->orig_len))
		return fail(-EFAULT, "0x%llx is not in executable code of the process", s->addr);
	uint8_t cur[PA_ORIG_MAX];
	if (peek(s->addr, cur, s->orig_len))
		return fail(-EFAULT, "cannot read the code at 0x%llx", s->addr);
	if (memcmp(cur, s->orig, s->orig_len))
		return fail(-EILSEQ, "the code at 0x%llx is not what sonde read (changed, or probed by another tool)",
		            s->addr);
	memcpy((void *)s->slot_addr, s->code, s->code_len);
	__atomic_store_n(&s->resume, s->slot_addr + s->displaced_off, __ATOMIC_RELEASE);
	__atomic_store_n(&s->state, PA_PREPARED, __ATOMIC_RELEASE); /* the SIGTRAP handler takes its int3 from now on */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	sync_cores();
	static const uint8_t bp = 0xcc;
	if (poke(s->addr, &bp, 1))
		return fail(-EFAULT, "cannot write the code at 0x%llx", s->addr);
	sync_cores();
	if (s->mode == PA_MODE_JMP) {
		int32_t rel = (int32_t)(s->slot_addr - (s->addr + 5));
		uint8_t j[5] = { 0xe9 };
		memcpy(j + 1, &rel, 4);
		poke(s->addr + 1, j + 1, 4);
		sync_cores();
		poke(s->addr, j, 1);
		sync_cores();
	}
	__atomic_store_n(&s->state, PA_ACTIVE, __ATOMIC_RELEASE);
	return 0;
}

static int op_remove(struct pa_site *s)
{
	if (s->state != PA_ACTIVE && s->state != PA_PREPARED)
		return 0;
	static const uint8_t bp = 0xcc;
	/* Only bytes of ours go back: a library that was unloaded (dlclose)
	 * took the site with it, and something else may be mapped there now. */
	uint8_t cur[5], want[5] = { 0xe9 };
	int32_t rel = (int32_t)(s->slot_addr - (s->addr + 5));
	memcpy(want + 1, &rel, 4);
	size_t k = s->mode == PA_MODE_JMP ? 5 : 1;
	if (peek(s->addr, cur, k) || (s->mode == PA_MODE_JMP ? memcmp(cur, want, 5) && cur[0] != 0xcc : cur[0] != 0xcc)) {
		__atomic_store_n(&s->state, PA_REMOVED, __ATOMIC_RELEASE);
		return 0;
	}
	if (s->mode == PA_MODE_JMP) {
		poke(s->addr, &bp, 1);
		sync_cores();
		poke(s->addr + 1, s->orig + 1, 4);
		sync_cores();
	}
	poke(s->addr, s->orig, 1);
	sync_cores();
	/* The slot stays: a thread may still be running its displaced code. */
	__atomic_store_n(&s->state, PA_REMOVED, __ATOMIC_RELEASE);
	return 0;
}

static void remove_all(void)
{
	for (uint32_t i = 0, n = sites_used(pa); i < n; i++)
		op_remove(&pa->sites[i]);
}

/* --- SIGTRAP ------------------------------------------------------------- */

static void chain(int sig, siginfo_t *si, void *uc)
{
	__atomic_fetch_add(&pa->stray_traps, 1, __ATOMIC_RELAXED);
	if (old_trap.sa_flags & SA_SIGINFO) {
		if (old_trap.sa_sigaction)
			old_trap.sa_sigaction(sig, si, uc);
		return;
	}
	if (old_trap.sa_handler == SIG_IGN && si->si_code != SI_KERNEL)
		return;
	if (old_trap.sa_handler != SIG_DFL && old_trap.sa_handler != SIG_IGN) {
		old_trap.sa_handler(sig);
		return;
	}
	/* As without us: the default action, on return from here. */
	struct sigaction d = { .sa_handler = SIG_DFL };
	sigaction(SIGTRAP, &d, NULL);
	raise(SIGTRAP);
}

/* This thread's entry in pa->trapping[] while the handler runs (see
 * probe_area.h): sonde then knows it may resume in a slot of ours. */
static __thread uint32_t trap_slot __attribute__((tls_model("initial-exec")));
static __thread uint32_t trap_tid __attribute__((tls_model("initial-exec")));
static __thread int trap_nest __attribute__((tls_model("initial-exec")));

static void trap_enter(struct pa_hdr *h)
{
	if (trap_nest++)
		return;
	if (!trap_tid)
		trap_tid = (uint32_t)syscall(SYS_gettid);
	trap_slot = 0;
	for (uint32_t k = 0; k < PA_TRAPPING; k++) {
		uint32_t i = (trap_tid + k) % PA_TRAPPING, z = 0;
		if (__atomic_compare_exchange_n(&h->trapping[i], &z, trap_tid, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
			trap_slot = i + 1;
			return;
		}
	}
	__atomic_fetch_add(&h->trapping_full, 1, __ATOMIC_SEQ_CST);
}

static void trap_leave(struct pa_hdr *h)
{
	if (--trap_nest)
		return;
	if (trap_slot)
		__atomic_store_n(&h->trapping[trap_slot - 1], 0, __ATOMIC_RELEASE);
	else
		__atomic_fetch_sub(&h->trapping_full, 1, __ATOMIC_RELEASE);
}

/* How many times on_trap looks through the sites for an int3 that a
 * placement took again under it (trap_site): each look after the first
 * follows a placement made while the handler ran, so a few are enough; the
 * bound keeps a foreign int3 at a removed site's address from holding the
 * handler. */
#define TRAP_LOOKS 64

enum trap_verdict { TRAP_NONE, TRAP_DONE, TRAP_AGAIN };

/* The int3 at `at` of the thread whose context is uc: run the site it
 * belongs to (TRAP_DONE, uc resumes in its slot or at the original
 * instruction), or none of ours (TRAP_NONE), or TRAP_AGAIN: a removed
 * site's record is there and so is an int3, which a placement at `at`
 * (that record taken again, or another) put in between the state read and
 * the byte read; the placement said PREPARED before its int3 went in
 * (op_place), so the next look finds it. */
static enum trap_verdict trap_site(struct pa_hdr *h, uint64_t at, ucontext_t *uc)
{
	enum trap_verdict v = TRAP_NONE;
	for (uint32_t i = 0, n = sites_used(h); i < n; i++) {
		struct pa_site *s = &h->sites[i];
		uint32_t state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (s->addr != at || state == PA_FREE)
			continue;
		if (state == PA_REMOVED) {
			/* Its int3 was taken just before it went: run the original. */
			uint8_t b;
			if (peek(at, &b, 1) == 0 && b != 0xcc) {
				uc->uc_mcontext.gregs[REG_RIP] = (greg_t)at;
				return TRAP_DONE;
			}
			v = TRAP_AGAIN;
			continue;
		}
		/* Read once: a record taken again for a new placement gets
		 * its new resume only when the new slot's code is in. */
		uint64_t resume = __atomic_load_n(&s->resume, __ATOMIC_ACQUIRE);
		const greg_t *g = uc->uc_mcontext.gregs;
		uint64_t regs[PA_NREGS] = {
			[PA_R15] = (uint64_t)g[REG_R15], [PA_R14] = (uint64_t)g[REG_R14],
			[PA_R13] = (uint64_t)g[REG_R13], [PA_R12] = (uint64_t)g[REG_R12],
			[PA_RBP] = (uint64_t)g[REG_RBP], [PA_RBX] = (uint64_t)g[REG_RBX],
			[PA_R11] = (uint64_t)g[REG_R11], [PA_R10] = (uint64_t)g[REG_R10],
			[PA_R9] = (uint64_t)g[REG_R9], [PA_R8] = (uint64_t)g[REG_R8],
			[PA_RDI] = (uint64_t)g[REG_RDI], [PA_RSI] = (uint64_t)g[REG_RSI],
			[PA_RDX] = (uint64_t)g[REG_RDX], [PA_RCX] = (uint64_t)g[REG_RCX],
			[PA_RAX] = (uint64_t)g[REG_RAX], [PA_FLAGS] = (uint64_t)g[REG_EFL],
		};
		const struct _libc_fpstate *fp_was = trap_fp;
		trap_fp = uc->uc_mcontext.fpregs;
		pa_hit(i, (uint64_t *)g[REG_RSP], regs);
		trap_fp = fp_was;
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)resume;
		return TRAP_DONE;
	}
	return v;
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t at = (uint64_t)uc->uc_mcontext.gregs[REG_RIP] - 1;
	struct pa_hdr *h = pa;
	if (h && si->si_code == SI_KERNEL) {
		trap_enter(h);
		enum trap_verdict v = TRAP_AGAIN;
		for (int look = 0; look < TRAP_LOOKS && v == TRAP_AGAIN; look++)
			v = trap_site(h, at, uc);
		trap_leave(h);
		if (v == TRAP_DONE)
			return;
	}
	chain(sig, si, ucv);
}

/* --- the server ------------------------------------------------------------ */

static void futex_wake(uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

static void serve(void)
{
	uint32_t req = __atomic_load_n(&pa->req, __ATOMIC_ACQUIRE);
	if (req == pa->done)
		return;
	uint32_t op = pa->op, idx = pa->site;
	int err = 0;
	pa->msg[0] = 0;
	if (op == PA_OP_REMOVE_ALL)
		remove_all();
	else if (op == PA_OP_PLUGIN)
		err = pa_plugin_load(pa, pa_n, pa->msg, sizeof pa->msg);
	else if (idx >= pa_n)
		err = fail(-EINVAL, "site index %llu out of range", idx);
	else if (op == PA_OP_SLOT)
		err = op_slot(&pa->sites[idx]);
	else if (op == PA_OP_PLACE)
		err = op_place(&pa->sites[idx]);
	else if (op == PA_OP_REMOVE)
		err = op_remove(&pa->sites[idx]);
	else
		err = fail(-EINVAL, "unknown request %llu", op);
	pa->err = err;
	__atomic_store_n(&pa->done, req, __ATOMIC_RELEASE);
	futex_wake(&pa->done);
}

static void *server(void *arg)
{
	(void)arg;
	pa->agent_tid = (uint32_t)syscall(SYS_gettid);
	__atomic_store_n(&pa->ready, 1, __ATOMIC_RELEASE);
	futex_wake(&pa->ready);
	for (;;) {
		char c[16];
		ssize_t r = read(alive_fd, c, sizeof c);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		serve();
	}
	/* sonde is gone: everything back, the program goes on (a launched one
	 * still waiting for its start goes now). */
	pa_plugin_end();
	remove_all();
	__atomic_store_n(&pa->go, 1, __ATOMIC_RELEASE);
	futex_wake(&pa->go);
	__atomic_store_n(&pa->exec_go, __atomic_load_n(&pa->execs, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
	futex_wake(&pa->exec_go);
	close(alive_fd);
	alive_fd = -1;
	pthread_mutex_lock(&start_lock);
	running = 0;
	pthread_mutex_unlock(&start_lock);
	return NULL;
}

/* The program's exit status, for sonde when it attached (the program is
 * not its child: waitpid cannot tell it). */
static void on_program_exit(int status, void *arg)
{
	(void)arg;
	if (pa && (pid_t)syscall(SYS_getpid) == self_pid) {
		__atomic_store_n(&pa->exit_code, status, __ATOMIC_RELAXED);
		__atomic_store_n(&pa->exited, 1, __ATOMIC_RELEASE);
	}
}

/* Maps the area of fd, installs the SIGTRAP handler and starts the server.
 * 0 or -errno. */
static int start(int area_fd, int pipe_fd, int rejoin)
{
	struct pa_hdr h;
	if (pread(area_fd, &h, sizeof h, 0) != (ssize_t)sizeof h || h.magic != PA_MAGIC || h.version != PA_VERSION ||
	    h.nsites > PA_MAX_SITES || !pa_layout_ok(&h))
		return -EINVAL;
	void *m = mmap(NULL, h.size, PROT_READ | PROT_WRITE, MAP_SHARED, area_fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	if (mem_fd < 0 && (mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC)) < 0) {
		int e = -errno;
		munmap(m, h.size);
		return e;
	}
	static int keyed;
	if (!keyed && pthread_key_create(&shadow_key, shadow_free) == 0)
		keyed = 1;
	if (!sync_core_ok &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0)
		sync_core_ok = 1;
	/* The area of the session before stays mapped for one session more: a
	 * thread preempted in pa_exit or the trap handler after loading `pa`
	 * may still account into it; the one before that goes now (a whole
	 * session later nothing holds its address), so a process probed again
	 * and again keeps two areas at most, not one per session. */
	static int forked_hook;
	self_pid = getpid();
	if (!forked_hook && pthread_atfork(NULL, NULL, child_pid) == 0)
		forked_hook = 1;
	if (pa_prev)
		munmap(pa_prev, pa_prev_size);
	pa_prev = pa;
	pa_prev_size = pa_size;
	pa = m;
	pa_size = h.size;
	pa_n = h.nsites;
	pa_rec_start(pa, h.size);
	pa_stack_start(pa);
	sess_tag += 2;
	if (rejoin) /* the sites were the old image's: nothing of them is here */
		for (uint32_t i = 0, n = sites_used(pa); i < n; i++)
			if (pa->sites[i].state != PA_FREE)
				__atomic_store_n(&pa->sites[i].state, PA_REMOVED, __ATOMIC_RELEASE);
	if (area_keep >= 0)
		close(area_keep);
	area_keep = fcntl(area_fd, F_DUPFD_CLOEXEC, 900);
	pa->hit_fn = (uint64_t)pa_hit;
	if (!trap_installed) {
		struct sigaction sa = { .sa_sigaction = on_trap, .sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER };
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGTRAP, &sa, &old_trap))
			return -errno;
		trap_installed = 1;
	}
	struct sigaction cur;
	if (sigaction(SIGTRAP, NULL, &cur) == 0)
		pa->restorer = (uint64_t)cur.sa_restorer;
	pa->r_brk = (uint64_t)_r_debug.r_brk;
	static int exit_hooked;
	if (!exit_hooked && on_exit(on_program_exit, NULL) == 0)
		exit_hooked = 1;
	alive_fd = pipe_fd;
	int rc = rt_thread_start(server, NULL, 256 * 1024);
	if (rc)
		return -rc;
	running = 1;
	return 0;
}

RT_HIDDEN int rt_probe_running(void)
{
	return __atomic_load_n(&running, __ATOMIC_ACQUIRE);
}

/* Attach (`sonde probe -p`, called through ptrace by src/probe/agent/agent_be.c):
 * area and alive name sonde's memfd and the read end of its pipe
 * (/proc/SONDE/fd/N).  0, -EBUSY when another sonde probes this process, or
 * -errno. */
RT_EXPORT int sonde_probe_agent_start(const char *area, const char *alive)
{
	pthread_mutex_lock(&start_lock);
	int rc = -EBUSY;
	if (!running) {
		/* Loaded late, the runtime does not win the unwinder's entry
		 * points: through the GOT of every object (got.c), as `record -p`. */
		const struct rt_got_sym *syms;
		int nsyms = rt_unwind_wrappers(&syms);
		rt_got_add(RT_GOT_UNWIND, syms, nsyms);
		exec_follow();
		rt_got_redirect();
		int a = open(area, O_RDWR | O_CLOEXEC);
		int p = open(alive, O_RDONLY | O_CLOEXEC);
		rc = a < 0 || p < 0 ? -errno : start(a, p, 0);
		if (a >= 0)
			close(a);
		if (rc && p >= 0)
			close(p);
	}
	pthread_mutex_unlock(&start_lock);
	return rc;
}

/* The exec functions go through exec_follow.c (before rt_got_redirect). */
static void exec_follow(void)
{
	static int added;
	if (added)
		return;
	const struct rt_got_sym *syms;
	int n = rt_exec_wrappers(&syms);
	rt_got_add(RT_GOT_EXEC, syms, n);
	added = 1;
}

RT_HIDDEN int rt_probes_follow(struct rt_follow_keep *k, int spawn)
{
	if (spawn || !__atomic_load_n(&running, __ATOMIC_ACQUIRE) || !pa || area_keep < 0 || alive_fd < 0 ||
	    (pid_t)syscall(SYS_getpid) != self_pid)
		return -1; /* no session here, a child (vfork), or a new process (posix_spawn) */
	k->fd[0] = area_keep;
	k->fd[1] = alive_fd;
	k->var[0] = "SONDE_PROBE_FD";
	k->var[1] = "SONDE_PROBE_ALIVE_FD";
	k->flag = "SONDE_PROBE_EXEC=1";
	k->prefix = "SONDE_PROBE_";
	return 0;
}

/* Launch (`sonde probe -- PROGRAM`): sonde starts the program with
 * LD_PRELOAD=libsonde-rt.so and the two descriptors in the environment; the
 * program waits here, before any constructor of its own, until sonde has
 * placed the probes (or is gone). */
__attribute__((constructor(102))) static void probes_ctor(void)
{
	const char *a = getenv("SONDE_PROBE_FD"), *p = getenv("SONDE_PROBE_ALIVE_FD");
	if (!a || !p)
		return;
	int afd = atoi(a), pfd = atoi(p);
	int rejoin = getenv("SONDE_PROBE_EXEC") != NULL;
	unsetenv("SONDE_PROBE_FD");
	unsetenv("SONDE_PROBE_ALIVE_FD");
	unsetenv("SONDE_PROBE_EXEC");
	rt_strip_preload();
	/* The pipe moves out of the program's way, closed on exec. */
	int hi = fcntl(pfd, F_DUPFD_CLOEXEC, 900);
	close(pfd);
	pthread_mutex_lock(&start_lock);
	int rc = hi < 0 ? -EBADF : start(afd, hi, rejoin);
	if (!rc) {
		exec_follow();
		rt_got_redirect();
	}
	pthread_mutex_unlock(&start_lock);
	close(afd);
	if (rc) {
		if (hi >= 0)
			close(hi);
		return;
	}
	if (rejoin) {
		/* An exec of the probed program: sonde places the probes again in
		 * this image (or is gone: the server lets us go).  The server may
		 * have found sonde gone, and set exec_go, before the count below:
		 * the wait ends with it (running is 0 once it has ended). */
		uint32_t n = __atomic_add_fetch(&pa->execs, 1, __ATOMIC_SEQ_CST);
		uint32_t g;
		while ((int32_t)((g = __atomic_load_n(&pa->exec_go, __ATOMIC_ACQUIRE)) - n) < 0 &&
		       __atomic_load_n(&running, __ATOMIC_ACQUIRE))
			futex_wait_ms(&pa->exec_go, g, 20);
		return;
	}
	while (!__atomic_load_n(&pa->go, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &pa->go, FUTEX_WAIT, 0, NULL, NULL, 0);
}

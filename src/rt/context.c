/* context.c — stack switches and thread ends: what the shadow stack must
 * learn from the program that no hook sees.
 *
 * Coroutines (swapcontext).  A thread has one shadow stack, and the hooks
 * tell a dead frame from a live one by the address of its slot: a caller's
 * is above its callees' on one stack.  Two coroutines' stacks interleave on
 * it, and one whose stack lies above the other's within RT_STACK_WINDOW (two
 * neighbouring stacks of one array, or a coroutine stack in main's frame)
 * has the other's frames taken for dead: closed, their return addresses kept
 * in a graveyard of 16, and the program stopped ("a return address sonde
 * replaced is lost") when one of them returns later.  So swapcontext is
 * interposed: the frames of the context that leaves are taken off the shadow
 * stack (their time stops, in a trace their slices end: rt_suspend_frames)
 * and kept, keyed by the wrapper's own frame address, which is where that
 * context resumes: when swapcontext returns in it, in this thread or in
 * another, its frames are put back (their time starts again; in a trace, a
 * TRX_RESUME record each, a slice that is not a call).  A context made by
 * makecontext starts with an empty shadow stack: its first function is a
 * call of nobody's, as it is in the program (its caller is libc's
 * __start_context).  Every frame stays hooked meanwhile: its slot is in a
 * stack nobody runs on.  Frames found on the shadow stack when a context
 * resumes were left by a context that ended without swapcontext (setcontext,
 * a context switch of the program's own): they are closed as dead (a
 * graveyard entry each, as for a longjmp).  After the agent's end (`record
 * -p`) nothing is kept any more: a context that resumes gets its real return
 * addresses back, its stack being the one running.
 * Not covered: switches that bypass swapcontext (setcontext to a context
 * another swapcontext saved is fine; assembly context switches such as
 * boost.context's are not seen), and more than CTX_MAX suspended contexts
 * (the frames of the ones beyond get their real return addresses back and
 * are counted as lost: session memory).
 *
 * Thread-local destructors (__cxa_thread_atexit_impl, what C++ thread_local
 * and C programs register).  They run when a thread's start routine has
 * returned or unwound (pthread_exit, pthread_cancel), called by start_thread
 * from below the slot of the thread's first recorded frame: a frame the
 * unwinding left looks live to the hooks, and the destructors' calls would
 * be charged to it.  glibc runs them last registered first, so after each
 * registration of the program's, one of the runtime's (tls_marker) is
 * registered: it runs before the program's, and closes the frames whose slots
 * no longer hold what a live frame's holds (rt_close_dead).  The frames of a
 * thread that calls exit() are live and stay.  TSD destructors come after
 * (runtime.c's thread_end).
 *
 * Alternate signal stacks (sigaltstack): the thread's, as it sets them, for
 * the slow paths that decide whether a frame is dead (rt_slot_dead).
 *
 * For the agent's GOT redirections (attached), this file also lists
 * runtime.c's _exit and _Exit.
 *
 * Neither is on a hot path: a swapcontext costs a system call already
 * (sigprocmask); the bookkeeping here is a lock, a hash look-up and a copy
 * of the frames.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/clock.h"
#include "rt/got.h"
#include "rt/rt.h"

#define CTX_MAX 4096 /* suspended contexts at once (a power of two) */
#define CTX_FREE 0

struct ctx_rec {
	uintptr_t key;             /* the suspended wrapper's frame address, or CTX_FREE */
	struct sonde_thread *owner; /* whose CCT nodes the frames hold */
	uint32_t n, cap;
	struct sonde_frame *frames; /* cap frames, mapped at the first use of the entry, kept */
};

static struct ctx_rec *ctx_tab; /* CTX_MAX entries, mapped at the first swapcontext */
static atomic_flag ctx_lock = ATOMIC_FLAG_INIT;

static void ctx_lock_take(void)
{
	while (atomic_flag_test_and_set_explicit(&ctx_lock, memory_order_acquire))
		;
}

static void ctx_lock_give(void)
{
	atomic_flag_clear_explicit(&ctx_lock, memory_order_release);
}

RT_HIDDEN void rt_context_after_fork(void)
{
	atomic_flag_clear_explicit(&ctx_lock, memory_order_relaxed);
}

static uint32_t ctx_hash(uintptr_t key)
{
	return (uint32_t)((key >> 4) * 0x9e3779b97f4a7c15ull >> 40) & (CTX_MAX - 1);
}

/* The entry of key (open addressing, linear probing), or NULL; with `add`,
 * the free one where it goes (NULL: the table is full). */
static struct ctx_rec *ctx_find(uintptr_t key, int add)
{
	for (uint32_t i = 0, h = ctx_hash(key); i < CTX_MAX; i++, h = (h + 1) & (CTX_MAX - 1)) {
		struct ctx_rec *r = &ctx_tab[h];
		if (r->key == key)
			return r;
		if (r->key == CTX_FREE)
			return add ? r : NULL;
	}
	return NULL;
}

/* Free entry r: the entries after it in its run move back over it (no
 * tombstones: a look-up stops at the first free entry, and stays short
 * however many contexts came and went).  Entries are swapped, not copied:
 * each keeps a frame buffer. */
static void ctx_drop(struct ctx_rec *r)
{
	uint32_t i = (uint32_t)(r - ctx_tab), j = i;
	for (;;) {
		j = (j + 1) & (CTX_MAX - 1);
		if (ctx_tab[j].key == CTX_FREE)
			break;
		uint32_t k = ctx_hash(ctx_tab[j].key); /* where entry j would be */
		/* it may move to i unless its place k lies cyclically in (i, j] */
		if (i <= j ? (k > i && k <= j) : (k > i || k <= j))
			continue;
		struct ctx_rec tmp = ctx_tab[i];
		ctx_tab[i] = ctx_tab[j];
		ctx_tab[j] = tmp;
		i = j;
	}
	ctx_tab[i].key = CTX_FREE;
}

/* Room for n frames in r (its buffer grows, page by page): 0, or -1. */
static int ctx_room(struct ctx_rec *r, uint32_t n)
{
	if (n <= r->cap)
		return 0;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = ((size_t)n * sizeof(struct sonde_frame) + page - 1) & ~(page - 1);
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	if (r->frames)
		munmap(r->frames, ((size_t)r->cap * sizeof(struct sonde_frame) + page - 1) & ~(page - 1));
	r->frames = p;
	r->cap = (uint32_t)(bytes / sizeof(struct sonde_frame));
	return 0;
}

/* The real return addresses of this thread's frames back into their slots,
 * for good (they are on the stack that runs: the one suspending or resuming),
 * and the frames off the shadow stack. */
static void unhook_for_good(const struct sonde_frame *f, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uintptr_t *slot = (uintptr_t *)(uintptr_t)f[i].slot;
		if (rt_is_exit_tramp(__atomic_load_n(slot, __ATOMIC_RELAXED)))
			__atomic_store_n(slot, f[i].site, __ATOMIC_RELAXED);
	}
}

/* The context whose swapcontext runs at `key` leaves: its frames off the
 * shadow stack, kept under key. */
static void ctx_suspend(struct rt_tls *L, uintptr_t key)
{
	struct sonde_thread *t = L->t;
	uint64_t now = clock_ticks();
	if (!t->depth) { /* nothing to keep; an entry left under this key is a dead context's */
		if (ctx_tab) {
			ctx_lock_take();
			struct ctx_rec *r = ctx_find(key, 0);
			if (r)
				ctx_drop(r);
			ctx_lock_give();
		}
		return;
	}
	if (!ctx_tab) {
		void *p = mmap(NULL, CTX_MAX * sizeof *ctx_tab, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct ctx_rec *none = NULL;
		if (p != MAP_FAILED && !__atomic_compare_exchange_n(&ctx_tab, &none, (struct ctx_rec *)p, 0,
		                                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			munmap(p, CTX_MAX * sizeof *ctx_tab);
	}
	uint32_t n = UINT32_MAX;
	if (ctx_tab) {
		ctx_lock_take();
		struct ctx_rec *r = ctx_find(key, 1);
		/* an entry of this key still there: a context that never resumed,
		 * whose stack this one now runs on (its frames ended long ago) */
		if (r && ctx_room(r, t->depth) == 0 && (n = rt_suspend_frames(L, t, r->frames, r->cap, now)) != UINT32_MAX) {
			r->key = key;
			r->owner = t;
			r->n = n;
		} else if (r && r->key == key) {
			ctx_drop(r);
		}
		ctx_lock_give();
	}
	if (n == UINT32_MAX) { /* no room: these frames are not kept */
		t->lost[SONDE_LOST_SESSION_MEM] += t->depth;
		unhook_for_good(t->stack, t->depth);
		rt_close_all(L, t, now);
	}
}

/* The context whose swapcontext ran at `key` runs again: its frames back. */
static void ctx_resume(struct rt_tls *L, uintptr_t key, int ended)
{
	struct sonde_thread *t = L->t;
	uint64_t now = clock_ticks();
	if (!ctx_tab)
		return;
	if (t->depth && !ended) /* left by a context that ended without swapcontext */
		rt_close_all(L, t, now);
	ctx_lock_take();
	struct ctx_rec *r = ctx_find(key, 0);
	if (r) {
		if (ended)
			unhook_for_good(r->frames, r->n);
		else if (r->owner == t)
			rt_resume_suspended(L, r->frames, r->n, now);
		else /* resumed in another thread: its CCT nodes are not this one's */
			rt_resume_frames(L, r->frames, r->n, now);
		ctx_drop(r);
	}
	ctx_lock_give();
}

typedef int (*swap_fn)(ucontext_t *, const ucontext_t *);
static void *real_swap;
RT_HIDDEN int ctx_swapcontext(ucontext_t *, const ucontext_t *) __attribute__((nothrow));

/* The two halves of the wrapper's bookkeeping, each in a function of its
 * own: a compiler takes a thread-local variable's address (and errno's) for
 * the same all through one function, and the wrapper's second half may run
 * in another thread than its first.  The first returns whether the second
 * has anything to do. */
static __attribute__((noinline)) int ctx_leave(uintptr_t key)
{
	struct rt_tls *L = &rt_tls;
	/* a signal handler interrupting the bookkeeping: passed through */
	if (L->state != RT_T_ON || L->busy)
		return 0;
	int saved = errno;
	if (!__atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE)) {
		L->busy = 1;
		atomic_signal_fence(memory_order_seq_cst);
		ctx_suspend(L, key);
		atomic_signal_fence(memory_order_seq_cst);
		rt_busy_out(L);
	}
	errno = saved;
	return 1;
}

static __attribute__((noinline)) void ctx_back(uintptr_t key)
{
	struct rt_tls *L = &rt_tls; /* this context's thread now */
	if (L->state != RT_T_ON || L->busy)
		return;
	int saved = errno;
	L->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	ctx_resume(L, key, __atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE));
	atomic_signal_fence(memory_order_seq_cst);
	rt_busy_out(L);
	errno = saved;
}

RT_EXPORT __attribute__((noinline)) int swapcontext(ucontext_t *oucp, const ucontext_t *ucp)
{
	swap_fn real = (swap_fn)rt_real_sym(&real_swap, "swapcontext", (void *)ctx_swapcontext, "libc.so.6");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	uintptr_t key = (uintptr_t)__builtin_frame_address(0);
	int keep = ctx_leave(key);
	int rc = real(oucp, ucp);
	/* here again: in this context, maybe in another thread */
	if (keep)
		ctx_back(key);
	return rc;
}

/* ---- alternate signal stacks ---- */

/* The thread's alternate signal stack as it sets it, for rt_slot_dead
 * (rt.h): a handler's calls must not take the frames it interrupted for
 * dead, and asking the kernel at every frame that looks dead (after each
 * longjmp) would cost a system call each.  Written around a handler that
 * may read it: unknown first, then known. */
typedef int (*sas_fn)(const stack_t *, stack_t *);
static void *real_sas;
RT_HIDDEN int ctx_sigaltstack(const stack_t *, stack_t *) __attribute__((nothrow, leaf));

RT_EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
	sas_fn real = (sas_fn)rt_real_sym(&real_sas, "sigaltstack", (void *)ctx_sigaltstack, "libc.so.6");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	int rc = real(ss, old);
	if (rc == 0 && ss) {
		int saved = errno;
		struct rt_tls *L = &rt_tls;
		L->alt_known = 0;
		atomic_signal_fence(memory_order_seq_cst);
		L->alt_lo = ss->ss_flags & SS_DISABLE ? 0 : (uintptr_t)ss->ss_sp;
		L->alt_hi = ss->ss_flags & SS_DISABLE ? 0 : (uintptr_t)ss->ss_sp + ss->ss_size;
		atomic_signal_fence(memory_order_seq_cst);
		L->alt_known = 1;
		errno = saved;
	}
	return rc;
}

/* ---- thread-local destructors ---- */

extern void *__dso_handle;
typedef int (*tls_atexit_fn)(void (*)(void *), void *, void *);
static void *real_tls_atexit;
RT_HIDDEN int ctx_tls_atexit(void (*)(void *), void *, void *);

static void tls_marker(void *arg)
{
	(void)arg;
	struct rt_tls *L = &rt_tls;
	if (L->state != RT_T_ON || L->busy || __atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE))
		return;
	int saved = errno;
	L->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	rt_close_dead(L, L->t, (uintptr_t)__builtin_frame_address(0), clock_ticks());
	atomic_signal_fence(memory_order_seq_cst);
	rt_busy_out(L);
	errno = saved;
}

RT_EXPORT int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso)
{
	tls_atexit_fn real = (tls_atexit_fn)rt_real_sym(&real_tls_atexit, "__cxa_thread_atexit_impl",
	                                                (void *)ctx_tls_atexit, "libc.so.6");
	if (!real)
		return -1;
	int rc = real(fn, obj, dso);
	/* the runtime's own, run before the program's (last in, first out) */
	if (rc == 0 && rt_sess && !__atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE))
		real(tls_marker, NULL, &__dso_handle);
	return rc;
}

RT_HIDDEN int ctx_swapcontext(ucontext_t *, const ucontext_t *) __attribute__((nothrow, alias("swapcontext")));
RT_HIDDEN int ctx_tls_atexit(void (*)(void *), void *, void *) __attribute__((alias("__cxa_thread_atexit_impl")));
RT_HIDDEN int ctx_sigaltstack(const stack_t *, stack_t *) __attribute__((nothrow, leaf, alias("sigaltstack")));

static const struct rt_got_sym context_wrappers[] = {
	{ "swapcontext", (void *)ctx_swapcontext },
	{ "__cxa_thread_atexit_impl", (void *)ctx_tls_atexit },
	{ "sigaltstack", (void *)ctx_sigaltstack },
	/* and the ends of processes (runtime.c): a child that forks and ends
	 * with _exit has its end and status in the recording attached too */
	{ "_exit", (void *)rt_exit_now },
	{ "_Exit", (void *)rt_exit_now2 },
};

RT_HIDDEN int rt_context_wrappers(const struct rt_got_sym **out)
{
	rt_real_sym(&real_swap, "swapcontext", (void *)ctx_swapcontext, "libc.so.6");
	rt_real_sym(&real_tls_atexit, "__cxa_thread_atexit_impl", (void *)ctx_tls_atexit, "libc.so.6");
	rt_real_sym(&real_sas, "sigaltstack", (void *)ctx_sigaltstack, "libc.so.6");
	*out = context_wrappers;
	return (int)(sizeof context_wrappers / sizeof context_wrappers[0]);
}

/* signals.c — the program's signal handlers, wrapped so that a signal never
 * runs its handler inside a section of the runtime: the calls a handler
 * makes are recorded in every mode, also when the signal lands in a hook.
 *
 * The hooks and the lock wrappers change per-thread state that is not
 * consistent in the middle of a section (a frame half written above the
 * shadow stack's depth, a trace record's bytes before its chunk's `used`
 * moves, a CCT node's count between its load and its store).  A handler's
 * calls running on top of that would break the interrupted section, so
 * sections are marked (rt_tls.busy, rt.h's rt_busy_in / rt_busy_out) and a
 * signal that lands inside one is held back: this file installs its own
 * entry (sig_entry) in the kernel for every handler the program installs
 * (sigaction, signal), and sig_entry, finding the thread busy, queues the
 * same signal with the same siginfo again to this thread
 * (rt_tgsigqueueinfo: allowed for any si_code to oneself), adds it to the
 * mask that sigreturn puts back (uc_sigmask) and sets RT_BUSY_PENDING.  The
 * section's end (rt_busy_out: the decrement and its test in one
 * instruction) sees the bit and calls rt_sig_release, which clears busy and
 * unblocks the held signals: the kernel delivers the queued copy there, on
 * committed state, with the program's sa_mask, SA_ONSTACK and siginfo, and
 * the handler's calls nest under wherever the section had got to (the
 * interrupted function's frame once its entry hook has pushed it).  A
 * signal is held back by the few dozen instructions that remain of the
 * section; the handler's time stays within the interrupted call's.
 *
 * Not held back: synchronous faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
 * SIGTRAP, SIGSYS with a kernel si_code: they would fault again), handlers
 * with SA_RESETHAND (the kernel has reset the action already), a queue
 * that is full (EAGAIN).  Those handlers run at once, as handlers the
 * program installed without this file (a raw system call, or before the
 * runtime was there and not adopted): their calls inside a busy section are
 * left unhooked and counted (SONDE_LOST_REENTRY).
 *
 * The program sees its own handlers: sigaction reports what it set.
 * Attached (`record -p`), the agent redirects sigaction and signal through
 * the GOT (rt_signal_wrappers) and adopts the handlers already installed
 * (rt_signals_adopt); at its end the program's handlers go back into the
 * kernel (rt_signals_end).
 *
 * The held-back path costs the program two system calls and a delivery,
 * only for a signal that lands inside a section; the hooks pay for the
 * check with the instruction they save at their entry (hooks.c, rt_idle).
 * Compiled with -mgeneral-regs-only: rt_sig_release runs from the hooks,
 * with the instrumented function's arguments in the vector registers.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include "common/clock.h"
#include "rt/got.h"
#include "rt/rt.h"

#define SIG_N 65 /* signals 1..64 */

/* The program's handler of each signal that sig_entry stands for: its
 * function (0: none wrapped) and flags, read by sig_entry lock-free; and the
 * whole action as the program set it, for sigaction's answers. */
static struct {
	_Atomic uintptr_t fn;
	_Atomic int flags;
} sig_tab[SIG_N];
static struct sigaction sig_prog[SIG_N];
static atomic_flag sig_lock = ATOMIC_FLAG_INIT;
static _Atomic int sig_ended; /* the agent's end: pass-through */
/* The process the table is for: a vfork child (another pid on the same
 * memory) changes its own actions, not its parent's, and leaves the table
 * alone.  A fork child has its own copy: its pid is set at the fork. */
static long sig_pid;

static long sys4(long n, long a, long b, long c, long d)
{
	long r;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(r) : "0"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return r;
}

static int synchronous(int sig, const siginfo_t *si)
{
	switch (sig) {
	case SIGSEGV: case SIGBUS: case SIGFPE: case SIGILL: case SIGTRAP: case SIGSYS:
		return si->si_code > 0; /* the kernel's: a fault of this thread (SI_KERNEL included) */
	default:
		return 0;
	}
}

/* The signal landed inside a section: queue it again and keep it blocked
 * until the section ends.  0 when it cannot wait (run it now). */
static int hold_back(struct rt_tls *L, int sig, siginfo_t *si, ucontext_t *uc, int flags)
{
	if ((flags & SA_RESETHAND) || !si || !uc || synchronous(sig, si))
		return 0;
	uint64_t bit = 1ull << (sig - 1);
	if (flags & SA_NODEFER) /* not blocked in this handler: the copy would come in here */
		sys4(SYS_rt_sigprocmask, SIG_BLOCK, (long)&bit, 0, 8);
	long pid = sys4(SYS_getpid, 0, 0, 0, 0), tid = sys4(SYS_gettid, 0, 0, 0, 0);
	if (sys4(SYS_rt_tgsigqueueinfo, pid, tid, sig, (long)si) != 0) {
		if (flags & SA_NODEFER)
			sys4(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&bit, 0, 8);
		return 0;
	}
	__atomic_fetch_or(&L->sig_deferred, bit, __ATOMIC_RELAXED);
	sigaddset(&uc->uc_sigmask, sig); /* the mask sigreturn puts back: the copy stays pending */
	__atomic_fetch_or(&L->busy, RT_BUSY_PENDING, __ATOMIC_RELAXED);
	return 1;
}

/* What the kernel calls for every wrapped handler. */
static void sig_entry(int sig, siginfo_t *si, void *ucv)
{
	if (sig <= 0 || sig >= SIG_N)
		return;
	uintptr_t fn = atomic_load_explicit(&sig_tab[sig].fn, memory_order_acquire);
	int flags = atomic_load_explicit(&sig_tab[sig].flags, memory_order_relaxed);
	struct rt_tls *L = &rt_tls;
	if (__atomic_load_n(&L->busy, __ATOMIC_RELAXED) && hold_back(L, sig, si, ucv, flags))
		return;
	if (flags & SA_RESETHAND) /* the kernel's action is SIG_DFL again */
		atomic_store_explicit(&sig_tab[sig].fn, 0, memory_order_relaxed);
	if (fn <= (uintptr_t)SIG_IGN)
		return; /* changed to SIG_DFL or SIG_IGN as this signal came */
	if (flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))fn)(sig, si, ucv);
	else
		((void (*)(int))fn)(sig);
}

RT_HIDDEN void rt_sig_release(struct rt_tls *L)
{
	if (__atomic_load_n(&L->busy, __ATOMIC_RELAXED) != RT_BUSY_PENDING)
		return; /* inside an outer section still: its end lets them in */
	/* busy first: a signal from here on runs its handler at once; one that
	 * came before set its bit, which the exchange takes */
	__atomic_store_n(&L->busy, 0, __ATOMIC_RELAXED);
	atomic_signal_fence(memory_order_seq_cst);
	uint64_t set = __atomic_exchange_n(&L->sig_deferred, 0, __ATOMIC_RELAXED);
	if (set)
		sys4(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&set, 0, 8); /* delivered here */
}

/* ---- the program's sigaction and signal ---- */

typedef int (*sa_fn)(int, const struct sigaction *, struct sigaction *);
static void *real_sa;
RT_HIDDEN int sig_sigaction(int, const struct sigaction *, struct sigaction *) __attribute__((nothrow, leaf));
RT_HIDDEN __sighandler_t sig_signal(int, __sighandler_t) __attribute__((nothrow, leaf));

static int wrappable(const struct sigaction *a)
{
	return (uintptr_t)a->sa_handler > (uintptr_t)SIG_IGN && a->sa_sigaction != sig_entry;
}

/* Every signal blocked around the table's lock: a handler calling sigaction
 * on this thread never waits for the lock its thread holds. */
static void tab_lock(uint64_t *mask)
{
	uint64_t all = ~0ull;
	sys4(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)mask, 8);
	while (atomic_flag_test_and_set_explicit(&sig_lock, memory_order_acquire))
		;
}

static void tab_unlock(const uint64_t *mask)
{
	atomic_flag_clear_explicit(&sig_lock, memory_order_release);
	sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)mask, 0, 8);
}

/* Install act for sig with sig_entry standing for its handler (the table
 * lock held): the kernel's answer. */
static int install(sa_fn real, int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction k = *act;
	k.sa_sigaction = sig_entry;
	k.sa_flags |= SA_SIGINFO;
	sigdelset(&k.sa_mask, SIGTRAP); /* an int3 reached in the handler must not kill (see trap_open) */
	uintptr_t pfn = atomic_load(&sig_tab[sig].fn);
	int pfl = atomic_load(&sig_tab[sig].flags);
	/* the table first: a delivery through the new action finds it */
	atomic_store(&sig_tab[sig].flags, act->sa_flags);
	atomic_store_explicit(&sig_tab[sig].fn, (uintptr_t)act->sa_handler, memory_order_release);
	int rc = real(sig, &k, old);
	if (rc) {
		atomic_store(&sig_tab[sig].flags, pfl);
		atomic_store(&sig_tab[sig].fn, pfn);
	} else {
		sig_prog[sig] = *act;
	}
	return rc;
}

static void sig_forked(void)
{
	sig_pid = sys4(SYS_getpid, 0, 0, 0, 0);
}

static __attribute__((constructor)) void sig_init(void)
{
	sig_forked();
	pthread_atfork(NULL, NULL, sig_forked);
}

RT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sa_fn real = (sa_fn)rt_real_sym(&real_sa, "sigaction", (void *)sig_sigaction, "libc.so.6");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (sig <= 0 || sig >= SIG_N || sig == SIGKILL || sig == SIGSTOP ||
	    atomic_load_explicit(&sig_ended, memory_order_acquire) || sys4(SYS_getpid, 0, 0, 0, 0) != sig_pid) {
		int rc = real(sig, act, old);
		/* a vfork child: what it inherited is the parent's, the program's */
		if (rc == 0 && old && old->sa_sigaction == sig_entry && sig > 0 && sig < SIG_N)
			*old = sig_prog[sig];
		return rc;
	}
	struct sigaction a, o;
	if (act)
		a = *act; /* act and old may be one */
	uint64_t mask;
	tab_lock(&mask);
	struct sigaction prev = sig_prog[sig];
	int rc;
	if (act && wrappable(&a)) {
		rc = install(real, sig, &a, &o);
	} else {
		rc = real(sig, act ? &a : NULL, &o);
		/* after the kernel's: a delivery meanwhile still finds the handler */
		if (rc == 0 && act && a.sa_sigaction != sig_entry)
			atomic_store(&sig_tab[sig].fn, 0);
	}
	int saved = errno;
	if (rc == 0 && old)
		*old = o.sa_sigaction == sig_entry ? prev : o;
	tab_unlock(&mask);
	errno = saved;
	return rc;
}

/* glibc's signal (BSD semantics: SA_RESTART, the signal blocked in its
 * handler) calls its sigaction internally: interposed too. */
RT_EXPORT __sighandler_t signal(int sig, __sighandler_t h)
{
	struct sigaction a, o;
	memset(&a, 0, sizeof a);
	a.sa_handler = h;
	sigemptyset(&a.sa_mask);
	if (sig <= 0 || sig >= SIG_N || sigaddset(&a.sa_mask, sig) < 0) {
		errno = EINVAL;
		return SIG_ERR;
	}
	a.sa_flags = SA_RESTART;
	if (sig_sigaction(sig, &a, &o) < 0)
		return SIG_ERR;
	return o.sa_handler;
}

RT_HIDDEN int sig_sigaction(int, const struct sigaction *, struct sigaction *) __attribute__((nothrow, leaf, alias("sigaction")));
RT_HIDDEN __sighandler_t sig_signal(int, __sighandler_t) __attribute__((nothrow, leaf, alias("signal")));

/* ---- leaving a handler on the alternate stack by longjmp ---- */

/* The hooks tell a frame left by a longjmp by its slot's address, within
 * RT_STACK_WINDOW of the stack pointer of the code that resumed (hooks.c):
 * a handler's frames on an alternate stack elsewhere (a static array, a
 * mapping) are not seen, and the calls after the jump would nest in them.
 * A jump made from the alternate stack leaves it (a jump within one
 * handler's frames there is the exception: those frames are closed too
 * early, their exits then counted as unmatched), so its frames there are
 * closed here.  The jump itself is libc's, untouched. */
static void leave_alt(void)
{
	struct rt_tls *L = &rt_tls;
	if (L->state != RT_T_ON || L->busy || __atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE))
		return;
	L->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	rt_close_alt(L, L->t, (uintptr_t)__builtin_frame_address(0), clock_ticks());
	atomic_signal_fence(memory_order_seq_cst);
	rt_busy_out(L);
}

typedef void (*jmp_fn)(void *, int) __attribute__((noreturn));
#define JMP_WRAPPER(name)                                                                          \
	static void *real_##name;                                                                  \
	RT_HIDDEN void sig_##name(void *, int) __attribute__((noreturn));                           \
	RT_EXPORT __attribute__((noreturn)) void name(void *env, int val)                          \
	{                                                                                          \
		jmp_fn real = (jmp_fn)rt_real_sym(&real_##name, #name, (void *)sig_##name, "libc.so.6"); \
		if (!real)                                                                         \
			__builtin_trap();                                                          \
		int saved = errno;                                                                 \
		leave_alt();                                                                       \
		errno = saved;                                                                     \
		real(env, val);                                                                    \
	}                                                                                          \
	RT_HIDDEN void sig_##name(void *, int) __attribute__((noreturn, alias(#name)));
JMP_WRAPPER(longjmp)
JMP_WRAPPER(siglongjmp)
JMP_WRAPPER(_longjmp)
JMP_WRAPPER(__longjmp_chk)

/* ---- SIGTRAP never blocked while recording ----
 * An int3 reached with SIGTRAP blocked kills the thread's process (the
 * kernel resets a blocked synchronous signal to its default), and int3s are
 * the way a running program's functions are patched and put back
 * (instr.c): a program that blocks every signal around a critical section
 * (dash around each wait, for one) would die if the agent's end put its
 * functions back meanwhile.  So a mask the program sets keeps SIGTRAP
 * unblocked until the recording has ended, here and in the handlers' masks
 * (install).  What the program reads back as its mask then lacks SIGTRAP. */
typedef int (*mask_fn)(int, const sigset_t *, sigset_t *);
static void *real_spm, *real_ptsm;

static const sigset_t *trap_open(int how, const sigset_t *set, sigset_t *copy)
{
	if (!set || how == SIG_UNBLOCK || atomic_load_explicit(&sig_ended, memory_order_acquire) ||
	    !sigismember(set, SIGTRAP))
		return set;
	*copy = *set;
	sigdelset(copy, SIGTRAP);
	return copy;
}

RT_HIDDEN int sig_sigprocmask(int, const sigset_t *, sigset_t *) __attribute__((nothrow, leaf));
RT_HIDDEN int sig_pthread_sigmask(int, const sigset_t *, sigset_t *) __attribute__((nothrow, leaf));

RT_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	mask_fn real = (mask_fn)rt_real_sym(&real_spm, "sigprocmask", (void *)sig_sigprocmask, "libc.so.6");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	sigset_t c;
	return real(how, trap_open(how, set, &c), old);
}

RT_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	mask_fn real = (mask_fn)rt_real_sym(&real_ptsm, "pthread_sigmask", (void *)sig_pthread_sigmask, "libc.so.6");
	if (!real)
		return ENOSYS;
	sigset_t c;
	return real(how, trap_open(how, set, &c), old);
}

RT_HIDDEN int sig_sigprocmask(int, const sigset_t *, sigset_t *) __attribute__((nothrow, leaf, alias("sigprocmask")));
RT_HIDDEN int sig_pthread_sigmask(int, const sigset_t *, sigset_t *) __attribute__((nothrow, leaf, alias("pthread_sigmask")));

static const struct rt_got_sym signal_wrappers[] = {
	{ "sigprocmask", (void *)sig_sigprocmask },
	{ "pthread_sigmask", (void *)sig_pthread_sigmask },
	{ "sigaction", (void *)sig_sigaction },
	{ "signal", (void *)sig_signal },
	{ "longjmp", (void *)sig_longjmp },
	{ "siglongjmp", (void *)sig_siglongjmp },
	{ "_longjmp", (void *)sig__longjmp },
	{ "__longjmp_chk", (void *)sig___longjmp_chk },
};

RT_HIDDEN int rt_signal_wrappers(const struct rt_got_sym **out)
{
	rt_real_sym(&real_sa, "sigaction", (void *)sig_sigaction, "libc.so.6");
	rt_real_sym(&real_spm, "sigprocmask", (void *)sig_sigprocmask, "libc.so.6");
	rt_real_sym(&real_ptsm, "pthread_sigmask", (void *)sig_pthread_sigmask, "libc.so.6");
	rt_real_sym(&real_longjmp, "longjmp", (void *)sig_longjmp, "libc.so.6");
	rt_real_sym(&real_siglongjmp, "siglongjmp", (void *)sig_siglongjmp, "libc.so.6");
	rt_real_sym(&real__longjmp, "_longjmp", (void *)sig__longjmp, "libc.so.6");
	rt_real_sym(&real___longjmp_chk, "__longjmp_chk", (void *)sig___longjmp_chk, "libc.so.6");
	*out = signal_wrappers;
	return (int)(sizeof signal_wrappers / sizeof signal_wrappers[0]);
}

RT_HIDDEN void rt_signals_adopt(void)
{
	sa_fn real = (sa_fn)rt_real_sym(&real_sa, "sigaction", (void *)sig_sigaction, "libc.so.6");
	if (!real)
		return;
	uint64_t mask;
	tab_lock(&mask);
	atomic_store_explicit(&sig_ended, 0, memory_order_release);
	for (int sig = 1; sig < SIG_N; sig++) {
		struct sigaction cur;
		if (sig == SIGKILL || sig == SIGSTOP || real(sig, NULL, &cur) != 0 || !wrappable(&cur))
			continue;
		install(real, sig, &cur, NULL);
	}
	tab_unlock(&mask);
}

RT_HIDDEN void rt_signals_end(void)
{
	sa_fn real = (sa_fn)rt_real_sym(&real_sa, "sigaction", (void *)sig_sigaction, "libc.so.6");
	if (!real)
		return;
	uint64_t mask;
	tab_lock(&mask);
	atomic_store_explicit(&sig_ended, 1, memory_order_release);
	for (int sig = 1; sig < SIG_N; sig++) {
		struct sigaction cur;
		if (!atomic_load(&sig_tab[sig].fn) || real(sig, NULL, &cur) != 0 || cur.sa_sigaction != sig_entry)
			continue;
		/* the program's own action back; sig_tab stays for a delivery in flight */
		real(sig, &sig_prog[sig], NULL);
	}
	tab_unlock(&mask);
}

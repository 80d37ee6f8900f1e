/* inject.c — calling a function inside a running process, the way gdb's
 * "call" and CRIU's parasite do it: PTRACE_SEIZE one thread, stop it with
 * PTRACE_INTERRUPT, save its general, FP/vector registers and signal mask,
 * point it at the function with a return address that faults, run it, catch
 * the fault, put everything back, detach.  The other threads run on: the
 * call may wait for a lock one of them holds.
 *
 * Where the thread may be stopped.  A thread blocked in read(), nanosleep()
 * or futex() is stopped on its way out of the kernel: rax holds the restart
 * code (-ERESTARTSYS, -ERESTARTNOINTR, -ERESTARTNOHAND,
 * -ERESTART_RESTARTBLOCK) and orig_rax the system call.  On resume the
 * kernel, seeing orig_rax >= 0, rewinds rip to the syscall instruction and
 * runs it again (restart_syscall for nanosleep, which sleeps until the
 * original deadline).  For the call, orig_rax is set to -1
 * (arch_call_regs) so that the kernel does not "restart" at the function;
 * the saved registers, orig_rax included, are written back at the end, and
 * the kernel restarts the system call from the final stop exactly as it
 * would have: a signal that arrived in between is still handled first, and
 * turns into EINTR only where the program's own SA_RESTART choice says so.
 * This is gdb's way (amd64_linux_write_pc); CRIU rewinds rip itself because
 * it restores into a new process, where the kernel's state is gone.
 *
 * A thread stopped in user mode inside libc or the dynamic loader may hold
 * one of their locks (malloc's arena, the loader's): dlopen on it could
 * deadlock.  Such a thread is let go and stopped again a moment later.
 * While the loader loads the program (just after its start or an exec) no
 * stop is safe, in a system call or not: no TLS yet, or its lists of
 * objects half made (stop_safely's rules, docs/ATTACH.md); the thread is
 * then run to the program's entry under a breakpoint (run_to_entry).
 *
 * Signals.  During the call the thread blocks every signal but the faults:
 * signals for the process go to other threads or wait, as they would for a
 * thread that blocks them.  The faults stay open because the kernel resets
 * the handler of a blocked fault signal to SIG_DFL when it forces one
 * (force_sig_info_to_task), which would change the program.  A fault that
 * another process sends meanwhile is held and re-sent at detach (its
 * siginfo then says SI_TKILL). */
#include "attach/inject.h"

#include "arch/arch.h"
#include "attach/dlfuncs.h"
#include "proc/permission.h"
#include "attach/times.h"
#include "common/clock.h"
#include "proc/modules.h"
#include "proc/target.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAVED 16
#define MAX_HELD 8
#define VEC_MAX (64 * 1024)     /* xstate with AMX tiles is about 11 KiB */
#define SAFE_TRIES 200
#define STOP_TIMEOUT_MS 5000
#define DLOPEN_TIMEOUT_MS 30000
/* Return address of injected calls: page 0 is never mapped (vm.mmap_min_addr),
 * so the return faults with the pc on this value. */
#define CALL_RET_ADDR 0

struct saved_bytes {
	uint64_t addr;
	size_t len;
	uint8_t *old;
};

struct inject {
	struct target t;        /* pid and /proc/PID/mem (proc/target.c) */
	struct modules mods;    /* its mapped objects (proc/modules.c) */
	pid_t tid;
	arch_regs regs;         /* as stopped */
	uint8_t *vec;           /* FP/vector register set as stopped */
	size_t veclen;
	int vecnote;
	uint64_t sigmask;       /* as stopped (the kernel's 64-bit sigset) */
	uint64_t lo;            /* lowest stack byte used by pushed data */
	struct saved_bytes saved[MAX_SAVED];
	int nsaved;
	int held[MAX_HELD];     /* signals to re-send at detach */
	int nheld;
	int gone;               /* the thread or process has ended */
	int execd;              /* it ran an exec after sonde read its maps */
	uint64_t r_debug;       /* the loader's struct r_debug, or 0 (dlfuncs.h) */
	uint64_t start_stack;   /* argc's address on the main thread's stack */
	struct inject_stop stop;
};

static uint64_t sigbit(int sig)
{
	return 1ull << (sig - 1);
}

static uint64_t fault_sigs_bits(void)
{
	return sigbit(SIGSEGV) | sigbit(SIGBUS) | sigbit(SIGILL) | sigbit(SIGFPE) | sigbit(SIGTRAP) |
	       sigbit(SIGSYS);
}

static int is_fault_sig(int sig)
{
	return sig > 0 && sig <= 64 && (sigbit(sig) & fault_sigs_bits());
}

void inject_unblock_at_detach(struct inject *in, int sig)
{
	if (in && sig > 0 && sig <= 64)
		in->sigmask &= ~sigbit(sig);
}

char inject_thread_state(pid_t pid, pid_t tid)
{
	return target_thread_state(pid, tid);
}

/* Whether the page CALL_RET_ADDR is in is mapped in the process (root may
 * lower vm.mmap_min_addr and map it): the lowest mapping comes first. */
static int ret_page_mapped(pid_t pid)
{
	char path[64];
	unsigned long lo = ~0ul;
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%lx-", &lo) != 1)
			lo = ~0ul;
		fclose(f);
	}
	return lo <= (CALL_RET_ADDR | 4095ul);
}

/* The main thread, or the first live one when the main thread has exited. */
static pid_t pick_thread(pid_t pid)
{
	char s = inject_thread_state(pid, pid);
	if (s && s != 'Z' && s != 'X')
		return pid;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	pid_t found = 0;
	struct dirent *de;
	while (d && !found && (de = readdir(d))) {
		pid_t tid = atoi(de->d_name);
		char ts = tid > 0 ? inject_thread_state(pid, tid) : 0;
		if (ts && ts != 'Z' && ts != 'X')
			found = tid;
	}
	if (d)
		closedir(d);
	return found;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Whether a tracee's stop wakes sonde with SIGCHLD: with SIGCHLD at its
 * default disposition and without SA_NOCLDSTOP the kernel sends one to the
 * tracer at every ptrace stop and exit (do_notify_parent_cldstop). */
static int sigchld_wakes(void)
{
	struct sigaction sa;
	return sigaction(SIGCHLD, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL && !(sa.sa_flags & SA_NOCLDSTOP);
}

/* Waits for the next event of the traced thread.  1 when timeout_ms passed
 * first (0: no limit), 0 with *st, -1 on a wait error.
 *
 * Without polling sleeps (an attach waits for many stops; a sleep of a few
 * ms each was most of its time on a loaded machine): SIGCHLD is blocked in
 * this thread and taken with sigtimedwait, so a stop wakes us at once; one
 * that came before the block is seen by the waitpid that comes first.  The
 * wait is cut in slices of SLICE_MS: another thread of sonde that does not
 * block SIGCHLD may take the signal (then discarded), and the next slice
 * sees the stop anyway.  When sonde has a SIGCHLD handler of its own, the
 * signal is its: then we poll with growing naps, as before. */
#define SLICE_MS 5
static int wait_tid(pid_t tid, int *st, int timeout_ms)
{
	long end = (long)clock_mono_ms() + timeout_ms;
	long nap = 20;
	int wake = timeout_ms && sigchld_wakes();
	sigset_t chld, old;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (wake)
		pthread_sigmask(SIG_BLOCK, &chld, &old);
	int rc;
	for (;;) {
		pid_t w = waitpid(tid, st, __WALL | (timeout_ms ? WNOHANG : 0));
		if (w == tid) {
			rc = 0;
			break;
		}
		if (w < 0 && errno != EINTR) {
			rc = -1;
			break;
		}
		if (w == 0) {
			long left = end - (long)clock_mono_ms();
			if (left <= 0) {
				rc = 1;
				break;
			}
			if (wake) {
				long ms = left < SLICE_MS ? left : SLICE_MS;
				struct timespec ts = { 0, ms * 1000000 };
				sigtimedwait(&chld, NULL, &ts);
			} else {
				sleep_us(nap);
				nap = nap < 5000 ? nap * 2 : nap;
			}
		}
	}
	if (wake && !sigismember(&old, SIGCHLD))
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static int wait_thread(struct inject *in, int *st, int timeout_ms)
{
	return wait_tid(in->tid, st, timeout_ms);
}

static void say_ended(pid_t pid, int st, const char *during, char *err, size_t n)
{
	if (WIFSIGNALED(st))
		snprintf(err, n, "process %d ended %s (killed by %s)", (int)pid, during, strsignal(WTERMSIG(st)));
	else
		snprintf(err, n, "process %d ended %s (exit status %d)", (int)pid, during, WEXITSTATUS(st));
}

static int is_stop_sig(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

int inject_interrupt(pid_t pid, pid_t tid, int *gone, char *err, size_t n)
{
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0) {
		snprintf(err, n, "cannot stop thread %d of process %d (%s)", (int)tid, (int)pid, strerror(errno));
		return -1;
	}
	return inject_wait_stop(pid, tid, gone, err, n);
}

int inject_wait_stop(pid_t pid, pid_t tid, int *gone, char *err, size_t n)
{
	for (;;) {
		int st, w = wait_tid(tid, &st, STOP_TIMEOUT_MS);
		if (w) {
			snprintf(err, n, "cannot stop thread %d of process %d (%s)", (int)tid, (int)pid,
			         w > 0 ? "no stop within 5 s" : strerror(errno));
			return -1;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			*gone = 1;
			say_ended(pid, st, "while sonde attached", err, n);
			return -1;
		}
		int sig = WSTOPSIG(st);
		if (st >> 16 == PTRACE_EVENT_STOP) {
			if (!is_stop_sig(sig))
				return 0;
			/* Group-stop: the process was stopped by a signal meanwhile. */
			snprintf(err, n, "process %d was stopped by %s while sonde attached", (int)pid, strsignal(sig));
			return -1;
		}
		ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig);
	}
}

/* Interrupts the thread and waits for the interrupt's stop, delivering the
 * signals that come first as they would be without sonde. */
static int interrupt(struct inject *in, char *err, size_t n)
{
	return inject_interrupt(in->t.pid, in->tid, &in->gone, err, n);
}

/* The maps of the process as it is now, and the loader's r_debug in them. */
static int load_maps(struct inject *in)
{
	modules_free(&in->mods);
	if (modules_load(&in->mods, in->t.pid))
		return -1;
	in->r_debug = dl_loader_debug(in->t.pid, &in->mods);
	in->start_stack = target_start_stack(in->t.pid);
	return 0;
}

/* Whether the program has not reached its entry yet (a stop at the entry
 * itself is past the loader): until then the word
 * below argc (the kernel aligns it to 16) is the return address of the
 * loader's call into _dl_start, then of its call into _dl_init, which runs
 * the libraries' constructors; the program's _start overwrites it (push
 * %rax) and keeps that frame to the end.  A call injected inside _dl_init
 * (a constructor waiting in a system call) crashed the program when the
 * loader went on with its constructors. */
static int before_entry(struct inject *in)
{
	const struct module *ld = NULL;
	for (int i = 0; i < in->mods.n && !ld; i++)
		if (dl_is_loader(in->mods.m[i].path))
			ld = &in->mods.m[i];
	uint64_t w = 0;
	return ld && in->start_stack >= 16 &&
	       target_read(&in->t, (in->start_stack & ~(uint64_t)15) - 8, &w, sizeof w) == 0 && w >= ld->lo &&
	       w < ld->hi;
}

/* The thread is stopped: the maps again if it ran since they were read (ran),
 * and /proc/PID/mem too if it execed meanwhile (a program that execs itself
 * while sonde attaches): the old file then reads nothing of the new image,
 * and the old maps name addresses the call must not use.  Now that the
 * thread is stopped, no exec comes between these and the call. */
static int refresh(struct inject *in, int ran, char *err, size_t n)
{
	uint8_t b;
	int execd = pread(in->t.memfd, &b, 1, (off_t)arch_pc(&in->regs)) != 1;
	if (!execd && !ran)
		return 0;
	if (execd && target_reopen(&in->t)) {
		snprintf(err, n, "cannot open the memory of process %d (%s)", (int)in->t.pid, strerror(errno));
		return -1;
	}
	in->execd |= execd;
	if (load_maps(in)) {
		snprintf(err, n, "cannot read /proc/%d/maps", (int)in->t.pid);
		return -1;
	}
	return 0;
}

/* Why the stop is not a safe one (see the top comment), or SAFE. */
enum { SAFE, IN_LOADER, LOADER_BUSY, IN_LIBC };
static int unsafe(struct inject *in, const struct module *m)
{
	if ((m && dl_is_loader(m->path)) || dl_loader_only(&in->mods) || !arch_tls_base(&in->regs) ||
	    (arch_pc(&in->regs) != in->t.entry && before_entry(in)))
		return IN_LOADER;
	if (in->r_debug) {
		uint64_t map = 0;
		int32_t state = -1;
		if (target_read(&in->t, in->r_debug + DL_R_MAP_OFF, &map, sizeof map) ||
		    target_read(&in->t, in->r_debug + DL_R_STATE_OFF, &state, sizeof state) || !map || state != 0)
			return LOADER_BUSY;
	}
	/* In libc: only a system call is a safe stop (a server blocked in
	 * read or poll), and not one that malloc makes in the middle of changing
	 * the heap (brk, mmap, ...: a single-threaded program's malloc takes no
	 * lock, and the injected dlopen's malloc would run inside it; Lua
	 * attached in CI aborted with "corrupted size vs. prev_size"). */
	if (m && dl_is_runtime_lib(m->path) && (!arch_in_syscall(&in->regs) || arch_in_memory_syscall(&in->regs)))
		return IN_LIBC;
	return SAFE;
}

/* The loader is loading the program (an attach right after its start or an
 * exec): rather than stopping it again and again until it is done (a program
 * that execs itself is inside ld.so nearly all the time), a breakpoint at the
 * program's entry (AT_ENTRY), where the loader has finished (every object
 * relocated, TLS set up, the libraries' constructors run) and the program's
 * own code has not begun.  Exec events are reported meanwhile
 * (PTRACE_O_TRACEEXEC, for this wait only): an exec takes the breakpoint
 * away with the old image, and one is placed at the new image's entry.  The
 * breakpoint is never left behind: it is taken out at the trap, at the
 * interrupt that ends the wait (ENTRY_WAIT_MS: the thread was not starting
 * after all, or its constructors are slow) and on an error.  0 stopped at
 * the entry, 1 stopped elsewhere (the caller looks again), -1 with err. */
#define ENTRY_WAIT_MS 1000
#define ENTRY_EXECS 64
static int run_to_entry(struct inject *in, char *err, size_t n)
{
	pid_t tid = in->tid;
	if (ptrace(PTRACE_SETOPTIONS, tid, 0, (void *)(long)PTRACE_O_TRACEEXEC) < 0)
		return 1;
	/* Read in the middle of an exec: the auxv empty, the maps without the
	 * executable yet. */
	if (!in->t.entry || !modules_at(&in->mods, in->t.entry)) {
		if (target_reopen(&in->t) || load_maps(in))
			return 1;
	}
	long end = (long)clock_mono_ms() + ENTRY_WAIT_MS;
	uint64_t at = 0;
	uint8_t old = 0;
	int placed = 0, interrupted = 0, execs = 0, sig = 0, rc = 1;
	for (;;) {
		if (!placed) {
			const struct module *m = modules_at(&in->mods, in->t.entry);
			at = in->t.entry;
			if (!at || !m || !m->is_main || target_read(&in->t, at, &old, 1) || old == arch_bp_insn[0] ||
			    target_write(&in->t, at, arch_bp_insn, ARCH_BP_LEN))
				break; /* no entry to stop at: stopped here */
			placed = 1;
		}
		if (ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig) < 0) {
			snprintf(err, n, "cannot resume thread %d of process %d (%s)", (int)tid, (int)in->t.pid,
			         strerror(errno));
			rc = -1;
			break;
		}
		sig = 0;
		int st, w;
		for (;;) {
			long left = end - (long)clock_mono_ms();
			w = wait_tid(tid, &st, interrupted ? STOP_TIMEOUT_MS : (left > 0 ? (int)left : 1));
			if (w <= 0 || interrupted)
				break;
			ptrace(PTRACE_INTERRUPT, tid, 0, 0); /* not starting after all: stop it where it is */
			interrupted = 1;
		}
		if (w) {
			snprintf(err, n, "cannot stop thread %d of process %d (%s)", (int)tid, (int)in->t.pid,
			         w > 0 ? "no stop within 5 s" : strerror(errno));
			rc = -1;
			break;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			in->gone = 1;
			say_ended(in->t.pid, st, "while sonde attached", err, n);
			return -1;
		}
		int event = st >> 16, s = WSTOPSIG(st);
		if (event == PTRACE_EVENT_EXEC) {
			/* The new image has none of our bytes; the thread stands at
			 * the new loader's first instruction. */
			placed = 0;
			in->execd = 1;
			if (target_reopen(&in->t) || load_maps(in)) {
				snprintf(err, n, "cannot read the memory or maps of process %d after its exec",
				         (int)in->t.pid);
				rc = -1;
				break;
			}
			if (++execs == ENTRY_EXECS || interrupted)
				break; /* stopped (at the exec) */
			continue;
		}
		if (event == PTRACE_EVENT_STOP) {
			if (is_stop_sig(s)) {
				snprintf(err, n, "process %d was stopped by %s while sonde attached", (int)in->t.pid,
				         strsignal(s));
				rc = -1;
				break;
			}
			if (interrupted)
				break; /* our interrupt's stop */
			continue;
		}
		arch_regs r;
		siginfo_t si;
		if (s == SIGTRAP && placed && target_getregs(tid, &r) == 0 && arch_pc(&r) == at + ARCH_TRAP_PC_ADJ &&
		    ptrace(PTRACE_GETSIGINFO, tid, 0, &si) == 0 && si.si_code == SI_KERNEL) {
			arch_set_pc(&r, at);
			rc = 0;
			if (target_setregs(tid, &r)) {
				snprintf(err, n, "cannot set the registers of thread %d of process %d (%s)", (int)tid,
				         (int)in->t.pid, strerror(errno));
				rc = -1;
			}
			break;
		}
		sig = s; /* the program's own signal: delivered as without sonde */
	}
	if (placed && !in->gone)
		target_write(&in->t, at, &old, 1);
	ptrace(PTRACE_SETOPTIONS, tid, 0, 0);
	return rc;
}

/* Stops the thread where a call into libc is safe (see the top comment).
 * Never inside the dynamic loader, not even in a system call, nor while it
 * loads objects (glibc's _r_debug.r_state not RT_CONSISTENT, or no r_map
 * yet), nor before the thread has its TLS (fs base 0) or the C library is
 * mapped: the loader may be loading the program (an early attach, or just
 * after an exec), and a call from a system call made inside libc during that
 * time (its early initialisation, before the libraries' constructors) runs
 * dlopen before the loader's own lists are complete. */
#define ENTRY_TRIES 3
static int stop_safely(struct inject *in, char *err, size_t n)
{
	int entry_tries = 0, stopped = 0;
	for (int try = 0;; try++) {
		if (!stopped && interrupt(in, err, n))
			return -1;
		if (target_getregs(in->tid, &in->regs)) {
			snprintf(err, n, "cannot read the registers of thread %d (%s)", (int)in->tid, strerror(errno));
			return -1;
		}
		/* Read again at every stop, the first too: the maps read before
		 * it may be of an image in the middle of its exec (the executable
		 * alone: no loader, no _r_debug), which would make the loader's
		 * start-up look safe. */
		if (refresh(in, 1, err, n))
			return -1;
		struct module *m = modules_at(&in->mods, arch_pc(&in->regs));
		int why = unsafe(in, m);
		if (why == SAFE)
			return 0;
		stopped = 0;
		if (why != IN_LIBC && entry_tries < ENTRY_TRIES) {
			entry_tries++;
			if (run_to_entry(in, err, n) < 0)
				return -1;
			stopped = 1;
			continue;
		}
		if (try >= SAFE_TRIES) {
			if (why == LOADER_BUSY)
				snprintf(err, n, "the dynamic loader of process %d stays busy loading objects (stopped %d "
				         "times): a call into it could run before they are ready", (int)in->t.pid, try + 1);
			else if (m && why != IN_LOADER)
				snprintf(err, n, "thread %d of process %d stays inside %s (stopped there %d times): calling "
				         "dlopen there could deadlock", (int)in->tid, (int)in->t.pid, m->path, try + 1);
			else if (m)
				snprintf(err, n, "thread %d of process %d stays inside the dynamic loader %s (stopped there "
				         "%d times): it is loading the program", (int)in->tid, (int)in->t.pid, m->path,
				         try + 1);
			else
				snprintf(err, n, "process %d stays without its C library or TLS (stopped %d times): the "
				         "dynamic loader has not loaded it", (int)in->t.pid, try + 1);
			return -1;
		}
		ptrace(PTRACE_CONT, in->tid, 0, 0);
		sleep_us(200 + 50 * try);
	}
}

static int save_vector_regs(struct inject *in, char *err, size_t n)
{
	in->vec = malloc(VEC_MAX);
	if (!in->vec) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	static const int notes[] = { ARCH_NT_VECTOR, ARCH_NT_FP };
	for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++) {
		struct iovec iov = { in->vec, VEC_MAX };
		if (ptrace(PTRACE_GETREGSET, in->tid, (void *)(long)notes[i], &iov) == 0) {
			in->vecnote = notes[i];
			in->veclen = iov.iov_len;
			return 0;
		}
	}
	snprintf(err, n, "cannot read the FP/vector registers of thread %d (%s)", (int)in->tid, strerror(errno));
	return -1;
}

struct inject *inject_attach(pid_t pid, pid_t tid, char *err, size_t n)
{
	char st = pid > 0 ? inject_thread_state(pid, pid) : 0;
	if (!st) {
		snprintf(err, n, "cannot attach to process %d (no such process)", (int)pid);
		return NULL;
	}
	if (st == 'T') {
		snprintf(err, n, "cannot attach to process %d (it is stopped: resume it first, kill -CONT %d)",
		         (int)pid, (int)pid);
		return NULL;
	}
	if (!tid)
		tid = pick_thread(pid);
	else if (!inject_thread_state(pid, tid))
		tid = 0;
	if (!tid) {
		snprintf(err, n, "cannot attach to process %d (%s)", (int)pid,
		         st == 'Z' ? "it has exited" : "no such thread in it");
		return NULL;
	}
	struct inject *in = calloc(1, sizeof *in);
	if (!in) {
		snprintf(err, n, "out of memory");
		return NULL;
	}
	in->t.pid = pid;
	in->t.memfd = -1;
	in->tid = tid;
	in->stop.tid = tid;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
		char why[256];
		attach_why_refused(pid, errno, why, sizeof why);
		snprintf(err, n, "cannot attach to process %d (%s)", (int)pid, why);
		free(in);
		return NULL;
	}
	if (target_reopen(&in->t)) {
		snprintf(err, n, "cannot attach to process %d (cannot open /proc/%d/mem: %s)", (int)pid, (int)pid,
		         strerror(errno));
		goto fail;
	}
	if (ret_page_mapped(pid)) {
		snprintf(err, n, "cannot call into process %d (its page 0 is mapped: no return address that "
		         "faults)", (int)pid);
		goto fail;
	}
	if (load_maps(in)) {
		snprintf(err, n, "cannot attach to process %d (cannot read /proc/%d/maps)", (int)pid, (int)pid);
		goto fail;
	}
	if (stop_safely(in, err, n) || save_vector_regs(in, err, n))
		goto fail;
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof in->sigmask, &in->sigmask) < 0) {
		snprintf(err, n, "cannot read the signal mask of thread %d (%s)", (int)tid, strerror(errno));
		goto fail;
	}
	in->stop.pc = arch_pc(&in->regs);
	in->stop.syscall = arch_in_syscall(&in->regs) ? (long)in->regs.orig_rax : -1;
	in->stop.sysret = (int64_t)arch_call_result(&in->regs);
	in->lo = (arch_sp(&in->regs) - ARCH_RED_ZONE) & ~(uint64_t)(ARCH_STACK_ALIGN - 1);
	return in;
fail:
	inject_detach(in);
	return NULL;
}

/* Remembers the target's bytes at [addr, addr+len) for inject_detach. */
static int save_bytes(struct inject *in, uint64_t addr, size_t len)
{
	if (in->nsaved == MAX_SAVED)
		return -1;
	struct saved_bytes *s = &in->saved[in->nsaved];
	s->old = malloc(len ? len : 1);
	if (!s->old || target_read(&in->t, addr, s->old, len)) {
		free(s->old);
		return -1;
	}
	s->addr = addr;
	s->len = len;
	in->nsaved++;
	return 0;
}

int inject_push(struct inject *in, const void *data, size_t len, uint64_t *addr, char *err, size_t n)
{
	uint64_t a = (in->lo - len) & ~(uint64_t)(ARCH_STACK_ALIGN - 1);
	errno = 0;
	if (len > 1 << 20 || a > in->lo || save_bytes(in, a, in->lo - a) || target_write(&in->t, a, data, len)) {
		snprintf(err, n, "cannot write %zu bytes below the stack pointer (0x%llx) of thread %d in process %d (%s)",
		         len, (unsigned long long)in->lo, (int)in->tid, (int)in->t.pid,
		         errno ? strerror(errno) : "a short write: its memory changed, an exec?");
		return -1;
	}
	in->lo = a;
	*addr = a;
	return 0;
}

static void hold_signal(struct inject *in, int sig)
{
	if (in->nheld < MAX_HELD)
		in->held[in->nheld++] = sig;
}

int inject_call_begin(struct inject *in, uint64_t func, const uint64_t args[6], char *err, size_t n)
{
	pid_t pid = in->t.pid;
	if (in->gone) {
		snprintf(err, n, "process %d has ended", (int)pid);
		return -1;
	}
	arch_regs r = in->regs;
	arch_call_regs(&r, func, in->lo, args);
	uint64_t ra = CALL_RET_ADDR, block = ~fault_sigs_bits();
	if (save_bytes(in, arch_sp(&r), sizeof ra) || target_write(&in->t, arch_sp(&r), &ra, sizeof ra)) {
		snprintf(err, n, "cannot write a return address below the stack pointer of thread %d in process "
		         "%d", (int)in->tid, (int)pid);
		return -1;
	}
	if (ptrace(PTRACE_SETSIGMASK, in->tid, (void *)sizeof block, &block) < 0 || target_setregs(in->tid, &r) ||
	    ptrace(PTRACE_CONT, in->tid, 0, 0) < 0) {
		snprintf(err, n, "cannot start the call in thread %d of process %d (%s)", (int)in->tid, (int)pid,
		         strerror(errno));
		return -1;
	}
	return 0;
}

int inject_call_end(struct inject *in, uint64_t *ret, int timeout_ms, int give_up, char *err, size_t n)
{
	pid_t pid = in->t.pid;
	uint64_t ra = CALL_RET_ADDR;
	for (;;) {
		int st, w = wait_thread(in, &st, timeout_ms);
		if (w < 0) {
			snprintf(err, n, "cannot wait for thread %d of process %d (%s)", (int)in->tid, (int)pid,
			         strerror(errno));
			return -1;
		}
		if (w > 0 && !give_up)
			return 1;
		if (w > 0) {
			/* Stop it where it is: inject_detach puts it back as it was. */
			char e2[128];
			if (interrupt(in, e2, sizeof e2) && in->gone) {
				snprintf(err, n, "%s", e2);
				return -1;
			}
			snprintf(err, n, "the call in process %d did not return within %d ms (waiting for a lock?); "
			         "the thread was put back, but what the call had done stays", (int)pid, timeout_ms);
			return -1;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			in->gone = 1;
			say_ended(in->t.pid, st, "during the call", err, n);
			return -1;
		}
		int sig = WSTOPSIG(st);
		if (st >> 16 == PTRACE_EVENT_STOP) {
			ptrace(PTRACE_CONT, in->tid, 0, 0);
			continue;
		}
		siginfo_t si;
		arch_regs now;
		if (ptrace(PTRACE_GETSIGINFO, in->tid, 0, &si) < 0 || target_getregs(in->tid, &now)) {
			snprintf(err, n, "cannot read the state of thread %d of process %d (%s)", (int)in->tid,
			         (int)pid, strerror(errno));
			return -1;
		}
		int from_kernel = si.si_code > 0;
		if (sig == SIGSEGV && from_kernel && arch_pc(&now) == ra) {
			*ret = arch_call_result(&now);
			return 0;
		}
		if (is_fault_sig(sig) && from_kernel) {
			snprintf(err, n, "the call crashed in process %d (%s at 0x%llx, pc 0x%llx); the thread was "
			         "put back, but what the call had done stays", (int)pid, strsignal(sig),
			         (unsigned long long)(uintptr_t)si.si_addr, (unsigned long long)arch_pc(&now));
			return -1;
		}
		hold_signal(in, sig);
		ptrace(PTRACE_CONT, in->tid, 0, 0);
	}
}

int inject_call_at(struct inject *in, uint64_t func, const uint64_t args[6], uint64_t *ret, int timeout_ms,
                   char *err, size_t n)
{
	if (inject_call_begin(in, func, args, err, n))
		return -1;
	return inject_call_end(in, ret, timeout_ms, 1, err, n);
}

int inject_read_str(struct inject *in, uint64_t addr, char *buf, size_t n)
{
	size_t got = 0;
	if (!n)
		return -1;
	while (got + 1 < n) {
		/* Up to the end of the page: the next one may not be mapped. */
		size_t chunk = 4096 - ((addr + got) & 4095);
		if (chunk > n - 1 - got)
			chunk = n - 1 - got;
		if (target_read(&in->t, addr + got, buf + got, chunk))
			break;
		void *z = memchr(buf + got, 0, chunk);
		got += chunk;
		if (z)
			return 0;
	}
	buf[got] = 0;
	return got ? 0 : -1;
}

const struct inject_stop *inject_where(const struct inject *in)
{
	return &in->stop;
}

void inject_detach(struct inject *in)
{
	if (!in)
		return;
	if (!in->gone && in->t.memfd >= 0) {
		for (int i = in->nsaved - 1; i >= 0; i--)
			target_write(&in->t, in->saved[i].addr, in->saved[i].old, in->saved[i].len);
	}
	if (!in->gone && in->vec && in->veclen) {
		struct iovec iov = { in->vec, in->veclen };
		ptrace(PTRACE_SETREGSET, in->tid, (void *)(long)in->vecnote, &iov);
		target_setregs(in->tid, &in->regs);
		ptrace(PTRACE_SETSIGMASK, in->tid, (void *)sizeof in->sigmask, &in->sigmask);
		/* Pending while the thread is stopped; handled once it runs. */
		for (int i = 0; i < in->nheld; i++)
			syscall(SYS_tgkill, (int)in->t.pid, (int)in->tid, in->held[i]);
	}
	if (!in->gone)
		ptrace(PTRACE_DETACH, in->tid, 0, 0);
	for (int i = 0; i < in->nsaved; i++)
		free(in->saved[i].old);
	modules_free(&in->mods);
	if (in->t.memfd >= 0)
		close(in->t.memfd);
	free(in->vec);
	free(in);
}

int inject_call(pid_t pid, const char *lib, uint64_t func, const uint64_t args[6], uint64_t *ret, char *err,
                size_t n)
{
	struct inject *in = inject_attach(pid, 0, err, n);
	if (!in)
		return -1;
	/* func was found in an image the process may have left by an exec
	 * since: the maps read at this stop must still have lib there. */
	const struct module *m = lib ? modules_at(&in->mods, func) : NULL;
	const char *b = m ? strrchr(m->path, '/') : NULL;
	if (lib && (!m || strcmp(b ? b + 1 : m->path, lib))) {
		snprintf(err, n, "process %d has exec'd since (its new image has no %s at 0x%llx): nothing of sonde's "
		         "is left in it", (int)pid, lib, (unsigned long long)func);
		inject_detach(in);
		return -1;
	}
	int rc = inject_call_at(in, func, args, ret, 0, err, n);
	inject_detach(in);
	return rc;
}

int inject_peek(struct inject *in, uint64_t addr, void *buf, size_t len)
{
	return target_read(&in->t, addr, buf, len);
}

int inject_put_back(struct inject *in)
{
	return in->gone ? -1 : target_setregs(in->tid, &in->regs);
}

int inject_dlopen_with(struct inject *in, const struct dl_funcs *funcs, const char *lib_path, uint64_t *handle,
                       char *err, size_t n)
{
	pid_t pid = in->t.pid;
	/* dlopen resolves a relative path in the target's working directory. */
	char path[PATH_MAX];
	if (!realpath(lib_path, path)) {
		snprintf(err, n, "cannot load %s (%s)", lib_path, strerror(errno));
		return -1;
	}
	/* funcs were found while the process ran: an exec since (in->execd, or
	 * an exec before the attach that leaves dlopen outside the C library
	 * of the maps read once the thread stopped) replaced them. */
	struct dl_funcs f;
	const struct module *lib = funcs ? modules_at(&in->mods, funcs->dlopen) : NULL;
	if (funcs && !in->execd && lib && dl_is_runtime_lib(lib->path))
		f = *funcs;
	else if (dl_funcs_find(pid, &in->mods, &f, err, n))
		return -1;
	uint64_t at = 0, h = 0;
	int rc = inject_push(in, path, strlen(path) + 1, &at, err, n);
	if (rc == 0) {
		uint64_t args[6] = { at, RTLD_NOW };
		rc = inject_call_at(in, f.dlopen, args, &h, DLOPEN_TIMEOUT_MS, err, n);
	}
	if (rc == 0 && !h) {
		uint64_t args[6] = { 0 }, msg = 0;
		char why[512] = "dlerror() said nothing";
		if (inject_call_at(in, f.dlerror, args, &msg, DLOPEN_TIMEOUT_MS, why, sizeof why) == 0 && msg &&
		    inject_read_str(in, msg, why, sizeof why))
			snprintf(why, sizeof why, "dlerror() unreadable");
		snprintf(err, n, "dlopen of %s failed in process %d (%s)", path, (int)pid, why);
		rc = -1;
	}
	attach_time("dlopen: call returned");
	if (rc == 0)
		*handle = h;
	return rc;
}

struct inject *inject_dlopen_attach(pid_t pid, pid_t tid, const char *lib_path, uint64_t *handle, char *err,
                                    size_t n)
{
	/* dlopen is looked for before the process is touched: a static binary
	 * is refused without being stopped. */
	struct modules ms = { 0 };
	struct dl_funcs f;
	int have = 0;
	if (modules_load(&ms, pid) == 0 && ms.n > 0) {
		int rc = dl_funcs_find_wait(pid, &ms, &f, err, n);
		modules_free(&ms);
		if (rc)
			return NULL;
		have = 1;
	} else {
		modules_free(&ms); /* not readable: inject_attach says why */
	}
	struct inject *in = inject_attach(pid, tid, err, n);
	if (in && inject_dlopen_with(in, have ? &f : NULL, lib_path, handle, err, n)) {
		inject_detach(in);
		return NULL;
	}
	return in;
}

int inject_dlopen(pid_t pid, pid_t tid, const char *lib_path, uint64_t *handle, struct inject_stop *stop,
                  char *err, size_t n)
{
	struct inject *in = inject_dlopen_attach(pid, tid, lib_path, handle, err, n);
	if (!in)
		return -1;
	if (stop)
		*stop = in->stop;
	inject_detach(in);
	return 0;
}

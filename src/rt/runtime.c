/* runtime.c — libsonde-rt.so, preloaded into the recorded program by
 * `sonde record`: attaches to the session memory, registers this process,
 * its threads and its instrumented modules, and follows fork and exit.
 *
 * Nothing here is on the per-call hot path (that is hooks.c); this is the
 * once-per-process, once-per-thread and once-per-module work.  It may run in
 * awkward places (before main, inside a module constructor, in a fork child),
 * so it uses no stdio and keeps errno as it found it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/trace_enc.h"
#include "rt/rt.h"

#include <stddef.h>

RT_HIDDEN struct sonde_session_hdr *rt_sess;
RT_HIDDEN uint32_t rt_mode;
RT_HIDDEN uint32_t rt_proc_slot;
RT_HIDDEN __thread struct rt_tls rt_tls __attribute__((tls_model("initial-exec")));
RT_HIDDEN uintptr_t (*rt_exit_hook)(uintptr_t slot) = rt_exit_any;
RT_HIDDEN int rt_floor;
RT_HIDDEN int rt_agent_ended;

static int init_state; /* 0 not tried, 1 attached, -1 no session */
static pthread_key_t thread_key;
static int proc_hooks; /* thread_key, the fork handlers, on_exit: once per process */

/* Every thread that ever took a thread slot in this process, by its state
 * (added at its first slot, dropped at its last TSD destructor round): a
 * later `sonde record -p` resets them all (rt_session_retire), which other
 * threads' initial-exec TLS cannot otherwise be reached for.  reg_full: a
 * thread could not be added (its state cannot be reset: retire refuses). */
static struct rt_tls *reg[SONDE_MAX_THREADS];
static uint32_t nreg;
static int reg_full;
/* A spin lock, not a pthread mutex: the runtime's own lock must not be
 * the program's (under --locks, pthread_mutex_lock is the lock wrapper,
 * which would record it as a lock of the program's). */
static int reg_lock;

static int reg_trylock(void)
{
	return __atomic_exchange_n(&reg_lock, 1, __ATOMIC_ACQUIRE) == 0;
}

static void reg_lock_take(void)
{
	while (!reg_trylock())
		sched_yield();
}

static void reg_unlock(void)
{
	__atomic_store_n(&reg_lock, 0, __ATOMIC_RELEASE);
}

static void reg_add(struct rt_tls *L)
{
	reg_lock_take();
	if (nreg < SONDE_MAX_THREADS)
		reg[nreg++] = L;
	else
		reg_full = 1;
	reg_unlock();
}

static void reg_drop(struct rt_tls *L)
{
	reg_lock_take();
	for (uint32_t i = 0; i < nreg; i++)
		if (reg[i] == L) {
			reg[i] = reg[--nreg];
			break;
		}
	reg_unlock();
}

RT_HIDDEN void rt_log(const char *msg)
{
	char buf[256];
	size_t n = strlen(msg);
	if (n > sizeof buf - 20)
		n = sizeof buf - 20;
	memcpy(buf, "sonde: runtime: ", 16);
	memcpy(buf + 16, msg, n);
	buf[16 + n] = '\n';
	ssize_t r = write(2, buf, 17 + n);
	(void)r;
}

RT_HIDDEN int rt_thread_start(void *(*fn)(void *), void *arg, size_t stack)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, stack);
	int rc = pthread_create(&t, &at, fn, arg);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

RT_HIDDEN void rt_count_lost(struct sonde_thread *t, enum sonde_loss why)
{
	if (t)
		t->lost[why]++;
	else if (rt_sess)
		atomic_fetch_add_explicit(&rt_sess->lost[why], 1, memory_order_relaxed);
}

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got < len) {
		ssize_t r = read(fd, buf + got, len - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	return (int)got;
}

/* Take a process slot for this process image (first image, fork or exec). */
static void register_process(void)
{
	uint32_t slot = atomic_fetch_add_explicit(&rt_sess->nprocs, 1, memory_order_relaxed);
	if (slot >= SONDE_MAX_PROCS) {
		atomic_fetch_add_explicit(&rt_sess->lost[SONDE_LOST_THREAD_SLOTS], 1, memory_order_relaxed);
		rt_sess = NULL; /* this process is not recorded; the loss is counted */
		init_state = -1;
		return;
	}
	struct sonde_proc *p = &rt_sess->procs[slot];
	p->pid = getpid();
	p->ppid = getppid();
	p->exit_status = INT32_MIN;
	p->start_tsc = clock_ticks();
	ssize_t n = readlink("/proc/self/exe", p->exe, sizeof p->exe - 1);
	p->exe[n > 0 ? n : 0] = 0;
	int len = read_file("/proc/self/cmdline", p->cmdline, sizeof p->cmdline - 1);
	p->cmdline_len = len > 0 ? (uint32_t)len : 0;
	/* Same pid seen before: this image came from exec. */
	for (uint32_t i = 0; i < slot; i++)
		if (rt_sess->procs[i].pid == p->pid && rt_sess->procs[i].exec_seq >= p->exec_seq)
			p->exec_seq = rt_sess->procs[i].exec_seq + 1;
	atomic_store_explicit(&p->state, SONDE_P_LIVE, memory_order_release);
	rt_proc_slot = slot;
}

RT_HIDDEN int rt_note_plain_exec(const char *path, const char *why)
{
	if (!rt_sess || !path || !why)
		return -1;
	uint32_t slot = atomic_fetch_add_explicit(&rt_sess->nprocs, 1, memory_order_relaxed);
	if (slot >= SONDE_MAX_PROCS) {
		atomic_fetch_add_explicit(&rt_sess->lost[SONDE_LOST_THREAD_SLOTS], 1, memory_order_relaxed);
		return -1;
	}
	struct sonde_proc *p = &rt_sess->procs[slot];
	p->pid = getpid();
	p->ppid = getppid();
	p->exit_status = INT32_MIN;
	p->start_tsc = clock_ticks();
	char full[PATH_MAX]; /* realpath writes up to PATH_MAX; no malloc (a vfork child) */
	const char *e = realpath(path, full) ? full : path;
	size_t n = strnlen(e, sizeof p->exe - 1);
	memcpy(p->exe, e, n);
	p->exe[n] = 0;
	p->plain = why[0] == 's' && why[1] == 't' ? SONDE_PLAIN_STATIC : SONDE_PLAIN_SETID;
	for (uint32_t i = 0; i < slot && i < SONDE_MAX_PROCS; i++)
		if (rt_sess->procs[i].pid == p->pid && rt_sess->procs[i].exec_seq >= p->exec_seq)
			p->exec_seq = rt_sess->procs[i].exec_seq + 1;
	atomic_store_explicit(&p->state, SONDE_P_LIVE, memory_order_release);
	return (int)slot;
}

RT_HIDDEN void rt_unnote_plain_exec(int slot)
{
	if (rt_sess && slot >= 0 && slot < (int)SONDE_MAX_PROCS)
		atomic_store_explicit(&rt_sess->procs[slot].state, SONDE_P_FREE, memory_order_release);
}

/* The thread's end: a TSD destructor, so it runs after the thread's start
 * routine has returned or unwound (pthread_exit, pthread_cancel) and after
 * its thread_local destructors.  The frames still open are dead then (an
 * unwinding does not return through the exit trampoline): they close now,
 * not at the thread's end, and what the destructors of the program's own
 * keys call is a call of nobody's.  Those run after this one (the
 * runtime's key comes first: it was made before main), so it asks to be
 * called again (glibc calls the destructors of the keys given a value
 * meanwhile again, up to PTHREAD_DESTRUCTOR_ITERATIONS rounds) and notes the
 * end each time: the last is the thread's. */
static void thread_end(void *arg)
{
	uintptr_t round = (uintptr_t)arg;
	struct rt_tls *L = &rt_tls;
	if (L->state != RT_T_ON) {
		reg_drop(L); /* not called again: the thread ends */
		rt_cpu_close(L);
		return;
	}
	uint64_t now = clock_ticks();
	/* (after the agent's end the shadow stack is only read: rt_exit_ended) */
	if (L->t->depth && !__atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE)) {
		rt_busy_in(L);
		atomic_signal_fence(memory_order_seq_cst);
		rt_cpu_check_at(L, rt_mode, &now); /* the last wait, to the frame on top */
		rt_close_all(L, L->t, now);
		atomic_signal_fence(memory_order_seq_cst);
		rt_busy_out(L);
	}
	if (round < PTHREAD_DESTRUCTOR_ITERATIONS)
		pthread_setspecific(thread_key, (void *)(round + 1));
	else {
		reg_drop(L); /* the last round: the thread ends */
		rt_cpu_close(L); /* its calls from here on (other keys' destructors) have no off-CPU time */
	}
	L->t->end_tsc = now;
	/* the name it ends with: set through prctl(PR_SET_NAME), or by another
	 * thread's pthread_setname_np, neither of which the wrapper below sees */
	prctl(PR_GET_NAME, L->t->comm, 0, 0, 0);
	if (L->ring) {
		ring_flush(rt_sess, L->ring);
		rt_ring_forget(L);
	}
	atomic_store_explicit(&L->t->state, SONDE_T_EXITED, memory_order_release);
}

/* exit() and a return from main: the status (a process that is not sonde's
 * own child, a forked one, has nobody else to tell it). */
static void note_exit_status(int status, void *arg)
{
	(void)arg;
	if (rt_sess && rt_sess->procs[rt_proc_slot].pid == getpid())
		rt_sess->procs[rt_proc_slot].exit_status = status & 0xff;
}

static void before_fork(void)
{
	if (rt_sess)
		rt_thread_before_fork();
}

static void after_fork_parent(void)
{
	if (rt_sess)
		rt_thread_after_fork(0);
}

static void after_fork_child(void)
{
	rt_context_after_fork();
	/* one thread now (the lock may have been held by another at the fork) */
	reg_lock = 0;
	nreg = 0;
	if (rt_tls.priv)
		reg[nreg++] = &rt_tls;
	if (!rt_sess)
		return;
	register_process();
	rt_thread_after_fork(1);
}

/* Map the session at fd and register this process: 0, or -1 (logged). */
static int map_session(int fd)
{
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(struct sonde_session_hdr))
		return -1;
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rt_log("cannot map the session memory; this process is not recorded");
		return -1;
	}
	struct sonde_session_hdr *h = p;
	if (h->magic != SONDE_SESSION_MAGIC || h->version != SONDE_SESSION_VERSION ||
	    h->size != (uint64_t)st.st_size) {
		rt_log("session memory of another sonde version; this process is not recorded");
		munmap(p, (size_t)st.st_size);
		return -1;
	}
	rt_sess = h;
	rt_mode = h->mode;
	switch (rt_mode & (SONDE_MODE_PROFILE | SONDE_MODE_TRACE)) {
	case SONDE_MODE_PROFILE: rt_exit_hook = rt_exit_profile; break;
	case SONDE_MODE_TRACE:
		/* no filter of any kind: no frame has -F's flag or a --min-time entry */
		rt_exit_hook = !h->trace_max_depth && !h->filter_has_only && !h->trace_min_ticks &&
		                       (!h->filter_spec_off || !h->filter_spec_len)
		                   ? rt_exit_traceplain
		                   : rt_exit_trace;
		break;
	default: rt_exit_hook = rt_exit_any; break;
	}
	const char *fl = getenv("SONDE_BENCH_FLOOR");
	if (fl && fl[0] == '1') {
		rt_floor = 1;
		rt_exit_hook = rt_exit_floor;
	}
	init_state = 1;
	register_process();
	if (init_state > 0 && !proc_hooks) {
		proc_hooks = 1;
		pthread_key_create(&thread_key, thread_end);
		pthread_atfork(before_fork, after_fork_parent, after_fork_child);
		on_exit(note_exit_status, NULL);
	}
	return init_state > 0 ? 0 : -1;
}

/* The launch's session was taken back (rt_session_retire): the
 * environment's fd names a session nobody reads any more. */
static int env_session_retired;

RT_HIDDEN int rt_init(void)
{
	if (init_state)
		return init_state > 0 ? 0 : -1;
	int saved = errno;
	init_state = -1;
	/* the session of the environment (a launch), unless taken back: a
	 * later attach's session comes through rt_init_late only */
	const char *s = env_session_retired ? NULL : getenv(SONDE_ENV_FD);
	int rc = map_session(s ? atoi(s) : -1);
	errno = saved;
	return rc;
}

/* The agent (agent.c): the runtime was loaded into a running process that
 * has no session; map the one sonde made.  -EBUSY if this process already
 * records (it was started under sonde, or attached before). */
RT_HIDDEN int rt_init_late(int fd)
{
	if (init_state > 0 || rt_sess)
		return -EBUSY;
	init_state = 0;
	return map_session(fd) == 0 ? 0 : -EINVAL;
}

/* A word of this process's memory that may no longer be mapped (a stack
 * that was freed): read and written through the kernel, which says EFAULT
 * instead of faulting.  0 on success. */
static int peek_word(uintptr_t at, uintptr_t *v)
{
	struct iovec l = { v, sizeof *v }, r = { (void *)at, sizeof *v };
	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)sizeof *v ? 0 : -1;
}

static void poke_word(uintptr_t at, uintptr_t v)
{
	struct iovec l = { &v, sizeof v }, r = { (void *)at, sizeof v };
	ssize_t w = process_vm_writev(getpid(), &l, 1, &r, 1, 0);
	(void)w;
}

/* A slot that still holds an exit trampoline gets its real return address. */
static void unhook_slot(uintptr_t slot, uintptr_t ra)
{
	uintptr_t v;
	if (slot && !(slot & 7) && peek_word(slot, &v) == 0 && rt_is_exit_tramp(v))
		poke_word(slot, ra);
}

/* Every module registered in this session (its constructor, or the agent),
 * for the end of a launched session whose sonde is gone (agent.c). */
static struct sonde_modhook *reg_mods[SONDE_MAX_MODULES];
static uint32_t nreg_mods;

RT_HIDDEN void rt_cpu_retire_all(void)
{
	reg_lock_take();
	for (uint32_t i = 0; i < nreg; i++)
		rt_cpu_retire(reg[i]);
	reg_unlock();
}

RT_HIDDEN int rt_session_retire(void)
{
	struct sonde_session_hdr *S = rt_sess;
	if (!S)
		return 0;
	if (!__atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE))
		return -EBUSY; /* recording: launched under sonde, or attached and not ended */
	if (reg_full)
		return -ENOSPC;
	if (!reg_trylock())
		return -EAGAIN; /* a held thread is starting or ending */
	for (uint32_t i = 0; i < nreg; i++) {
		struct rt_tls *L = reg[i];
		if (L->state == RT_T_ON && L->t) {
			struct sonde_thread *t = L->t;
			uint32_t depth = t->depth < SONDE_STACK_MAX ? t->depth : SONDE_STACK_MAX;
			for (uint32_t k = depth; k-- > 0;)
				unhook_slot((uintptr_t)t->stack[k].slot, (uintptr_t)t->stack[k].site);
			for (uint32_t g = 0; L->priv && g < RT_GRAVES; g++)
				unhook_slot(L->priv->grave[g].slot, L->priv->grave[g].ra);
		}
		if (L->state != RT_T_NEW)
			L->state = RT_T_NEW; /* its next event takes a slot of the next session */
		if (L->vfork_state == RT_T_ON)
			L->vfork_state = RT_T_NEW;
		L->ring = NULL;
		rt_ring_forget(L);
	}
	reg_unlock();
	/* The memory goes: what the session used (the bump allocator's part) is
	 * replaced by fresh zero pages, reserved but not committed, so that a
	 * late writer (a thread that was blocked in a lock wrapper, a hook
	 * preempted past the end's grace period) writes into nothing instead of
	 * faulting; the rest, which nothing points into, is unmapped. */
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uint64_t size = S->size, used = atomic_load_explicit(&S->alloc, memory_order_relaxed);
	if (used > size)
		used = size;
	used = (used + pg - 1) & ~(uint64_t)(pg - 1);
	void *base = S;
	int locks = (rt_mode & (SONDE_MODE_LOCKS | SONDE_MODE_LOCK_EVENTS)) != 0;
	rt_sess = NULL;
	rt_proc_slot = 0;
	env_session_retired = 1; /* a launch's session (its fd in the environment) is never mapped again */
	init_state = 0;
	__atomic_store_n(&nreg_mods, 0, __ATOMIC_RELEASE); /* the next session registers its own */
	rt_exit_hook = rt_exit_any;
	__atomic_store_n(&rt_agent_ended, 0, __ATOMIC_RELEASE);
	if (used && mmap(base, used, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
	                 -1, 0) == MAP_FAILED)
		rt_log("could not release an earlier session's memory");
	if (size > used)
		munmap((char *)base + used, size - used);
	/* The zero pages of the sessions before: a whole session later, no
	 * hook of theirs runs any more, they go; those of --locks sessions stay
	 * (a thread may sit in a lock wrapper's wait for as long as it likes). */
	static struct { void *base; uint64_t len; int locks; } old[64];
	static uint32_t nold;
	uint32_t k = 0;
	for (uint32_t i = 0; i < nold; i++) {
		if (old[i].locks)
			old[k++] = old[i];
		else
			munmap(old[i].base, old[i].len);
	}
	nold = k;
	if (used && nold < sizeof old / sizeof old[0])
		old[nold++] = (__typeof__(old[0])){ base, used, locks };
	return 0;
}

__attribute__((constructor(101))) static void rt_ctor(void)
{
	if (rt_init() == 0)
		rt_instr_start(); /* functions patched without a rebuild (instr.c) */
}

/* The process ends: this thread's end and the process's end (kept if an
 * earlier _exit noted it), its ring flushed. */
static void note_process_end(void)
{
	uint64_t now = clock_ticks();
	struct rt_tls *L = &rt_tls;
	if (L->state == RT_T_ON) {
		L->t->end_tsc = now;
		prctl(PR_GET_NAME, L->t->comm, 0, 0, 0); /* as in thread_end */
		if (L->ring) {
			ring_flush(rt_sess, L->ring);
			rt_ring_forget(L);
		}
	}
	struct sonde_proc *p = &rt_sess->procs[rt_proc_slot];
	if (!p->end_tsc)
		p->end_tsc = now;
}

__attribute__((destructor)) static void rt_dtor(void)
{
	if (!rt_sess)
		return;
	note_process_end();
	atomic_store_explicit(&rt_sess->procs[rt_proc_slot].state, SONDE_P_EXITED, memory_order_release);
}

/* Take a thread slot and its region: header, then the CCT node pool. */
static int thread_attach(struct rt_tls *L)
{
	struct sonde_session_hdr *S = rt_sess;
	/* The private tables (rt.h); a fork child reuses its copy of the parent's. */
	if (!L->priv) {
		void *pv = mmap(NULL, sizeof *L->priv, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (pv == MAP_FAILED) {
			atomic_fetch_add_explicit(&S->lost[SONDE_LOST_SESSION_MEM], 1, memory_order_relaxed);
			return -1;
		}
		L->priv = pv;
		reg_add(L); /* once per thread: its state is reset by a later session (rt_session_retire) */
	}
	uint32_t slot = atomic_fetch_add_explicit(&S->nthreads, 1, memory_order_relaxed);
	if (slot >= SONDE_MAX_THREADS) {
		atomic_fetch_add_explicit(&S->lost[SONDE_LOST_THREAD_SLOTS], 1, memory_order_relaxed);
		return -1;
	}
	uint64_t size = S->thread_region_size;
	uint64_t off = sess_alloc(S, size);
	if (!off) {
		atomic_fetch_add_explicit(&S->lost[SONDE_LOST_SESSION_MEM], 1, memory_order_relaxed);
		return -1;
	}
	struct sonde_thread *t = sess_ptr(S, off);
	uint64_t hdr = (sizeof *t + 63) & ~(uint64_t)63;
	t->proc = rt_proc_slot;
	t->tid = (int32_t)syscall(SYS_gettid);
	prctl(PR_GET_NAME, t->comm, 0, 0, 0);
	t->start_tsc = t->last_tsc = clock_ticks();
	t->region_off = off;
	t->region_size = size;
	t->nodes_off = off + hdr;
	t->nodes_cap = (uint32_t)((size - hdr) / sizeof(struct sonde_node) > SONDE_NODES_MAX
	                          ? SONDE_NODES_MAX : (size - hdr) / sizeof(struct sonde_node)); /* grows: cct_grow.c */
	t->nodes_used = 1; /* node 0: the root */
	t->cur_node = 0;
	if (rt_mode & (SONDE_MODE_TRACE | SONDE_MODE_LOCK_EVENTS)) {
		t->ring_off = ring_create(S, slot, S->ring_size, RING_CHUNK_SIZE);
		if (!t->ring_off)
			atomic_fetch_add_explicit(&S->lost[SONDE_LOST_SESSION_MEM], 1, memory_order_relaxed);
	}
	atomic_store_explicit(&t->state, SONDE_T_LIVE, memory_order_relaxed);
	/* Publish the region: the recorder finds threads through threads_off. */
	atomic_store_explicit((_Atomic uint64_t *)&S->threads_off[slot], off, memory_order_release);
	L->t = t;
	L->slot = slot;
	L->nodes = thread_nodes(S, t);
	L->ring = t->ring_off ? sess_ptr(S, t->ring_off) : NULL;
	rt_ring_forget(L); /* a fork child's copy points into its parent's ring */
	memset(L->priv, 0, sizeof *L->priv);
	rt_cpu_open(L, t);
	L->state = RT_T_ON;
	return 0;
}

RT_HIDDEN struct rt_tls *rt_thread_slow(void)
{
	struct rt_tls *L = &rt_tls;
	if (L->state == RT_T_OFF)
		return NULL;
	int saved = errno;
	if (rt_init() != 0 || thread_attach(L) != 0) {
		L->state = RT_T_OFF;
		errno = saved;
		return NULL;
	}
	pthread_setspecific(thread_key, (void *)1); /* thread_end runs at thread exit */
	if (rt_sess->attach_off)
		rt_agent_adopt(L); /* `sonde record -p`: the calls this thread was in at the attach */
	errno = saved;
	return L;
}

/* vfork.  The child runs on its parent's memory, thread state included,
 * until it calls exec or _exit: what it called would be recorded as the
 * parent's calls, into the parent's thread.  So the thread is switched off
 * (RT_T_OFF: every hook passes straight through) for the child's time, and
 * the parent gets its state back when vfork returns in it.  The child's
 * calls are not recorded (an exec'ed instrumented program records itself).
 * As glibc's own vfork, the return address is kept out of the stack the
 * child shares (here in the thread's state), the system call made directly. */
RT_HIDDEN long rt_vfork_error(long e)
{
	errno = (int)-e;
	return -1;
}

__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl vfork\n"
	"	.type vfork,@function\n"
	"vfork:\n"
	"	pop %rdx\n"
	"	movq rt_tls@gottpoff(%rip), %rcx\n"
	"	movq %rdx, %fs:" RT_STR(RT_TLS_VFORK_RET) "(%rcx)\n"
	"	movl %fs:(%rcx), %esi\n"
	"	movl %esi, %fs:" RT_STR(RT_TLS_VFORK_STATE) "(%rcx)\n"
	"	movl $" RT_STR(RT_T_OFF_VALUE) ", %fs:(%rcx)\n"
	"	movl $58, %eax\n" /* SYS_vfork */
	"	syscall\n"
	"	movq rt_tls@gottpoff(%rip), %rcx\n"
	"	movq %fs:" RT_STR(RT_TLS_VFORK_RET) "(%rcx), %rdx\n"
	"	push %rdx\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n" /* the child: the thread stays off */
	"	movl %fs:" RT_STR(RT_TLS_VFORK_STATE) "(%rcx), %esi\n"
	"	movl %esi, %fs:(%rcx)\n"
	"	cmpq $-4095, %rax\n"
	"	jae 2f\n"
	"1:	ret\n"
	"2:	movq %rax, %rdi\n"
	"	jmp rt_vfork_error\n"
	"	.size vfork, .-vfork\n");

_Static_assert(offsetof(struct rt_tls, state) == 0, "vfork's assembly reads the state at offset 0");
_Static_assert(offsetof(struct rt_tls, vfork_ret) == RT_TLS_VFORK_RET, "vfork's assembly: vfork_ret");
_Static_assert(offsetof(struct rt_tls, vfork_state) == RT_TLS_VFORK_STATE, "vfork's assembly: vfork_state");
_Static_assert(RT_T_OFF == RT_T_OFF_VALUE, "vfork's assembly: RT_T_OFF");

/* fork.  The open frames of the forking thread must survive in the child:
 * their slots on its (copied) stack hold the exit trampoline's address, and
 * only the frames know the real return addresses.  The parent goes on using
 * its thread slot in the shared session while the child starts, so the
 * frames are copied in the prepare handler, into private memory that fork
 * duplicates.  In the child they are re-created in a thread slot of its own,
 * their time starting at the fork (what came before belongs to the parent),
 * their calls not counted again.  If the child gets no slot, the real return
 * addresses are put back into its stack instead. */
static __thread struct sonde_frame *fork_frames __attribute__((tls_model("global-dynamic"))); /* not in the static TLS surplus (rt.h) */
static __thread uint32_t fork_depth __attribute__((tls_model("global-dynamic")));
static __thread int fork_held __attribute__((tls_model("global-dynamic"))); /* rt_thread_before_fork took the busy section */

RT_HIDDEN void rt_thread_before_fork(void)
{
	struct rt_tls *L = &rt_tls;
	fork_frames = NULL;
	fork_held = 0;
	if (L->state != RT_T_ON || !L->t->depth)
		return;
	fork_held = 1;
	rt_busy_in(L); /* no hook of this thread changes the frames until the fork is done */
	uint32_t depth = L->t->depth;
	void *p = mmap(NULL, depth * sizeof(struct sonde_frame), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	memcpy(p, L->t->stack, depth * sizeof(struct sonde_frame));
	fork_frames = p;
	fork_depth = depth;
}

/* A TRX_RESUME record of func at `now` into this thread's ring: 0, or -1
 * when the ring has no room (counted as a lost event). */
static int trace_resume(struct rt_tls *L, uint32_t func, uint64_t now)
{
	uint64_t v = func;
	return rt_trace_ext(L, TRX_RESUME, &v, 1, now);
}

RT_HIDDEN void rt_resume_frames(struct rt_tls *L, const struct sonde_frame *frames, uint32_t depth, uint64_t now)
{
	struct sonde_thread *t = L->t;
	uint32_t cur = 0;
	for (uint32_t i = 0; i < depth; i++) {
		uint32_t n = RT_NO_NODE;
		if (t->nodes_used < t->nodes_cap) {
			n = t->nodes_used++;
			struct sonde_node *nd = &L->nodes[n];
			nd->parent = cur;
			nd->func = frames[i].func;
			nd->next_sibling = L->nodes[cur].first_child;
			L->nodes[cur].first_child = n;
			cur = n;
		}
		uint32_t flags = frames[i].flags;
		t->stack[i] = frames[i]; /* frames may be t->stack itself */
		t->stack[i].start = now;
		t->stack[i].node = n;
		t->stack[i].trace_pos = 0;
		/* No entry record in this process: no exit record either, except in
		 * a trace, where a TRX_RESUME record opens the frame again. */
		t->stack[i].flags = flags & (SONDE_FRAME_UNHOOKED | SONDE_FRAME_FULLSAVE | SONDE_FRAME_SLED);
		if (L->ring && (flags & SONDE_FRAME_TRACED) && trace_resume(L, t->stack[i].func, now) == 0) {
			t->stack[i].flags |= SONDE_FRAME_TRACED;
			rt_trace_mark(L, t->stack[i].func); /* its exit does not mark it (trace.h) */
		}
	}
	t->cur_node = cur;
	atomic_signal_fence(memory_order_release); /* frames complete before depth covers them */
	t->depth = depth;
}

RT_HIDDEN void rt_resume_suspended(struct rt_tls *L, const struct sonde_frame *frames, uint32_t depth, uint64_t now)
{
	struct sonde_thread *t = L->t;
	for (uint32_t i = 0; i < depth; i++) {
		uint32_t flags = frames[i].flags;
		struct sonde_frame *f = &t->stack[i];
		*f = frames[i];
		f->start = now;
		f->trace_pos = 0;
		f->flags = flags & (SONDE_FRAME_UNHOOKED | SONDE_FRAME_FULLSAVE | SONDE_FRAME_FILTER | SONDE_FRAME_SLED);
		if (flags & SONDE_FRAME_FILTER)
			t->filter_depth++; /* as at its entry: its exit takes it back */
		if (L->ring && (flags & SONDE_FRAME_TRACED) && trace_resume(L, f->func, now) == 0) {
			f->flags |= SONDE_FRAME_TRACED;
			rt_trace_mark(L, f->func);
		}
	}
	uint32_t cur = 0; /* the innermost frame's node (none: the pool was full at its entry) */
	for (uint32_t i = depth; i-- > 0;)
		if (t->stack[i].node != RT_NO_NODE) {
			cur = t->stack[i].node;
			break;
		}
	t->cur_node = cur;
	atomic_signal_fence(memory_order_release); /* frames complete before depth covers them */
	t->depth = depth;
}

RT_HIDDEN void rt_thread_after_fork(int child)
{
	struct rt_tls *L = &rt_tls;
	/* rt_thread_before_fork's section, as it said in this process's own
	 * memory: not the thread record's depth, in the session, which the
	 * parent changes after the fork while the child reads it */
	int held = fork_held;
	fork_held = 0;
	struct sonde_frame *frames = fork_frames;
	uint32_t depth = frames ? fork_depth : 0;
	fork_frames = NULL;
	if (!child) {
		if (frames)
			munmap(frames, depth * sizeof *frames);
		if (held)
			rt_busy_out(L);
		return;
	}
	if (L->state != RT_T_ON) {
		L->state = RT_T_NEW;
		return;
	}
	if (thread_attach(L) != 0) {
		L->state = RT_T_OFF;
		for (uint32_t i = 0; i < depth; i++) /* unhook: nobody will keep these */
			if (!(frames[i].flags & SONDE_FRAME_UNHOOKED))
				*(uintptr_t *)(uintptr_t)frames[i].slot = frames[i].site;
		goto done;
	}
	pthread_setspecific(thread_key, (void *)1);
	rt_resume_frames(L, frames, depth, clock_ticks());
done:
	if (frames)
		munmap(frames, depth * sizeof *frames);
	if (held)
		rt_busy_out(L); /* signals held back before the fork: the child's copy of them is not pending, only blocked */
}

/* rt_thread_slow behind xsave / xrstor of every state component the OS
 * enabled (x87, SSE, AVX, ...): its libc calls may use vector registers
 * that hold the instrumented function's arguments.  Once per thread. */
__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl rt_thread_slow_saving\n"
	"	.hidden rt_thread_slow_saving\n"
	"	.type rt_thread_slow_saving,@function\n"
	"rt_thread_slow_saving:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	push %rbx\n"
	"	push %r12\n"
	"	mov $0xd, %eax\n"
	"	xor %ecx, %ecx\n"
	"	cpuid\n"                 /* ebx: xsave area size for the enabled components */
	"	sub %rbx, %rsp\n"
	"	and $-64, %rsp\n"
	"	xor %eax, %eax\n"       /* the xsave header (bytes 512..575) must start zeroed */
	"	mov $8, %ecx\n"
	"1:	mov %rax, 504(%rsp,%rcx,8)\n"
	"	dec %ecx\n"
	"	jnz 1b\n"
	"	mov $-1, %eax\n"
	"	mov $-1, %edx\n"
	"	xsave64 (%rsp)\n"
	"	call rt_thread_slow\n"
	"	mov %rax, %r12\n"
	"	mov $-1, %eax\n"
	"	mov $-1, %edx\n"
	"	xrstor64 (%rsp)\n"
	"	mov %r12, %rax\n"
	"	lea -16(%rbp), %rsp\n"
	"	pop %r12\n"
	"	pop %rbx\n"
	"	pop %rbp\n"
	"	ret\n"
	"	.size rt_thread_slow_saving, .-rt_thread_slow_saving\n");

/* Find this module's load bias, path and build-id. */
struct find_mod {
	uintptr_t addr;
	struct sonde_module *out;
};

static int find_mod_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct find_mod *f = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (f->addr < lo || f->addr >= lo + ph->p_memsz)
			continue;
		f->out->load_bias = info->dlpi_addr;
		if (info->dlpi_name && info->dlpi_name[0]) {
			size_t n = strlen(info->dlpi_name);
			if (n >= sizeof f->out->path)
				n = sizeof f->out->path - 1;
			memcpy(f->out->path, info->dlpi_name, n);
			f->out->path[n] = 0;
		} else {
			ssize_t n = readlink("/proc/self/exe", f->out->path, sizeof f->out->path - 1);
			f->out->path[n > 0 ? n : 0] = 0;
		}
		for (int j = 0; j < info->dlpi_phnum; j++) {
			const ElfW(Phdr) *nh = &info->dlpi_phdr[j];
			if (nh->p_type != PT_NOTE)
				continue;
			const char *p = (const char *)(info->dlpi_addr + nh->p_vaddr);
			const char *end = p + nh->p_memsz;
			while (p + sizeof(ElfW(Nhdr)) <= end) {
				const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
				const char *name = p + sizeof *n;
				const char *desc = name + ((n->n_namesz + 3) & ~3u);
				if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
				    n->n_descsz <= sizeof f->out->build_id) {
					memcpy(f->out->build_id, desc, n->n_descsz);
					f->out->build_id_len = n->n_descsz;
				}
				p = desc + ((n->n_descsz + 3) & ~3u);
			}
		}
		return 1;
	}
	return 0;
}

RT_HIDDEN struct sonde_module *rt_module_new(uintptr_t anchor, uint32_t nfuncs, uint32_t *slot_out, uint64_t **funcs)
{
	uint32_t slot = atomic_fetch_add_explicit(&rt_sess->nmodules, 1, memory_order_relaxed);
	if (slot >= SONDE_MAX_MODULES) {
		atomic_fetch_add_explicit(&rt_sess->lost[SONDE_LOST_MODULE_SLOTS], 1, memory_order_relaxed);
		return NULL;
	}
	struct sonde_module *M = &rt_sess->modules[slot];
	M->proc = rt_proc_slot;
	M->nfuncs = nfuncs;
	struct find_mod f = { anchor, M };
	dl_iterate_phdr(find_mod_cb, &f);
	uint64_t off = nfuncs ? sess_alloc(rt_sess, (uint64_t)nfuncs * sizeof(uint64_t)) : 0;
	if (nfuncs && !off) {
		atomic_fetch_add_explicit(&rt_sess->lost[SONDE_LOST_SESSION_MEM], 1, memory_order_relaxed);
		return NULL;
	}
	M->funcs_off = off;
	*funcs = sess_ptr(rt_sess, off);
	*slot_out = slot;
	return M;
}

RT_HIDDEN uint64_t *rt_fenc;
static uint64_t fenc_slots; /* bit per slot: its entries writable */

/* Entries [from, to) of rt_fenc made writable (page-rounded). */
static int fenc_open(uint64_t from, uint64_t to)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)(rt_fenc + from) & ~(pg - 1);
	uintptr_t hi = ((uintptr_t)(rt_fenc + to) + pg - 1) & ~(pg - 1);
	return mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) == 0;
}

/* rt_fenc's entries of a module slot of nfuncs functions (and its
 * unnumbered bucket), made writable at the first module of that slot in
 * this process (a slot is the session's: a module of the same slot in a
 * forked child is the one the parent had, with the same numbers); the
 * table's address space reserved at the first.  0 when there is no memory
 * for it (that module gets the hook with filters, which needs no table). */
static int fenc_table(uint32_t slot, uint32_t nfuncs)
{
	if (slot >= TRACE_PLAIN_SLOTS || nfuncs >= SONDE_UNNUMBERED)
		return 0;
	if (__atomic_load_n(&fenc_slots, __ATOMIC_ACQUIRE) >> slot & 1)
		return 1;
	if (!__atomic_load_n(&rt_fenc, __ATOMIC_ACQUIRE)) {
		/* 64 slots of 2^20 entries: 512 MiB of address space, no memory
		 * (PROT_NONE, MAP_NORESERVE) until a slot's pages are made
		 * writable and touched; the first of two registering threads
		 * keeps its reservation */
		size_t size = (size_t)TRACE_PLAIN_SLOTS << 20 << 3;
		void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return 0;
		uint64_t *none = NULL;
		if (!__atomic_compare_exchange_n(&rt_fenc, &none, (uint64_t *)p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			munmap(p, size);
	}
	uint64_t base = (uint64_t)slot << 20;
	if (!fenc_open(base, base + nfuncs) || !fenc_open(base + SONDE_UNNUMBERED, base + SONDE_UNNUMBERED + 1))
		return 0;
	__atomic_fetch_or(&fenc_slots, 1ull << slot, __ATOMIC_RELEASE);
	return 1;
}

RT_HIDDEN sonde_enter_fn rt_enter_hook(int numbered, const struct sonde_module *M)
{
	if (rt_floor)
		return numbered ? rt_enter_num_floor : rt_enter_floor;
	if (!numbered && (rt_mode & SONDE_MODE_NO_CPU)) /* nothing timed: a sonde-cc build's sleds count */
		return rt_enter_counted;
	switch (rt_mode & (SONDE_MODE_PROFILE | SONDE_MODE_TRACE)) {
	case SONDE_MODE_PROFILE: return numbered ? rt_enter_num_profile : rt_enter_profile;
	case SONDE_MODE_TRACE:
		/* No filter to apply (the session's, the module's -F/-N/--domain
		 * bitmap): the hook without them (trace.h's `plain`), for the
		 * module slots whose functions' varints it keeps (rt.h). */
		if (!rt_sess->trace_max_depth && !rt_sess->filter_has_only && !rt_sess->trace_min_ticks &&
		    !M->filter_off && fenc_table((uint32_t)(M - rt_sess->modules), M->nfuncs))
			return numbered ? rt_enter_num_traceplain : rt_enter_traceplain;
		return numbered ? rt_enter_num_trace : rt_enter_trace;
	default: return numbered ? rt_enter_num_any : rt_enter_any;
	}
}

RT_HIDDEN void rt_sled_hooks(const struct sonde_module *M, sonde_enter_fn *enter, sonde_exit_sled_fn *exit)
{
	sonde_enter_fn e = rt_enter_hook(0, M); /* the same choice, for the function with exit sleds */
	*enter = e == rt_enter_floor ? rt_enter_sled_floor
	       : e == rt_enter_counted ? rt_enter_sled_counted
	       : e == rt_enter_profile ? rt_enter_sled_profile
	       : e == rt_enter_traceplain ? rt_enter_sled_traceplain
	       : e == rt_enter_trace ? rt_enter_sled_trace : rt_enter_sled_any;
	*exit = e == rt_enter_floor ? rt_exit_sled_floor
	      : e == rt_enter_counted ? rt_exit_sled_counted
	      : e == rt_enter_profile ? rt_exit_sled_profile
	      : e == rt_enter_traceplain ? rt_exit_sled_traceplain
	      : e == rt_enter_trace ? rt_exit_sled_trace : rt_exit_sled_any;
}

RT_HIDDEN uint32_t rt_registered_modules(struct sonde_modhook ***out)
{
	*out = reg_mods;
	return __atomic_load_n(&nreg_mods, __ATOMIC_ACQUIRE);
}

RT_EXPORT int sonde_rt_register_module(struct sonde_modhook *m)
{
	int saved = errno;
	if (rt_init() != 0 || rt_agent_ended)
		goto refuse;
	if (m->version != SONDE_MODABI_VERSION) {
		rt_log("a module was built with another sonde version (relink it); it is not recorded");
		goto refuse;
	}
	if (m->nfuncs >= SONDE_MAX_FUNCS_PER_MODULE) {
		rt_log("a module has more than 1048574 functions; it is not recorded");
		goto refuse;
	}
	uint32_t slot;
	uint64_t *funcs;
	struct sonde_module *M = rt_module_new((uintptr_t)m->anchor, m->nfuncs, &slot, &funcs);
	if (!M)
		goto refuse;
	for (uint32_t i = 0; i < m->nfuncs; i++)
		funcs[i] = m->entries[i] + SONDE_PAD - M->load_bias;
	rt_filter_module(M); /* trace -F/-N/--domain (filter.c) */
	m->slot = slot;
	m->enter = rt_enter_hook(0, M);
	rt_sled_hooks(M, &m->enter_sled, &m->exit_sled);
	m->tail_sled = rt_tail_sled;
	/* Functions the trace filters keep out stay dormant (trace-only sessions:
	 * a profile needs every function). */
	const uint8_t *skip = M->filter_off && !(rt_mode & SONDE_MODE_PROFILE) ? sess_ptr(rt_sess, M->filter_off) : NULL;
	int dormant = rt_patch_module(m, skip);
	if (dormant < 0)
		rt_log("could not write into a module's code; it is not recorded");
	M->dormant = dormant > 0 ? (uint32_t)dormant : 0;
	M->numbering_ns = m->numbering_ns;
	atomic_store_explicit(&M->state, SONDE_M_LOADED, memory_order_release);
	uint32_t k = __atomic_fetch_add(&nreg_mods, 1, __ATOMIC_ACQ_REL);
	if (k < SONDE_MAX_MODULES)
		__atomic_store_n(&reg_mods[k], m, __ATOMIC_RELEASE);
	else
		__atomic_store_n(&nreg_mods, SONDE_MAX_MODULES, __ATOMIC_RELEASE);
	errno = saved;
	return 0;
refuse:
	errno = saved;
	return -1;
}

RT_EXPORT void sonde_rt_unregister_module(struct sonde_modhook *m)
{
	if (rt_sess && m->slot < SONDE_MAX_MODULES && m->slot < atomic_load(&rt_sess->nmodules))
		atomic_store_explicit(&rt_sess->modules[m->slot].state, SONDE_M_UNLOADED, memory_order_release);
}

/* Thread names: capture pthread_setname_np for the timeline. */
RT_EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
	static int (*real)(pthread_t, const char *);
	if (!real)
		real = (int (*)(pthread_t, const char *))dlsym(RTLD_NEXT, "pthread_setname_np");
	int rc = real ? real(th, name) : ENOSYS;
	if (rc == 0 && pthread_equal(th, pthread_self())) {
		struct rt_tls *L = rt_thread();
		if (L) {
			strncpy(L->t->comm, name, SONDE_COMM_MAX - 1);
			L->t->comm[SONDE_COMM_MAX - 1] = 0;
		}
	}
	return rc;
}

/* _exit / _Exit end the process without destructors: note the end and the
 * status here, so that a child that forks and _exits is charged its own
 * time only and its end is known.  Not in a vfork child: it runs on its
 * parent's memory, and the process slot is the parent's. */
RT_EXPORT __attribute__((noreturn)) void _exit(int status)
{
	if (rt_sess && rt_sess->procs[rt_proc_slot].pid == getpid()) {
		note_process_end();
		rt_sess->procs[rt_proc_slot].exit_status = status & 0xff; /* as wait(2) reports it */
		atomic_store_explicit(&rt_sess->procs[rt_proc_slot].state, SONDE_P_EXITED, memory_order_release);
	}
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

RT_EXPORT __attribute__((noreturn)) void _Exit(int status)
{
	_exit(status);
}

/* Their addresses here, for the agent's GOT redirections (context.c). */
RT_HIDDEN __attribute__((noreturn, nothrow, leaf)) void rt_exit_now(int) __attribute__((alias("_exit")));
RT_HIDDEN __attribute__((noreturn, nothrow, leaf)) void rt_exit_now2(int) __attribute__((alias("_Exit")));

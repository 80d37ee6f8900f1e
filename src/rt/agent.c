/* agent.c — the runtime loaded late into a running program (`sonde record
 * -p`, docs/ATTACH.md).  sonde makes the program dlopen libsonde-rt.so and
 * call sonde_agent_start through ptrace (src/attach/agent.c), then detaches;
 * from then on the session memory and one pipe join them.
 *
 * Start: map the session (the program opens sonde's memfd through
 * /proc/<sonde>/fd/<n>, which needs the same user or root, the rights
 * ptrace needed already), find every instrumented module through its ELF
 * note (module.c) and register it as a preloaded runtime would, switching
 * its sleds on while the program runs (patch.c says what is safe).  Threads
 * take their per-thread state at their first event, as in a launched run.
 *
 * With --locks (a session whose mode has SONDE_MODE_LOCKS), the program
 * need not be a sonde build: the lock functions are redirected to the lock
 * wrappers (locks.c) through the GOT of every loaded object (got.c), and of
 * objects dlopen'ed later; the end puts the entries back.
 *
 * C++ exceptions: a launched runtime interposes the unwinder's entry points
 * by LD_PRELOAD so that the unwinder never meets the exit trampoline's
 * address (unwind.c); loaded late, the agent redirects them through the GOT
 * the same way (got.c), before any sled is switched on, and leaves them so
 * after the end: frames hooked before the end may stay on the stacks as long
 * as the program runs.
 *
 * End: sonde calls sonde_agent_stop (another injected call), or, if sonde
 * dies, the watcher thread sees the pipe's end-of-file and does the same.
 * The sleds go back to nops; frames hooked before the end still return
 * through the exit trampoline, which from then on only finds their real
 * return addresses (rt_exit_ended).  The library stays loaded, inert.
 *
 * Runs in an injected call or in the watcher thread, never on the hot path.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include "common/instr_abi.h"
#include "common/proc_stat.h"
#include "rt/got.h"
#include "rt/rt.h"

#define AGENT_MAX_MODS 1024

static struct sonde_modhook *agent_mods[AGENT_MAX_MODS];
static int agent_nmods;
static int agent_state; /* 0 never started, 1 recording, 2 ended */
static uint32_t agent_gen; /* which attach: a watcher ends its own only */
static int agent_locks; /* --locks: lock functions redirected (got.c) */
static pthread_mutex_t agent_lock = PTHREAD_MUTEX_INITIALIZER; /* start against start */
/* While recording: the session's memory and sonde's pipe, close-on-exec
 * copies for an exec that keeps the recording (exec_follow.c). */
static int agent_sess_keep = -1, agent_alive_keep = -1;

struct note_walk {
	struct sonde_modhook **out;
	int n, max, old;
};

/* One object's PT_NOTE segments: the module's note, if it has one. */
static int note_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct note_walk *w = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof *nh;
			const char *desc = name + ((nh->n_namesz + 3) & ~3u);
			const char *next = desc + ((nh->n_descsz + 3) & ~3u);
			if (next > end || next <= p)
				break;
			if (nh->n_type == SONDE_NOTE_TYPE && nh->n_namesz == sizeof SONDE_NOTE_NAME &&
			    !memcmp(name, SONDE_NOTE_NAME, sizeof SONDE_NOTE_NAME) && nh->n_descsz == SONDE_NOTE_DESCSZ) {
				uint32_t version;
				int64_t off;
				memcpy(&version, desc, 4);
				memcpy(&off, desc + 8, 8);
				struct sonde_modhook *m = (struct sonde_modhook *)(uintptr_t)((intptr_t)(desc + 8) + off);
				/* Its constructor has run (the object is fully loaded). */
				if (version != SONDE_MODABI_VERSION || m->version != SONDE_MODABI_VERSION)
					w->old++;
				else if (m->entries && m->nfuncs && w->n < w->max)
					w->out[w->n++] = m;
			}
			p = next;
		}
	}
	return 0;
}

/* The function at fn, if it is an instrumented one of a module the agent
 * switched on: its SONDE_FUNC id, or SONDE_UNNUMBERED. */
static uint32_t func_at(uintptr_t fn)
{
	int n = __atomic_load_n(&agent_nmods, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		struct sonde_modhook *m = agent_mods[i];
		uint32_t num = rt_number_of(m, fn);
		if (num != SONDE_UNNUMBERED)
			return SONDE_FUNC(m->slot, num);
	}
	return rt_instr_func_at(fn); /* a function patched without a rebuild */
}

/* The calls this thread was in at the attach (sonde unwound it while it was
 * stopped: attach/frames.c), outermost first.  Each is checked against the
 * stack as it is now: its slot above this call's, below the previous
 * frame's, still holding the same return address; the first that fails and
 * every deeper one have returned meanwhile.  The kept ones become resumed
 * frames starting at the attach (calls not counted; TRX_RESUME in a trace),
 * then their slots get the exit trampoline, as an entry hook would have
 * done: their returns are recorded, and after the end rt_exit_ended finds
 * their real return addresses on the shadow stack.  Runs inside this
 * thread's first hook, deeper than all of them, so none can return now. */
/* The process whose image sonde stopped and unwound (sonde_agent_start's):
 * the attach's frames are its threads' and hold its stacks' addresses.  An
 * image it exec'd since (its main thread keeps the tid), a fork child, or a
 * later process of the tree given a recycled tid adopts none: their
 * stacks are elsewhere (reading a frame's slot there faulted: attach_races,
 * an exec'd image's first hook under load). */
static pid_t agent_adopt_pid;

RT_HIDDEN void rt_agent_adopt(struct rt_tls *L)
{
	if (!agent_adopt_pid || agent_adopt_pid != getpid())
		return;
	struct sonde_session_hdr *S = rt_sess;
	uint64_t off = S->attach_off;
	if (!off || off > S->size || sizeof(struct sonde_attach) > S->size - off)
		return;
	struct sonde_attach *a = sess_ptr(S, off);
	uint64_t nf = a->nframes;
	if (nf > (S->size - off - sizeof *a) / sizeof(struct sonde_attach_frame))
		return;
	struct sonde_thread *t = L->t;
	int32_t tid = t->tid;
	/* Above the slot of the call whose entry is this first event: a frame of
	 * the snapshot at that very slot has returned (this call reuses it). */
	uintptr_t sp = L->first_slot ? L->first_slot : (uintptr_t)__builtin_frame_address(0), prev = UINTPTR_MAX;
	uint32_t k = 0;
	uint64_t off_at = 0; /* the thread's off-CPU time at the attach */
	rt_busy_in(L); /* a signal handler's calls wait meanwhile (signals.c) */
	for (uint64_t i = 0; i < nf && k < SONDE_STACK_MAX / 2; i++) {
		struct sonde_attach_frame *f = &a->f[i];
		if (f->tid != tid)
			continue;
		f->tid = 0; /* taken (a later thread with this tid takes nothing) */
		off_at = f->off_ns;
		uintptr_t slot = (uintptr_t)f->slot;
		if (slot <= sp || slot >= prev || (slot & 7) || *(uintptr_t *)slot != f->ra)
			break;
		uint32_t func = func_at((uintptr_t)f->fn);
		if (func == SONDE_UNNUMBERED)
			continue; /* not instrumented code (libc, the loader, ...) */
		prev = slot;
		struct sonde_frame *fr = &t->stack[k++];
		__builtin_memset(fr, 0, sizeof *fr);
		fr->slot = slot;
		fr->site = f->ra;
		fr->func = func;
		uint32_t mod = SONDE_FUNC_MOD(func);
		uint32_t full = mod < SONDE_MAX_MODULES && S->modules[mod].how == SONDE_MOD_PATCHED ? SONDE_FRAME_FULLSAVE : 0;
		/* In a trace, unless the filters would have left the call out. */
		fr->flags = full;
		if ((rt_mode & SONDE_MODE_TRACE) && !S->modules[mod].filter_off && !S->filter_has_only &&
		    (!S->trace_max_depth || k <= S->trace_max_depth))
			fr->flags |= SONDE_FRAME_TRACED;
	}
	for (uint64_t i = 0; i < nf; i++) /* the rest of this thread's, if the walk broke off */
		if (a->f[i].tid == tid)
			a->f[i].tid = 0;
	if (k) {
		if (a->tsc < t->start_tsc)
			t->start_tsc = a->tsc; /* the thread was there at the attach */
		rt_resume_frames(L, t->stack, k, a->tsc);
		/* the thread's off-CPU time from the attach to this first event (a
		 * thread blocked until now, in read or epoll_wait, waited) is the
		 * innermost resumed call's; the clocks agree (both CLOCK_MONOTONIC
		 * less the time the thread ran) */
		if (off_at && L->cpu_page && off_at <= L->off_ns && t->cur_node < t->nodes_used)
			L->nodes[t->cur_node].off_ns += L->off_ns - off_at;
		for (uint32_t i = 0; i < k; i++)
			*(uintptr_t *)(uintptr_t)t->stack[i].slot = rt_exit_tramp_for(t->stack[i].flags);
	}
	rt_busy_out(L);
}

/* The session's end: new calls pass through, every redirection and patch
 * undone, the threads' events given back (mods: the modules whose sleds
 * go back to nops). */
static void end_now(struct sonde_modhook *const *mods, int nmods)
{
	{
		__atomic_store_n(&rt_agent_ended, 1, __ATOMIC_RELEASE);
		/* A trace: a hook waiting for room in a full ring gives up (the
		 * event is counted as lost) instead of waiting for a sonde that may
		 * be gone or no longer drains. */
		atomic_store_explicit(&rt_sess->stop, 1, memory_order_relaxed);
		/* --locks: the GOT entries back first (new calls go straight to
		 * libc), then the wrappers still reached pass through. */
		if (agent_locks) {
			rt_got_restore(RT_GOT_LOCKS);
			rt_locks_end();
		}
		/* --syscalls: new calls straight to libc (a group not added is
		 * restored as nothing); a wrapper still reached passes through */
		rt_got_restore(RT_GOT_SYSCALLS);
		/* New calls stop first (a call already in its sled does nothing),
		 * then returns stop recording, then the sleds go back to nops. */
		for (int i = 0; i < nmods; i++)
			if (mods[i]) /* (a slot being registered now is NULL a moment) */
				__atomic_store_n(&mods[i]->enter, rt_enter_ended, __ATOMIC_RELEASE);
		__atomic_store_n(&rt_exit_hook, rt_exit_ended, __ATOMIC_RELEASE);
		for (int i = 0; i < nmods; i++)
			if (mods[i] && rt_unpatch_module(mods[i]))
				rt_log("could not switch a module's sleds back to nops; its calls go on costing a call");
		rt_instr_end(); /* functions patched without a rebuild: their bytes back */
		/* A hook that began before the swap ends within nanoseconds unless
		 * its thread is preempted: give it a grace period before sonde reads
		 * the session (see docs/ATTACH.md). */
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		/* The program's handlers and masks back (signals.c), only now: until
		 * every function is put back, SIGTRAP must stay unblocked. */
		rt_got_restore(RT_GOT_SIGNALS);
		rt_signals_end();
		rt_cpu_retire_all(); /* the threads' perf events (cpu_time.c) go */
	}
}

/* Once, from sonde's call or the watcher, whichever comes first; no lock
 * (the watcher may be the thread sonde's call runs on, see inject.c). */
static void end_recording(uint32_t gen)
{
	int one = 1;
	if (gen == __atomic_load_n(&agent_gen, __ATOMIC_ACQUIRE) &&
	    __atomic_compare_exchange_n(&agent_state, &one, 2, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		rt_got_restore(RT_GOT_EXEC); /* execs from now on pass on as they are */
		/* every module registered in this session: those found at the
		 * start, and those whose constructor registered them since (a
		 * sonde-cc library dlopen'ed later, an exec'd image's executable) */
		struct sonde_modhook **mods;
		uint32_t n = rt_registered_modules(&mods);
		end_now(mods, (int)n);
		int s = agent_sess_keep, a = agent_alive_keep;
		agent_sess_keep = agent_alive_keep = -1;
		if (s >= 0)
			close(s);
		if (a >= 0)
			close(a);
	}
}

/* sonde has closed its end of the pipe (it ended, or is ending): a process
 * of the tree that missed the end (a fork child has no watcher) must not
 * start a new image into a session nobody serves. */
static int sonde_gone(int afd)
{
	struct pollfd p = { afd, POLLIN, 0 };
	return poll(&p, 1, 0) != 0;
}

RT_HIDDEN int rt_agent_sonde_gone(void)
{
	int a = __atomic_load_n(&agent_alive_keep, __ATOMIC_ACQUIRE);
	return a >= 0 && sonde_gone(a);
}

RT_HIDDEN int rt_agent_follow(struct rt_follow_keep *k, int spawn)
{
	(void)spawn; /* every process of the recorded tree is recorded */
	if (__atomic_load_n(&agent_state, __ATOMIC_ACQUIRE) != 1 || __atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE))
		return -1;
	k->fd[0] = __atomic_load_n(&agent_sess_keep, __ATOMIC_ACQUIRE);
	k->fd[1] = __atomic_load_n(&agent_alive_keep, __ATOMIC_ACQUIRE);
	if (k->fd[0] < 0 || k->fd[1] < 0 || sonde_gone(k->fd[1]))
		return -1;
	k->var[0] = "SONDE_AGENT_FD";
	k->var[1] = "SONDE_AGENT_ALIVE_FD";
	k->flag = "SONDE_AGENT_EXEC=1";
	k->prefix = "SONDE_AGENT_";
	return 0;
}

/* A session this process was launched with (`sonde record -- PROGRAM`)
 * whose sonde is gone (SIGKILLed: the launched runtime has no watcher):
 * nobody reads it any more, so a later attach may end it, as the end of an
 * attach would, and take it back (agent_lock held, the threads held by
 * sonde).  1 when it was ended now. */
static int end_orphaned_launch(void)
{
	struct sonde_session_hdr *S = rt_sess;
	if (agent_state || !S || S->recorder.attached || __atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE) ||
	    proc_alive(S->collector_pid, S->recorder.start_time))
		return 0;
	struct sonde_modhook **mods;
	uint32_t n = rt_registered_modules(&mods);
	rt_patch_live = 1; /* the program runs: sleds change under its threads (patch.c) */
	end_now(mods, (int)n);
	agent_state = 2;
	return 1;
}

/* Sees sonde's end: the only writer of the pipe is sonde. */
static void *watcher(void *arg)
{
	int fd = (int)((uintptr_t)arg & 0xffffffffu);
	uint32_t gen = (uint32_t)((uintptr_t)arg >> 32);
	char buf[64];
	prctl(PR_SET_NAME, "sonde-agent", 0, 0, 0);
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r == 0 || (r < 0 && errno != EINTR))
			break;
	}
	close(fd);
	end_recording(gen);
	return NULL;
}

/* Where sonde's held threads are, from the session file at path (sonde
 * writes them there when it plans functions to patch: instr_abi.h's busy):
 * *n of them, or SONDE_INSTR_MAX_BUSY + 1 when not known whole. */
static void read_busy(const char *path, uint64_t *busy, uint32_t *n)
{
	*n = SONDE_INSTR_MAX_BUSY + 1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	uint64_t off = 0;
	uint32_t nb = 0;
	if (fstat(fd, &st) == 0 &&
	    pread(fd, &off, sizeof off, offsetof(struct sonde_session_hdr, instr_off)) == (ssize_t)sizeof off && off &&
	    sess_fits((uint64_t)st.st_size, off, sizeof(struct sonde_instr), 8) &&
	    pread(fd, &nb, sizeof nb, (off_t)(off + offsetof(struct sonde_instr, nbusy))) == (ssize_t)sizeof nb &&
	    nb <= SONDE_INSTR_MAX_BUSY &&
	    pread(fd, busy, nb * sizeof *busy, (off_t)(off + offsetof(struct sonde_instr, busy))) == (ssize_t)(nb * sizeof *busy))
		*n = nb;
	close(fd);
}

/* What an ended attach left, taken back (agent_lock held; every other
 * thread held by sonde, none inside the runtime, when held): its frames
 * unhooked, threads reset, memory given back (rt_session_retire), the GOT
 * entries back and forgotten, the lock wrappers and the functions patched
 * without a rebuild forgotten.  0 (also when nothing was left); -errno. */
static int retire_earlier(const char *session, long held)
{
	if (agent_state != 2)
		return 0;
	if (!held)
		return -EAGAIN;
	int rc = rt_session_retire();
	if (rc)
		return rc;
	/* every frame is unhooked now: the unwinder's GOT entries can go back
	 * too, and the objects are redirected afresh by the next start */
	if (rt_got_reset() != 0)
		return -EALREADY;
	rt_locks_reset();
	rt_syscalls_reset();
	static uint64_t busy[SONDE_INSTR_MAX_BUSY];
	uint32_t nbusy;
	read_busy(session, busy, &nbusy);
	rt_instr_retire(busy, nbusy);
	agent_state = 0;
	agent_nmods = 0;
	agent_locks = 0;
	return 0;
}

/* Called by sonde before it reads the threads' stacks for a later attach
 * (every other thread held, none inside the runtime): what an earlier
 * attach left is taken back, so that the stacks hold no exit trampoline's
 * address and the calls running under its frames are found.  session: the
 * new session's path (its list of where the threads are).  0; or -errno as
 * sonde_agent_start. */
RT_EXPORT int sonde_agent_retire(const char *session, long held)
{
	int saved = errno, rc = -EBUSY;
	pthread_mutex_lock(&agent_lock);
	if (held)
		end_orphaned_launch();
	if (agent_state != 1 && (agent_state || !rt_sess))
		rc = rt_probe_running() ? -EADDRINUSE : retire_earlier(session, held);
	pthread_mutex_unlock(&agent_lock);
	errno = saved;
	return rc;
}

static int begin(int fd, int afd, int execd);

/* Called by sonde in the running program.  session: a path to open the
 * session memory at; alive: a path of a pipe whose write end only sonde
 * holds; held: sonde holds every other thread stopped, none inside the
 * runtime (attach/agent.c), so that what an earlier session left can be
 * taken back (rt_session_retire).  Returns how many modules record in bits
 * 0-15 and, in a --locks session, how many objects had lock functions
 * redirected in bits 16-30 (>= 0); or -errno: -EBUSY this process records
 * already (launched under sonde, or attached and not ended), -EAGAIN an
 * earlier session's state cannot be taken back now (threads not held, one
 * starting or ending), -ENOENT no module built by sonde-cc (or only by an
 * older one: -ENOEXEC) in a session without --locks, -EINVAL a bad session,
 * -EADDRINUSE a `sonde probe -p` session runs (its probes hold the functions'
 * entries), -EALREADY a probe session holds GOT entries (an earlier session could not
 * be taken back whole). */
RT_EXPORT int sonde_agent_start(const char *session, const char *alive, long held)
{
	int saved = errno, rc;
	pthread_mutex_lock(&agent_lock);
	if (held)
		end_orphaned_launch();
	if (agent_state == 1 || (!agent_state && rt_sess)) {
		rc = -EBUSY;
		goto out;
	}
	/* A probe session's code at the functions' entries: the sleds and the
	 * patches of a recording would not reach the functions it probes (a
	 * probe added during a recording is fine: it relocates what is there). */
	if (rt_probe_running()) {
		rc = -EADDRINUSE;
		goto out;
	}
	rc = retire_earlier(session, held);
	if (rc)
		goto out;
	int afd = open(alive, O_RDONLY | O_CLOEXEC);
	if (afd < 0) {
		rc = -errno;
		goto out;
	}
	int fd = open(session, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		close(afd);
		goto out;
	}
	agent_adopt_pid = getpid();
	rc = begin(fd, afd, 0);
out:
	pthread_mutex_unlock(&agent_lock);
	errno = saved;
	return rc;
}

/* The start, on the session's memory at fd and sonde's pipe at afd (both
 * close-on-exec, taken over: closed, kept or the watcher's); agent_lock
 * held; execd: in an exec'd image's constructor, before the executable's
 * own (its sonde-cc modules register themselves after this).
 * sonde_agent_start's value. */
static int begin(int fd, int afd, int execd)
{
	int rc;
	/* The mode first: a --locks session needs no module. */
	uint32_t mode = 0;
	if (pread(fd, &mode, sizeof mode, offsetof(struct sonde_session_hdr, mode)) != (ssize_t)sizeof mode) {
		rc = -EINVAL;
		goto out_fds;
	}
	int locks = (mode & SONDE_MODE_LOCKS) != 0;
	/* Functions to patch without a rebuild (sonde planned them)? */
	uint64_t instr_off = 0;
	if (pread(fd, &instr_off, sizeof instr_off, offsetof(struct sonde_session_hdr, instr_off)) != (ssize_t)sizeof instr_off)
		instr_off = 0;
	static struct sonde_modhook *found[AGENT_MAX_MODS];
	struct note_walk w = { found, 0, AGENT_MAX_MODS, 0 };
	dl_iterate_phdr(note_cb, &w);
	if (!w.n && !locks && !instr_off && !execd) {
		rc = w.old ? -ENOEXEC : -ENOENT;
		goto out_fds;
	}
	rc = rt_init_late(fd);
	if (rc)
		goto out_fds;
	/* the mapping stays; the descriptors are kept for an exec (exec_follow.c) */
	agent_sess_keep = fd;
	agent_alive_keep = fcntl(afd, F_DUPFD_CLOEXEC, 0);
	/* Modules dlopen'ed from now on find the runtime (their constructor
	 * looks for it with dlsym(RTLD_DEFAULT)): make it global.  Symbols that
	 * the program resolved before keep their binding. */
	Dl_info di;
	if ((w.n || instr_off) && dladdr((void *)sonde_agent_start, &di) && di.dli_fname)
		dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
	/* a new attach: the watcher of an earlier one, if it still runs, ends nothing */
	uint32_t gen = __atomic_add_fetch(&agent_gen, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&agent_state, 1, __ATOMIC_RELEASE);
	/* Through the GOT of every object (got.c), before any sled is on: the
	 * unwinder's entry points if a module records, the lock functions with
	 * --locks. */
	const struct rt_got_sym *syms;
	int nsyms, nobjs = 0;
	if (w.n || instr_off || execd) { /* (an exec'd image's modules register later) */
		nsyms = rt_unwind_wrappers(&syms);
		rt_got_add(RT_GOT_UNWIND, syms, nsyms);
	}
	if (locks) {
		nsyms = rt_locks_wrappers(&syms);
		rt_got_add(RT_GOT_LOCKS, syms, nsyms);
		agent_locks = 1;
	}
	if (mode & SONDE_MODE_SYSCALLS) {
		nsyms = rt_syscall_wrappers(&syms);
		rt_got_add(RT_GOT_SYSCALLS, syms, nsyms);
	}
	nsyms = rt_signal_wrappers(&syms); /* handlers' calls recorded, also inside a hook */
	rt_got_add(RT_GOT_SIGNALS, syms, nsyms);
	nsyms = rt_exec_wrappers(&syms); /* an exec of the tree starts the agent in its new image */
	rt_got_add(RT_GOT_EXEC, syms, nsyms);
	rt_got_redirect();
	rt_signals_adopt(); /* the handlers installed before, after the redirection */
	if (locks)
		nobjs = rt_got_objects(RT_GOT_LOCKS);
	rt_patch_live = 1;
	for (int i = 0; i < w.n; i++)
		if (sonde_rt_register_module(found[i]) == 0)
			agent_mods[agent_nmods++] = found[i];
	/* and the functions sonde planned (instr.c), written while the program runs */
	int before = atomic_load(&rt_sess->nmodules);
	rt_instr_start();
	int patched = (int)atomic_load(&rt_sess->nmodules) - before;
	int prc = rt_thread_start(watcher, (void *)((uintptr_t)(uint32_t)afd | (uintptr_t)gen << 32), 64 * 1024);
	rc = (agent_nmods + patched < 0xffff ? agent_nmods + patched : 0xffff) | (nobjs < 0x7fff ? nobjs : 0x7fff) << 16;
	if (prc) { /* without a watcher, sonde's death could not be seen */
		close(afd);
		end_recording(gen);
		return -prc;
	}
	return rc;
out_fds:
	close(fd);
	close(afd);
	return rc;
}

/* An image exec'd in an attached recording (exec_follow.c): the runtime was
 * preloaded with the session's two descriptors in the environment; the agent
 * starts here, before the program's own constructors, and asks sonde to plan
 * the executable (instr.c).  The environment loses sonde's part first, so the
 * program sees the one it was given. */
static int env_fd(const char *name)
{
	const char *v = getenv(name);
	char *end;
	long n = v ? strtol(v, &end, 10) : -1;
	return v && *v && !*end && n >= 3 && n < 65536 ? (int)n : -1;
}

__attribute__((constructor(103))) static void agent_exec_start(void)
{
	if (!getenv("SONDE_AGENT_EXEC"))
		return;
	int fd = env_fd("SONDE_AGENT_FD"), afd = env_fd("SONDE_AGENT_ALIVE_FD");
	unsetenv("SONDE_AGENT_FD");
	unsetenv("SONDE_AGENT_ALIVE_FD");
	unsetenv("SONDE_AGENT_EXEC");
	rt_strip_preload();
	struct stat s1, s2;
	if (fd < 0 || afd < 0 || fstat(fd, &s1) || fstat(afd, &s2) || !S_ISREG(s1.st_mode) || !S_ISFIFO(s2.st_mode))
		return; /* not what an exec of the recording passes on: nothing is ours */
	if (sonde_gone(afd)) { /* the recording ended meanwhile */
		close(fd);
		close(afd);
		return;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	fcntl(afd, F_SETFD, FD_CLOEXEC);
	int saved = errno;
	pthread_mutex_lock(&agent_lock);
	/* A failure leaves the image unrecorded and says nothing on its stderr
	 * (nothing to record, -ENOENT, is the common one: --no-patch, and an
	 * exec'd program not built with sonde-cc); a session of another version
	 * is logged by map_session. */
	if (agent_state || rt_sess) {
		close(fd);
		close(afd);
	} else
		(void)begin(fd, afd, 1);
	pthread_mutex_unlock(&agent_lock);
	errno = saved;
}

/* Called by sonde at the end of the recording: sleds back to nops.  0. */
RT_EXPORT int sonde_agent_stop(void)
{
	int saved = errno;
	end_recording(__atomic_load_n(&agent_gen, __ATOMIC_ACQUIRE));
	errno = saved;
	return 0;
}

/* agent_be.c — sonde's side of the agent probe backend (agent_be.h).
 *
 * The shared area is a memfd of ours.  A launched program gets it, and the
 * read end of a pipe, through its environment with LD_PRELOAD=libsonde-rt.so
 * (src/rt/probes.c's constructor maps it and waits); a running process gets
 * libsonde-rt.so through its own dlopen (src/attach/inject.c) and then a
 * call of sonde_probe_agent_start with /proc/<sonde>/fd/ paths.  Requests go
 * through the area's mailbox, announced by a byte on the pipe; the agent's
 * answer is awaited on a futex, bounded.  When sonde dies, the pipe's end of
 * file makes the agent put every site back by itself. */
#include "probe/agent/agent_be.h"

#include "arch/arch.h"
#include "arch/tramp.h"
#include "attach/agent.h"
#include "attach/fd_share.h"
#include "attach/inject.h"
#include "common/clock.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REQUEST_TIMEOUT_MS 10000
#define START_TIMEOUT_MS   10000
#define MAX_FN_BYTES       (1u << 20)

extern char **environ;

static void futex_wait_ms(uint32_t *w, uint32_t val, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	syscall(SYS_futex, w, FUTEX_WAIT, val, &ts, NULL, 0);
}

static int area_new(struct agent_be *b, char *err, size_t n)
{
	b->area_size = pa_total_size(PA_MAX_SITES, b->record, b->stacks);
	b->area_fd = memfd_create("sonde-probes", MFD_CLOEXEC);
	if (b->area_fd < 0 || ftruncate(b->area_fd, (off_t)b->area_size)) {
		snprintf(err, n, "cannot create the probe memory (%s)", strerror(errno));
		return -1;
	}
	void *m = mmap(NULL, b->area_size, PROT_READ | PROT_WRITE, MAP_SHARED, b->area_fd, 0);
	if (m == MAP_FAILED) {
		snprintf(err, n, "cannot map the probe memory (%s)", strerror(errno));
		return -1;
	}
	b->pa = m;
	b->pa->magic = PA_MAGIC;
	b->pa->version = PA_VERSION;
	b->pa->nsites = PA_MAX_SITES;
	b->pa->size = (uint32_t)b->area_size;
	if (b->record) { /* the rings (probe_area.h); the agent checks where they are */
		b->pa->rec_off = pa_area_size(PA_MAX_SITES);
		b->pa->rec_on = 1;
	}
	if (b->stacks) {
		b->pa->stk_off = pa_area_size(PA_MAX_SITES) + (b->record ? pa_rec_size() : 0);
		b->pa->stk_on = 1;
	}
	return 0;
}

/* The agent's loops over the sites stop at pa->nused (probe_area.h): raised,
 * never lowered, before a new record's first request. */
static void sites_raise(struct agent_be *b)
{
	if (b->nused > b->pa->nused)
		__atomic_store_n(&b->pa->nused, b->nused, __ATOMIC_RELEASE);
}

static void init(struct agent_be *b)
{
	int record = b->record, stacks = b->stacks, pipe_ignored = b->pipe_ignored; /* the caller's settings */
	int stack_walk = b->stack_walk;
	memset(b, 0, sizeof *b);
	b->record = record;
	b->stacks = stacks;
	b->stack_walk = stack_walk;
	b->pipe_ignored = pipe_ignored;
	b->memfd = b->area_fd = b->alive_w = -1;
}

/* The agent has started (ready), or the target ended / time ran out. */
static int wait_ready(struct agent_be *b, char *err, size_t n)
{
	uint64_t end = clock_mono_ms() + START_TIMEOUT_MS;
	while (!__atomic_load_n(&b->pa->ready, __ATOMIC_ACQUIRE)) {
		if (agent_be_gone(b)) {
			snprintf(err, n, "the program ended before the probe agent started in it");
			return -1;
		}
		if (clock_mono_ms() > end) {
			snprintf(err, n, "the probe agent did not start in process %d within %d s", (int)b->pid,
			         START_TIMEOUT_MS / 1000);
			return -1;
		}
		futex_wait_ms(&b->pa->ready, 0, 20);
	}
	return 0;
}

static int open_mem(struct agent_be *b, char *err, size_t n)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/mem", (int)b->pid);
	if ((b->memfd = open(p, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, n, "cannot read the memory of process %d (%s)", (int)b->pid, strerror(errno));
		return -1;
	}
	return 0;
}

/* The program's path as execvp would find it; "" if not found. */
static void find_program(const char *name, char *out, size_t n)
{
	out[0] = 0;
	if (strchr(name, '/')) {
		snprintf(out, n, "%s", name);
		return;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t l = strcspn(path, ":");
		snprintf(out, n, "%.*s/%s", (int)l, path, name);
		if (access(out, X_OK) == 0)
			return;
		path += l + (path[l] == ':');
	}
	out[0] = 0;
}

/* 1 if the ELF file asks for a dynamic loader (PT_INTERP), 0 if not, -1 unreadable. */
static int has_interp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	Elf64_Ehdr eh;
	int rc = -1;
	if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 256) {
		rc = 0;
		for (int i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) != (ssize_t)sizeof ph) {
				rc = -1;
				break;
			}
			if (ph.p_type == PT_INTERP)
				rc = 1;
		}
	}
	close(fd);
	return rc;
}

int agent_be_launch(struct agent_be *b, char **argv, const char *rt_path, char *err, size_t n)
{
	init(b);
	b->launched = 1;
	char prog[PATH_MAX];
	find_program(argv[0], prog, sizeof prog);
	if (!prog[0] || access(prog, X_OK)) {
		snprintf(err, n, "cannot run %s (%s)", argv[0], prog[0] ? strerror(errno) : "not found in PATH");
		return -1;
	}
	int dyn = has_interp(prog);
	if (dyn == 0) {
		snprintf(err, n, "%s is statically linked: the probe agent cannot be loaded into it (use --engine=ptrace)",
		         prog);
		return -1;
	}
	char rt[PATH_MAX];
	if (!realpath(rt_path, rt)) {
		snprintf(err, n, "cannot find the runtime %s (%s)", rt_path, strerror(errno));
		return -1;
	}
	int pfd[2];
	if (area_new(b, err, n) || pipe2(pfd, O_CLOEXEC)) {
		if (!err[0])
			snprintf(err, n, "cannot create a pipe (%s)", strerror(errno));
		return -1;
	}
	/* The environment of the child, made here (no allocation after fork). */
	const char *pre = getenv("LD_PRELOAD");
	size_t pl = strlen(rt) + (pre ? strlen(pre) + 1 : 0) + 16;
	char *preload = malloc(pl);
	if (!preload) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	snprintf(preload, pl, "LD_PRELOAD=%s%s%s", rt, pre ? ":" : "", pre ? pre : "");
	pid_t pid = fork();
	if (pid < 0) {
		free(preload);
		snprintf(err, n, "cannot fork (%s)", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int a = dup(b->area_fd), p = dup(pfd[0]); /* without close-on-exec */
		char av[32], pv[32];
		snprintf(av, sizeof av, "%d", a);
		snprintf(pv, sizeof pv, "%d", p);
		setenv("SONDE_PROBE_FD", av, 1);
		setenv("SONDE_PROBE_ALIVE_FD", pv, 1);
		putenv(preload);
		signal(SIGPIPE, b->pipe_ignored ? SIG_IGN : SIG_DFL); /* as sonde got it, not as it set it */
		execv(prog, argv);
		fprintf(stderr, "sonde: error: cannot run %s (%s)\n", prog, strerror(errno));
		_exit(127);
	}
	free(preload);
	close(pfd[0]);
	b->pid = pid;
	b->alive_w = pfd[1];
	b->threads_stopped = 1; /* until agent_be_go, only the main thread exists, waiting */
	if (wait_ready(b, err, n))
		return -1;
	return open_mem(b, err, n);
}

void agent_be_go(struct agent_be *b)
{
	if (!b->launched)
		return;
	b->threads_stopped = 0;
	__atomic_store_n(&b->pa->go, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &b->pa->go, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

int agent_be_attach(struct agent_be *b, pid_t pid, const char *rt_path, char *err, size_t n)
{
	init(b);
	b->pid = pid;
	if (!agent_target_alive(pid)) {
		snprintf(err, n, "cannot attach to process %d (no such process)", (int)pid);
		return -1;
	}
	char rt[PATH_MAX];
	if (!realpath(rt_path, rt)) {
		snprintf(err, n, "cannot find the runtime %s (%s)", rt_path, strerror(errno));
		return -1;
	}
	if (agent_runtime_other(pid, rt, err, n))
		return -1;
	int pfd[2];
	if (area_new(b, err, n))
		return -1;
	if (pipe2(pfd, O_CLOEXEC)) {
		snprintf(err, n, "cannot create a pipe (%s)", strerror(errno));
		return -1;
	}
	/* dlopen, the start's address in the maps and its call on one stop of
	 * the thread: between two stops the program could exec, and the start
	 * found in the old image would be called in the new one. */
	uint64_t handle, ret = 0;
	struct inject *in = inject_dlopen_attach(pid, 0, rt, &handle, err, n);
	int rc = in ? 0 : -1;
	uint64_t start = rc ? 0 : agent_target_sym(pid, rt, "sonde_probe_agent_start");
	if (!rc && !start) {
		snprintf(err, n, "the runtime loaded into process %d has no probe agent (another sonde version?)",
		         (int)pid);
		rc = -1;
	}
	/* The program opens the area and the pipe's read end through /proc:
	 * also as another user (attach/fd_share.c). */
	struct fd_share sh = { 0 };
	if (!rc)
		rc = fd_share_begin(&sh, pid, (const int[]){ b->area_fd, pfd[0] }, 2, err, n);
	if (!rc) {
		char area[64], alive[64];
		snprintf(area, sizeof area, "/proc/%d/fd/%d", (int)sh.pid, b->area_fd);
		snprintf(alive, sizeof alive, "/proc/%d/fd/%d", (int)sh.pid, pfd[0]);
		uint64_t a_at = 0, p_at = 0;
		rc = inject_push(in, area, strlen(area) + 1, &a_at, err, n);
		if (!rc)
			rc = inject_push(in, alive, strlen(alive) + 1, &p_at, err, n);
		if (!rc) {
			uint64_t args[6] = { a_at, p_at };
			rc = inject_call_at(in, start, args, &ret, START_TIMEOUT_MS, err, n);
		}
	}
	fd_share_end(&sh);
	if (in && !rc && (int32_t)(uint32_t)ret >= 0) /* started: its int3s must not meet a mask blocking SIGTRAP */
		inject_unblock_at_detach(in, SIGTRAP);
	if (in)
		inject_detach(in);
	close(pfd[0]);
	if (rc) {
		close(pfd[1]);
		return -1;
	}
	int r = (int)(int32_t)(uint32_t)ret;
	if (r < 0) {
		close(pfd[1]);
		snprintf(err, n, "the probe agent could not start in process %d (%s)", (int)pid,
		         r == -EBUSY ? "another sonde probes it now" : strerror(-r));
		return -1;
	}
	b->alive_w = pfd[1];
	if (wait_ready(b, err, n))
		return -1;
	return open_mem(b, err, n);
}

/* --- holding the threads ------------------------------------------------- */

static int held(const struct agent_be *b, pid_t tid)
{
	for (int i = 0; i < b->nstopped; i++)
		if (b->stopped[i] == tid)
			return 1;
	return 0;
}

/* Every thread is interrupted first and waited for after, so that a hold
 * costs one scheduling delay rather than one per thread (8 busy threads on
 * a loaded 2-core machine took a third of a second one by one).  Threads
 * that start meanwhile are caught by the next pass. */
int agent_be_hold(struct agent_be *b, char *err, size_t n)
{
	if (b->threads_stopped)
		return 0;
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/task", (int)b->pid);
	pid_t agent_tid = (pid_t)b->pa->agent_tid;
	for (int pass = 0, fresh = 1; fresh && pass < 50; pass++) {
		fresh = 0;
		DIR *d = opendir(dir);
		if (!d) {
			snprintf(err, n, "cannot list the threads of process %d (%s)", (int)b->pid, strerror(errno));
			agent_be_let_go(b);
			return -1;
		}
		int first = b->nstopped;
		struct dirent *de;
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			if (tid <= 0 || tid == agent_tid || held(b, tid))
				continue;
			pid_t *v = realloc(b->stopped, (size_t)(b->nstopped + 1) * sizeof *v);
			if (!v)
				continue;
			b->stopped = v;
			if (ptrace(PTRACE_SEIZE, tid, 0, 0))
				continue; /* it ended */
			if (ptrace(PTRACE_INTERRUPT, tid, 0, 0)) {
				ptrace(PTRACE_DETACH, tid, 0, 0);
				continue;
			}
			b->stopped[b->nstopped++] = tid;
		}
		closedir(d);
		for (int i = first; i < b->nstopped;) {
			int gone = 0;
			if (inject_wait_stop(b->pid, b->stopped[i], &gone, err, n)) {
				if (!gone)
					ptrace(PTRACE_DETACH, b->stopped[i], 0, 0);
				b->stopped[i] = b->stopped[--b->nstopped];
				continue;
			}
			fresh = 1;
			i++;
		}
	}
	err[0] = 0;
	b->threads_stopped = 1;
	return 0;
}

void agent_be_let_go(struct agent_be *b)
{
	for (int i = 0; i < b->nstopped; i++)
		ptrace(PTRACE_DETACH, b->stopped[i], 0, 0);
	free(b->stopped);
	b->stopped = NULL;
	b->nstopped = 0;
	b->may_hold = 0;
	if (!b->launched || b->pa->go)
		b->threads_stopped = 0;
}

/* Why a jump over [addr, addr+len) is unsafe now with the threads held, or
 * NULL.  A thread must not resume strictly inside those bytes: stopped
 * there; or later, from one of our slots whose displaced code goes on
 * inside them (an int3 site's slot comes back after one instruction) —
 * running it, in the agent's hit function called from it, or between the
 * SIGTRAP handler and its sigreturn (which may send it to any slot of its
 * address, probe_area.h). */
static const char *thread_unsafe(const struct agent_be *b, uint64_t addr, size_t len)
{
	int nr = 0, jmps = 0;
	for (int i = 0; i < b->nslots; i++)
		if (b->slots[i].back > addr && b->slots[i].back < addr + len) {
			nr++;
			jmps |= b->slots[i].jmp;
		}
	if (b->slots_lost)
		return "out of memory for the list of slots";
	const struct pa_hdr *h = b->pa;
	if (nr && __atomic_load_n(&h->trapping_full, __ATOMIC_ACQUIRE))
		return "a thread was in the agent's SIGTRAP handler, bound for a slot that returns inside the bytes a "
		       "jump would cover";
	for (int t = 0; t < b->nstopped; t++) {
		arch_regs r;
		if (ptrace(PTRACE_GETREGS, b->stopped[t], 0, &r))
			continue; /* it ended */
		uint64_t pc = arch_pc(&r);
		if (pc > addr && pc < addr + len)
			return "a thread was stopped inside the bytes a jump would cover";
		if (!nr)
			continue;
		for (uint32_t k = 0; k < PA_TRAPPING; k++)
			if (__atomic_load_n(&h->trapping[k], __ATOMIC_ACQUIRE) == (uint32_t)b->stopped[t])
				return "a thread was in the agent's SIGTRAP handler, bound for a slot that returns inside the "
				       "bytes a jump would cover";
		if (h->restorer && pc - h->restorer < 16)
			return "a thread was in the agent's SIGTRAP handler, bound for a slot that returns inside the "
			       "bytes a jump would cover";
		for (int i = 0; i < b->nslots; i++) {
			const struct agent_slot *sl = &b->slots[i];
			if (sl->back > addr && sl->back < addr + len && pc >= sl->lo && pc < sl->hi)
				return "a thread was in a slot of an earlier probe that returns inside the bytes a jump would cover";
		}
		if (!jmps)
			continue;
		/* The hit function called from such a slot: its return address
		 * is on the stack, within the hit's few frames. */
		uint64_t stk[512];
		ssize_t got = pread(b->memfd, stk, sizeof stk, (off_t)arch_sp(&r)); /* short at the stack's top */
		if (got < (ssize_t)sizeof stk[0])
			return "a thread's stack could not be read";
		for (size_t w = 0; w < (size_t)got / sizeof stk[0]; w++)
			for (int i = 0; i < b->nslots; i++) {
				const struct agent_slot *sl = &b->slots[i];
				if (sl->jmp && sl->back > addr && sl->back < addr + len && stk[w] >= sl->lo && stk[w] < sl->hi)
					return "a thread was in a slot of an earlier probe that returns inside the bytes a jump "
					       "would cover";
			}
	}
	return NULL;
}

/* A slot whose code is in (or may be: PA_OP_PLACE asked): kept for thread_unsafe, as
 * long as the session (the agent never reuses a slot). */
static void slot_built(struct agent_be *b, uint64_t lo, const struct tramp *t, uint64_t site)
{
	struct agent_slot *v = realloc(b->slots, (size_t)(b->nslots + 1) * sizeof *v);
	if (!v) {
		b->slots_lost = 1; /* thread_unsafe refuses every jump over several instructions from now on */
		return;
	}
	b->slots = v;
	v[b->nslots++] = (struct agent_slot){ .lo = lo, .hi = lo + t->len, .back = t->back_off ? site + t->back_off : 0,
	                                      .jmp = t->jmp };
}

/* --- requests -------------------------------------------------------------- */

/* Whether the image sonde opened the memory of is gone: the process exec'd
 * (its old mm reads nothing).  The agent went with it, unless the new image
 * joins (exec follow, probes.c), which takes the loader's start-up. */
static int image_gone(struct agent_be *b)
{
	uint8_t c;
	return b->memfd >= 0 && b->pa && pread(b->memfd, &c, 1, (off_t)b->pa->hit_fn) != 1;
}

/* A wait for the agent: its deadline, cut to EXEC_WAIT_MS once the image
 * the agent was in is gone and no new one has joined (b->pa->execs). */
#define EXEC_WAIT_MS 1000
static uint64_t agent_deadline(struct agent_be *b, uint64_t end, uint32_t execs0)
{
	if (!image_gone(b) || __atomic_load_n(&b->pa->execs, __ATOMIC_ACQUIRE) != execs0)
		return end;
	uint64_t cut = clock_mono_ms() + EXEC_WAIT_MS;
	return cut < end ? cut : end;
}

static int request(struct agent_be *b, uint32_t op, uint32_t site, char *err, size_t n)
{
	struct pa_hdr *h = b->pa;
	h->op = op;
	h->site = site;
	h->err = 0;
	uint32_t want = __atomic_load_n(&h->req, __ATOMIC_RELAXED) + 1;
	__atomic_store_n(&h->req, want, __ATOMIC_RELEASE);
	if (write(b->alive_w, "r", 1) != 1) {
		snprintf(err, n, "the probe agent in process %d is gone", (int)b->pid);
		return -1;
	}
	uint64_t end = clock_mono_ms() + REQUEST_TIMEOUT_MS;
	uint32_t execs0 = __atomic_load_n(&h->execs, __ATOMIC_ACQUIRE);
	int cut = 0;
	for (;;) {
		uint32_t d = __atomic_load_n(&h->done, __ATOMIC_ACQUIRE);
		if (d == want)
			break;
		if (agent_be_gone(b)) {
			snprintf(err, n, "process %d ended", (int)b->pid);
			return -1;
		}
		if (!cut && (end = agent_deadline(b, end, execs0)) < clock_mono_ms() + REQUEST_TIMEOUT_MS)
			cut = 1;
		if (clock_mono_ms() > end) {
			snprintf(err, n, cut ? "process %d exec'd: no probe agent answers in its new image"
			                     : "the probe agent in process %d does not answer", (int)b->pid);
			return -1;
		}
		futex_wait_ms(&h->done, d, 20);
	}
	if (h->err) {
		char msg[sizeof h->msg];
		memcpy(msg, (const char *)h->msg, sizeof msg);
		msg[sizeof msg - 1] = 0;
		int e = h->err; /* the target's memory: an errno only if in range */
		snprintf(err, n, "%s", msg[0] ? msg : e < 0 && e >= -4095 ? strerror(-e) : "the probe agent failed");
		return -1;
	}
	return 0;
}

int agent_be_read_code(struct agent_be *b, uint64_t addr, void *buf, size_t n)
{
	if (pread(b->memfd, buf, n, (off_t)addr) != (ssize_t)n)
		return -1;
	for (uint32_t i = 0; i < b->nused; i++) {
		const struct pa_site *s = &b->pa->sites[i];
		if (s->state != PA_ACTIVE && s->state != PA_PREPARED)
			continue;
		size_t len = s->orig_len <= PA_ORIG_MAX ? s->orig_len : PA_ORIG_MAX;
		for (size_t k = 0; k < len; k++)
			if (s->addr + k >= addr && s->addr + k < addr + n)
				((uint8_t *)buf)[s->addr + k - addr] = s->orig[k];
	}
	return 0;
}

/* Another site of ours strictly inside (addr, addr+len). */
static int site_inside(const struct agent_be *b, uint64_t addr, size_t len)
{
	for (uint32_t i = 0; i < b->nused; i++) {
		const struct pa_site *s = &b->pa->sites[i];
		if ((s->state == PA_ACTIVE || s->state == PA_PREPARED) && s->addr > addr && s->addr < addr + len)
			return 1;
	}
	return 0;
}

/* Builds site idx's slot code (a jump where allowed) and places it. */
static int build_place(struct agent_be *b, uint32_t idx, int allow_jmp, const uint8_t *fnb, uint64_t fn,
                       uint64_t fn_size, char *why_int3, size_t wn, char *err, size_t n)
{
	struct pa_site *s = &b->pa->sites[idx];
	uint64_t addr = s->addr;
	uint8_t code[64];
	size_t got = sizeof code;
	while (got > 0 && agent_be_read_code(b, addr, code, got))
		got--;
	if (!got) {
		snprintf(err, n, "cannot read the code at 0x%llx", (unsigned long long)addr);
		return -1;
	}
	int rc = request(b, PA_OP_SLOT, idx, err, n);
	struct tramp t;
	if (rc)
		return -1;
	uint64_t post_fn = s->post ? agent_be_plugins(b)->post_fn : 0;
	if (s->post && !post_fn) {
		snprintf(err, n, "the agent has no post call (plugin not loaded)");
		return -1;
	}
	rc = post_fn ? tramp_build_post(code, got, addr, fnb, fnb ? fn_size : 0, fn, s->slot_addr, b->pa->hit_fn, post_fn,
	                                idx, allow_jmp, &t, err, n)
	             : tramp_build(code, got, addr, fnb, fnb ? fn_size : 0, fn, s->slot_addr, b->pa->hit_fn, idx,
	                           allow_jmp, &t, err, n);
	const char *why = NULL;
	if (!rc && t.jmp && !b->threads_stopped && t.n_insn > 1 && b->may_hold && agent_be_hold(b, err, n))
		return -1;
	if (!rc && t.jmp && !b->threads_stopped && t.n_insn > 1)
		why = "the jump would cover several instructions while threads run";
	else if (!rc && t.jmp && t.n_insn > 1 && (why = thread_unsafe(b, addr, t.orig_len)))
		;
	else if (!rc && t.jmp && site_inside(b, addr, t.orig_len))
		why = "another probe's site is inside the bytes a jump would cover";
	if (why)
		rc = post_fn ? tramp_build_post(code, got, addr, NULL, 0, 0, s->slot_addr, b->pa->hit_fn, post_fn, idx, 0,
		                                &t, err, n)
		             : tramp_build(code, got, addr, NULL, 0, 0, s->slot_addr, b->pa->hit_fn, idx, 0, &t, err, n);
	if (rc)
		return -1;
	s->mode = t.jmp ? PA_MODE_JMP : PA_MODE_INT3;
	s->orig_len = (uint32_t)t.orig_len;
	memcpy(s->orig, code, t.orig_len);
	memcpy(s->code, t.code, t.len);
	s->code_len = (uint32_t)t.len;
	s->displaced_off = (uint32_t)t.displaced_off;
	if (post_fn)
		s->post = (uint32_t)t.post_len;
	slot_built(b, s->slot_addr, &t, addr); /* before: a failed placement may have copied its code */
	if (request(b, PA_OP_PLACE, idx, err, n))
		return -1;
	if (!t.jmp && why_int3 && wn)
		snprintf(why_int3, wn, "%s", why ? why : t.why_int3);
	return 0;
}

/* A var or time probe at the address of site host: a record of its own,
 * never placed, that the host's hits run (the end of host's var.next chain). */
static int var_chain(struct agent_be *b, uint32_t host, uint32_t kind, char *why_int3, size_t wn, char *err,
                     size_t n)
{
	if (b->nused >= b->pa->nsites ||
	    (kind == PA_KIND_VAR ? !b->next_var : kind == PA_KIND_TIME ? !b->next_time :
	     kind == PA_KIND_STACK ? !b->next_stack : !b->next_plugin1)) {
		snprintf(err, n, "too many probe sites (at most %d)", PA_MAX_SITES);
		return -1;
	}
	uint32_t idx = b->nused++;
	struct pa_site *s = &b->pa->sites[idx], *h = &b->pa->sites[host];
	memset(s, 0, sizeof *s);
	sites_raise(b);
	s->addr = h->addr;
	s->kind = kind;
	s->mode = h->mode;
	s->rec = b->record ? PA_REC_ON : 0;
	if (kind == PA_KIND_VAR)
		s->var = *b->next_var;
	else if (kind == PA_KIND_TIME)
		s->time = *b->next_time;
	else if (kind == PA_KIND_STACK) {
		s->stack_bytes = b->next_stack;
		s->stack_walk = b->stack_walk != 0;
	}
	else
		s->plugin1 = b->next_plugin1;
	s->var.next = 0;
	uint32_t last = host;
	for (int guard = 0; b->pa->sites[last].var.next && guard < PA_MAX_SITES; guard++)
		last = b->pa->sites[last].var.next - 1;
	__atomic_store_n(&b->pa->sites[last].var.next, idx + 1, __ATOMIC_RELEASE);
	/* The host site stays while the record's probe is in (agent_be_unref). */
	b->host1[idx] = (uint16_t)(host + 1);
	b->refs[idx] = 1;
	b->refs[host]++;
	if (why_int3 && wn && h->mode == PA_MODE_INT3)
		snprintf(why_int3, wn, "shares an int3 site");
	return (int)idx;
}

int agent_be_place(struct agent_be *b, uint64_t addr, uint32_t kind, uint64_t fn, uint64_t fn_size,
                   char *why_int3, size_t wn, char *err, size_t n)
{
	if (why_int3 && wn)
		why_int3[0] = 0;
	for (uint32_t i = 0; i < b->nused; i++) {
		struct pa_site *s = &b->pa->sites[i];
		if (s->addr == addr && s->state == PA_ACTIVE) {
			b->hits_base = 0; /* a chained record starts at 0 */
			if (kind == PA_KIND_PLUGIN && b->next_post) {
				snprintf(err, n, "another probe is at 0x%llx: a plugin with a post handler needs a site of "
				         "its own on the agent (--engine=ptrace runs it)", (unsigned long long)addr);
				return -1;
			}
			if (kind == PA_KIND_VAR || kind == PA_KIND_TIME || kind == PA_KIND_PLUGIN || kind == PA_KIND_STACK)
				return var_chain(b, i, kind, why_int3, wn, err, n);
			b->hits_base = __atomic_load_n(&s->hits, __ATOMIC_RELAXED);
			if (kind == PA_KIND_CALL)
				__atomic_store_n(&s->kind, PA_KIND_CALL, __ATOMIC_RELEASE);
			if (b->record)
				__atomic_store_n(&s->rec, PA_REC_ON | PA_REC_SITE, __ATOMIC_RELEASE);
			if (why_int3 && wn && s->mode == PA_MODE_INT3)
				snprintf(why_int3, wn, "shares an int3 site");
			b->refs[i]++;
			return (int)i;
		}
	}
	if (b->nused >= b->pa->nsites) {
		snprintf(err, n, "too many probe sites (at most %d)", PA_MAX_SITES);
		return -1;
	}
	/* A jump of ours over addr: that site becomes an int3 first (its
	 * displaced bytes would run addr's instruction away from here). */
	for (uint32_t i = 0; i < b->nused; i++) {
		struct pa_site *s = &b->pa->sites[i];
		if (s->state == PA_ACTIVE && s->mode == PA_MODE_JMP && addr > s->addr && addr < s->addr + s->orig_len) {
			if (request(b, PA_OP_REMOVE, i, err, n))
				return -1;
			if (build_place(b, i, 0, NULL, 0, 0, NULL, 0, err, n))
				return -1;
		}
	}
	uint8_t *fnb = NULL;
	if (fn && fn_size && fn_size <= MAX_FN_BYTES && (fnb = malloc(fn_size)) &&
	    agent_be_read_code(b, fn, fnb, fn_size)) {
		free(fnb);
		fnb = NULL;
	}
	/* A record of a removed site at addr is taken again (its counters go
	 * on: probes count from their own start, agent_kinds.c); else a new one. */
	uint32_t idx = b->nused;
	for (uint32_t i = 0; i < b->nused; i++)
		if (b->pa->sites[i].addr == addr && b->pa->sites[i].state == PA_REMOVED && !b->refs[i]) {
			idx = i;
			break;
		}
	struct pa_site *s = &b->pa->sites[idx];
	if (idx == b->nused) {
		memset(s, 0, sizeof *s);
		b->nused++;
		sites_raise(b);
	}
	s->addr = addr;
	s->kind = kind == PA_KIND_TIME || kind == PA_KIND_STACK ? PA_KIND_COUNT : kind;
	/* A record taken again does only what this probe asks. */
	s->off = 0;
	s->var.nprog = 0;
	s->var.next = 0;
	memset(&s->time, 0, sizeof s->time);
	s->plugin1 = kind == PA_KIND_PLUGIN ? b->next_plugin1 : 0;
	s->post = kind == PA_KIND_PLUGIN && b->next_post;
	s->stack_bytes = kind == PA_KIND_STACK ? b->next_stack : 0;
	s->stack_walk = kind == PA_KIND_STACK && b->stack_walk;
	if (kind == PA_KIND_VAR && b->next_var)
		s->var = *b->next_var;
	if (kind == PA_KIND_TIME && b->next_time)
		s->time = *b->next_time;
	/* --record: the site's own hits are events too for func, line, branch and plugin probes */
	int rec_site = kind == PA_KIND_COUNT || kind == PA_KIND_CALL || kind == PA_KIND_PLUGIN || kind == PA_KIND_STACK;
	s->rec = !b->record ? 0 : rec_site ? PA_REC_ON | PA_REC_SITE : PA_REC_ON;
	b->hits_base = s->hits; /* not live yet: every hit from now on is the new probe's */
	int rc = build_place(b, idx, 1, fnb, fn, fn_size, why_int3, wn, err, n);
	free(fnb);
	if (rc) {
		if (s->state != PA_REMOVED) {
			s->state = PA_FREE;
			s->addr = 0;
		}
		if (idx + 1 == b->nused && s->state == PA_FREE)
			b->nused--;
		return -1;
	}
	b->refs[idx] = 1;
	return (int)idx;
}

struct pa_plugins *agent_be_plugins(struct agent_be *b)
{
	return (struct pa_plugins *)((char *)b->pa + pa_plugins_off(b->pa->nsites));
}

int agent_be_plugin_load(struct agent_be *b, char *err, size_t n)
{
	return request(b, PA_OP_PLUGIN, 0, err, n);
}

int agent_be_unref(struct agent_be *b, int idx, char *err, size_t n)
{
	if (idx < 0 || (uint32_t)idx >= b->nused || !b->refs[idx])
		return 0;
	if (--b->refs[idx])
		return 0;
	uint32_t h1 = b->host1[idx];
	if (h1 && h1 <= b->nused) {
		/* A chained record: out of its host's chain (a thread walking it
		 * goes on through the record's own next, which stays), then the
		 * host loses a user. */
		uint32_t cur = h1 - 1;
		for (int guard = 0; b->pa->sites[cur].var.next && guard < PA_MAX_SITES; guard++) {
			uint32_t nx = b->pa->sites[cur].var.next;
			if (nx == (uint32_t)idx + 1) {
				__atomic_store_n(&b->pa->sites[cur].var.next, b->pa->sites[idx].var.next, __ATOMIC_RELEASE);
				break;
			}
			cur = nx - 1;
		}
		b->host1[idx] = 0;
		idx = (int)(h1 - 1);
		if (!b->refs[idx] || --b->refs[idx])
			return 0;
	}
	if (agent_be_gone(b))
		return 0;
	return request(b, PA_OP_REMOVE, (uint32_t)idx, err, n);
}

/* The program exec'd, its agent waits in the new image (probe_area.h
 * execs): nothing of the old image's sites is left; its memory is read
 * anew. */
int agent_be_exec_reset(struct agent_be *b, char *err, size_t n)
{
	/* The new image's agent marked the old image's sites removed when it
	 * joined (probes.c start): a site still in is one placed in the new
	 * image by a request that raced the exec (the program exec'd between
	 * sonde's reading of its maps and the placement).  It goes out now,
	 * through the new image's agent (its bytes only, op_remove), before
	 * its record is reused: else its int3 would stay with no site. */
	for (uint32_t i = 0; i < b->nused; i++) {
		uint32_t st = __atomic_load_n(&b->pa->sites[i].state, __ATOMIC_ACQUIRE);
		if ((st == PA_ACTIVE || st == PA_PREPARED) && request(b, PA_OP_REMOVE, i, err, n))
			return -1;
	}
	b->nused = 0;
	memset(b->refs, 0, sizeof b->refs);
	free(b->slots);
	b->slots = NULL;
	b->nslots = 0;
	b->slots_lost = 0;
	b->threads_stopped = 1; /* only the thread that exec'd, waiting in the agent */
	b->may_hold = 0;
	if (b->memfd >= 0)
		close(b->memfd);
	b->memfd = -1;
	return open_mem(b, err, n);
}

int agent_be_site_live(struct agent_be *b, int idx)
{
	if (idx < 0 || (uint32_t)idx >= b->nused)
		return 0;
	const struct pa_site *s = &b->pa->sites[idx];
	uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	if (st != PA_ACTIVE && st != PA_PREPARED)
		return 1; /* not in: nothing of ours to find there */
	uint8_t c;
	if (pread(b->memfd, &c, 1, (off_t)s->addr) != 1)
		return 0;
	return c == 0xcc || (s->mode == PA_MODE_JMP && c == 0xe9);
}

/* --- the end ------------------------------------------------------------- */

int agent_be_gone(struct agent_be *b)
{
	if (b->gone)
		return 1;
	if (b->launched) {
		siginfo_t si = { 0 };
		if (waitid(P_PID, (id_t)b->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == b->pid)
			b->gone = 1;
	} else if (!agent_target_alive(b->pid)) {
		b->gone = 1;
	}
	return b->gone;
}

void agent_be_end(struct agent_be *b)
{
	char err[200];
	if (b->alive_w >= 0 && b->pa && !agent_be_gone(b))
		request(b, PA_OP_REMOVE_ALL, 0, err, sizeof err);
	if (b->alive_w >= 0)
		close(b->alive_w);
	b->alive_w = -1;
	agent_be_let_go(b);
}

void agent_be_reap(struct agent_be *b)
{
	if (!b->launched || b->reaped)
		return;
	int st;
	while (waitpid(b->pid, &st, 0) < 0 && errno == EINTR)
		;
	b->status = st;
	b->gone = b->reaped = 1;
}

void agent_be_free(struct agent_be *b)
{
	if (b->pa)
		munmap(b->pa, b->area_size);
	if (b->area_fd >= 0)
		close(b->area_fd);
	if (b->memfd >= 0)
		close(b->memfd);
	if (b->alive_w >= 0)
		close(b->alive_w);
	free(b->stopped);
	free(b->slots);
	b->slots = NULL;
	b->nslots = 0;
	b->pa = NULL;
	b->area_fd = b->memfd = b->alive_w = -1;
}

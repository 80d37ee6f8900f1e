/* frames.c — the calls running in a process at the attach (`sonde record
 * -p`, docs/ATTACH.md): every thread is seized and interrupted with ptrace,
 * so that no stack changes while they are read, each is unwound by libdwfl
 * from its registers through the DWARF CFI of its objects (sonde-cc does not
 * keep frame pointers), and they are all let go, their system calls
 * restarted by the kernel as after any ptrace stop.
 *
 * Frame i's return address is the pc of frame i+1; on x86-64 it sits just
 * below the caller's stack pointer as unwound (the callee's CFA), so its
 * slot is sp(i+1) - 8.  A frame is kept only if it is in a module built by
 * sonde-cc and that slot holds that value in the process's memory.  Nothing is written here: the agent's threads
 * take their frames at their first event and check them again (rt/agent.c). */
#include "attach/frames.h"
#include "common/instr_abi.h"

#include "attach/inject.h"
#include "proc/permission.h"
#include "attach/times.h"
#include "attach/unwind.h"
#include "common/clock.h"

#include <dirent.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TIDS 4096
#define MAX_DEPTH 1024
#define SLED_LEN 5 /* a thread stopped in its function's sled has not entered it */

#if defined(__x86_64__) /* the slot rule below is x86-64's */
struct stopped {
	pid_t tid[MAX_TIDS];
	int n;
	pid_t held;     /* stopped by the caller already (frames_take): not ours to let go */
};

static int has_tid(const struct stopped *s, pid_t t)
{
	for (int i = 0; i < s->n; i++)
		if (s->tid[i] == t)
			return 1;
	return 0;
}

static void let_go(struct stopped *s)
{
	for (int i = 0; i < s->n; i++)
		if (s->tid[i] != s->held)
			ptrace(PTRACE_DETACH, s->tid[i], 0, 0);
	s->n = 0;
}

/* Seize and stop every thread, again until no new one appears (a thread
 * may create another meanwhile): each round sends every new thread its
 * PTRACE_INTERRUPT first, then waits for them, so that they stop together.
 * 0, or -1 with err (all let go). */
static int stop_all(pid_t pid, struct stopped *s, char *err, size_t n)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	for (;;) {
		int first = s->n;
		DIR *d = opendir(path);
		if (!d) {
			snprintf(err, n, "cannot list the threads of process %d (%s)", (int)pid, strerror(errno));
			let_go(s);
			return -1;
		}
		struct dirent *e;
		while ((e = readdir(d))) {
			pid_t t = (pid_t)atoi(e->d_name);
			if (t <= 0 || has_tid(s, t))
				continue;
			if (s->n == MAX_TIDS) {
				closedir(d);
				snprintf(err, n, "process %d has more than %d threads", (int)pid, MAX_TIDS);
				let_go(s);
				return -1;
			}
			if (ptrace(PTRACE_SEIZE, t, 0, 0) != 0) {
				if (errno == ESRCH)
					continue; /* it has just ended */
				char why[256];
				attach_why_refused(pid, errno, why, sizeof why);
				closedir(d);
				snprintf(err, n, "cannot attach to process %d (%s)", (int)pid, why);
				let_go(s);
				return -1;
			}
			s->tid[s->n++] = t;
			ptrace(PTRACE_INTERRUPT, t, 0, 0); /* a failure shows in the wait below */
		}
		closedir(d);
		if (s->n == first)
			return 0;
		for (int i = first; i < s->n; i++) {
			int gone = 0;
			if (inject_wait_stop(pid, s->tid[i], &gone, err, n) == 0)
				continue;
			if (!gone) {
				let_go(s);
				return -1;
			}
			/* that thread ended: not an error */
			s->tid[i--] = s->tid[--s->n];
		}
	}
}

/* Whether a module was built by sonde-cc (its ELF file has .note.sonde):
 * only those frames matter, and looking up the others' symbols (libc's)
 * is most of the unwinding's cost.  Remembered per module. */
#define MAX_KNOWN 256
struct known {
	Dwfl_Module *m[MAX_KNOWN];
	int sonde[MAX_KNOWN], n;
};

struct unwind {
	Dwfl *dwfl;
	struct known known;
	pid_t pid, tid;
	int n;
	uint64_t pc[MAX_DEPTH], sp[MAX_DEPTH];
	int act[MAX_DEPTH];
};

int frames_add(struct attach_frames *out, const struct attach_frame *f)
{
	if (out->n == out->cap) {
		int cap = out->cap ? out->cap * 2 : 64;
		struct attach_frame *p = realloc(out->f, sizeof *p * (size_t)cap);
		if (!p)
			return -1;
		out->f = p;
		out->cap = cap;
	}
	out->f[out->n++] = *f;
	return 0;
}

static int is_sonde_module(struct known *k, Dwfl_Module *m)
{
	for (int i = 0; i < k->n; i++)
		if (k->m[i] == m)
			return k->sonde[i];
	int yes = 0;
	GElf_Addr bias;
	Elf *e = dwfl_module_getelf(m, &bias);
	size_t shstr;
	if (e && elf_getshdrstrndx(e, &shstr) == 0)
		for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
			GElf_Shdr sh;
			const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstr, sh.sh_name) : NULL;
			if (name && !strcmp(name, ".note.sonde")) {
				yes = 1;
				break;
			}
		}
	if (k->n < MAX_KNOWN) {
		k->m[k->n] = m;
		k->sonde[k->n++] = yes;
	}
	return yes;
}

/* One stopped thread: its checked frames, outermost first, into out. */
static void unwind_thread(struct unwind *u, Dwfl_Thread *th, struct attach_frames *out)
{
	u->n = unwind_frames(th, u->pc, u->sp, u->act, MAX_DEPTH);
	if (u->n > 0 && out->npcs < (int)(sizeof out->pcs / sizeof out->pcs[0]))
		out->pcs[out->npcs++] = u->pc[0];
	int first = out->n;
	for (int i = 0; i + 1 < u->n; i++) {
		uint64_t pc = u->pc[i], look = u->act[i] ? pc : pc - 1, slot = u->sp[i + 1] - 8, ra = u->pc[i + 1], v;
		Dwfl_Module *m = dwfl_addrmodule(u->dwfl, look);
		if (!m || (!out->any_module && !is_sonde_module(&u->known, m)))
			continue;
		GElf_Off off;
		GElf_Sym sym;
		const char *name = dwfl_module_addrinfo(m, look, &off, &sym, NULL, NULL, NULL);
		if (!name || unwind_read_word(u->pid, slot, &v) || v != ra)
			continue;
		uint64_t fn = look - off;
		if (i == 0 && pc < fn + SLED_LEN)
			continue; /* not entered yet */
		struct attach_frame f = { u->tid, fn, slot, ra, strdup(name), 0 };
		if (frames_add(out, &f))
			free(f.name);
	}
	/* Innermost first from the unwinder: turn this thread's run around. */
	for (int a = first, b = out->n - 1; a < b; a++, b--) {
		struct attach_frame t = out->f[a];
		out->f[a] = out->f[b];
		out->f[b] = t;
	}
}

struct walk {
	struct unwind *u;
	const struct stopped *s;
	struct attach_frames *out;
};

static int thread_cb(Dwfl_Thread *th, void *arg)
{
	struct walk *w = arg;
	pid_t tid = dwfl_thread_tid(th);
	if (has_tid(w->s, tid)) { /* one that was there when we stopped them */
		w->u->tid = tid;
		unwind_thread(w->u, th, w->out);
	}
	return DWARF_CB_OK;
}

#endif

#if defined(__x86_64__)
static struct stopped s; /* frames_take's, until frames_let_go with keep */
#endif

void frames_let_go(void)
{
#if defined(__x86_64__)
	let_go(&s);
#endif
}

/* CLOCK_MONOTONIC `mono` less the time thread tid has run (the first field
 * of /proc/TID/schedstat, the clock CLOCK_THREAD_CPUTIME_ID reads): the
 * runtime's off-CPU time of the thread (rt/cpu_time.c); 0 if unknown. */
static uint64_t thread_off_ns(pid_t tid, uint64_t mono)
{
	char path[64], b[128];
	unsigned long long ran;
	snprintf(path, sizeof path, "/proc/%d/schedstat", (int)tid);
	FILE *f = fopen(path, "r");
	int ok = f && fgets(b, sizeof b, f) && sscanf(b, "%llu", &ran) == 1;
	if (f)
		fclose(f);
	return ok && mono > ran ? mono - ran : 0;
}

int frames_take(pid_t pid, pid_t held, int keep, struct attach_frames *out, char *err, size_t n)
{
	int any = out->any_module;
	memset(out, 0, sizeof *out);
	out->any_module = any;
#if defined(__x86_64__)
	s.n = 0;
	s.held = held;
	if (held)
		s.tid[s.n++] = held;
	if (stop_all(pid, &s, err, n))
		return -1;
	out->tsc = clock_ticks();
	out->mono = clock_mono_ns();
	attach_time("frames: threads stopped");
	Dwfl *d = unwind_begin(pid, err, n);
	int rc = -1;
	if (!d)
		goto out;
	if (dwfl_linux_proc_attach(d, pid, true) != 0) {
		snprintf(err, n, "cannot read the stacks of process %d (%s)", (int)pid, dwfl_errmsg(-1));
		goto out;
	}
	attach_time("frames: unwinder ready");
	static struct unwind u;
	memset(&u, 0, sizeof u);
	u.dwfl = d;
	u.pid = pid;
	struct walk w = { &u, &s, out };
	/* One pass over the threads: dwfl_getthread_frames would list them all
	 * again for each one. */
	dwfl_getthreads(d, thread_cb, &w);
	out->nthreads = s.n;
	/* each thread's off-CPU time at the stop, while it is stopped: the
	 * resumed frames' start (issue 38, rt/agent.c) */
	for (int i = 0; i < out->n; i++)
		out->f[i].off_ns = i && out->f[i - 1].tid == out->f[i].tid ? out->f[i - 1].off_ns
		                                                             : thread_off_ns(out->f[i].tid, out->mono);
	attach_time("frames: threads unwound");
	rc = 0;
out:
	if (d)
		dwfl_end(d);
	if (rc || !keep)
		let_go(&s);
	if (rc)
		frames_free(out);
	return rc;
#else
	(void)pid;
	(void)held;
	(void)keep;
	snprintf(err, n, "finding the calls running at the attach is done for x86-64 only");
	return -1;
#endif
}

void frames_busy_to_session(const struct attach_frames *fr, struct sonde_session_hdr *h, uint64_t size)
{
	if (!h->instr_off || !sess_inside(size, h->instr_off, sizeof(struct sonde_instr)))
		return;
	struct sonde_instr *in = sess_ptr(h, h->instr_off);
	int n = fr->npcs < (int)SONDE_INSTR_MAX_BUSY ? fr->npcs : (int)SONDE_INSTR_MAX_BUSY;
	for (int i = 0; i < n; i++)
		in->busy[i] = fr->pcs[i];
	/* more threads than pcs kept: SONDE_INSTR_MAX_BUSY + 1 says the list is
	 * not whole (the agent then frees no region of an earlier session) */
	in->nbusy = fr->nthreads > n ? SONDE_INSTR_MAX_BUSY + 1 : (uint32_t)n;
}

void frames_to_session(const struct attach_frames *fr, struct sonde_session_hdr *h)
{
	if (!fr->n)
		return;
	uint64_t off = sess_alloc(h, sizeof(struct sonde_attach) + (uint64_t)fr->n * sizeof(struct sonde_attach_frame));
	if (!off)
		return;
	struct sonde_attach *a = sess_ptr(h, off);
	a->tsc = fr->tsc;
	for (int i = 0; i < fr->n; i++)
		a->f[i] = (struct sonde_attach_frame){ fr->f[i].fn, fr->f[i].slot, fr->f[i].ra, fr->f[i].tid, 0,
		                                       fr->f[i].off_ns };
	a->nframes = (uint32_t)fr->n;
	h->attach_off = off;
}

int frames_is_instrumented(struct sonde_session_hdr *h, uint64_t size, uint64_t fn)
{
	uint32_t nm = sess_nmodules(h);
	for (uint32_t i = 0; i < nm; i++) {
		const struct sonde_module *m = &h->modules[i];
		uint64_t nf = m->nfuncs;
		if (!m->funcs_off || nf > size / sizeof(uint64_t) || !sess_inside(size, m->funcs_off, nf * sizeof(uint64_t)))
			continue; /* written by the program's side: checked */
		const uint64_t *f = sess_ptr(h, m->funcs_off);
		for (uint64_t k = 0; k < nf; k++)
			if (f[k] + m->load_bias == fn)
				return 1;
	}
	return 0;
}

void frames_free(struct attach_frames *fr)
{
	for (int i = 0; i < fr->n; i++)
		free(fr->f[i].name);
	free(fr->f);
	memset(fr, 0, sizeof *fr);
}

/* agent.c — `sonde record -p`'s side of the agent: checks that the process
 * is a sonde build without touching it (any dynamically linked program will
 * do for --locks), dlopens libsonde-rt.so into it (inject.c), calls
 * sonde_agent_start there with two paths it can open (our session memfd and the read end of a pipe whose only writer is us, through
 * /proc/<our pid>/fd), and at the end calls sonde_agent_stop.  If we die
 * instead, the pipe's end-of-file tells the agent (src/rt/agent.c). */
#include "attach/agent.h"

#include "attach/dlfuncs.h"
#include "attach/fd_share.h"
#include "attach/inject.h"
#include "attach/times.h"
#include "common/clock.h"
#include "proc/modules.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define START_TIMEOUT_MS 30000
#define HOLD_MS 200

int agent_target_alive(pid_t pid)
{
	char st = inject_thread_state(pid, pid);
	return st && st != 'Z' && st != 'X';
}

int agent_target_exiting(pid_t pid)
{
	char path[64], buf[16];
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	/* its memory given back already (exit_mm), its exit not yet told */
	return readlink(path, buf, sizeof buf) < 0 && errno == ENOENT;
}

/* agent_runtime_other on maps already read. */
static int runtime_other_in(const struct modules *ms, pid_t pid, const char *rt, char *err, size_t n)
{
	const char *base = strrchr(rt, '/') ? strrchr(rt, '/') + 1 : rt;
	size_t bl = strlen(base), rl = strlen(rt);
	for (int i = 0; i < ms->n; i++) {
		const char *p = ms->m[i].path, *b = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
		if (strncmp(b, base, bl) || (b[bl] && strcmp(b + bl, " (deleted)")))
			continue; /* not a runtime */
		if (!strcmp(p, rt))
			continue; /* ours */
		if (!strncmp(p, rt, rl) && !strcmp(p + rl, " (deleted)"))
			snprintf(err, n, "process %d has sonde's runtime %s loaded as it was before the file was replaced "
			         "(sonde rebuilt or upgraded since an earlier attach or launch): this sonde cannot call into "
			         "it; restart the program to attach again", (int)pid, rt);
		else
			snprintf(err, n, "process %d has another sonde's runtime loaded (%s, not %s): attach with that "
			         "sonde, or restart the program", (int)pid, p, rt);
		return -1;
	}
	return 0;
}

int agent_runtime_other(pid_t pid, const char *rt, char *err, size_t n)
{
	struct modules ms = { 0 };
	/* maps that cannot be read: said by the caller's own look */
	int rc = modules_load(&ms, pid) == 0 ? runtime_other_in(&ms, pid, rt, err, n) : 0;
	modules_free(&ms);
	return rc;
}

/* Run-time address of sym in the target's copy of the object at path. */
uint64_t agent_target_sym(pid_t pid, const char *path, const char *sym)
{
	struct modules ms = { 0 };
	uint64_t addr = 0;
	if (modules_load(&ms, pid) == 0)
		for (int i = 0; i < ms.n; i++) {
			if (strcmp(ms.m[i].path, path))
				continue;
			const char *names[1] = { sym };
			uint64_t v = 0;
			if (dl_file_syms(pid, path, names, &v, 1) == 0 && v)
				addr = v + ms.m[i].bias;
			break;
		}
	modules_free(&ms);
	return addr;
}

static const char *start_error(int rc)
{
	switch (rc) {
	case -EBUSY: return "it is being recorded now: started under a 'sonde record' that still runs, or attached "
	                    "by another 'sonde record -p' that has not ended";
	case -EAGAIN: return "what an earlier attach left could not be taken back now (its threads could not "
	                     "all be held still); try again";
	case -EALREADY: return "a 'sonde probe -p' session of this process holds GOT entries an earlier recording "
	                       "left; record it once that probe session has ended";
	case -EADDRINUSE: return "a 'sonde probe -p' session runs in it: its probes hold the entries of the functions "
	                         "they probe, which a recording started after them would not see; end that probe "
	                         "session first, or start the probes during the recording";
	case -ENOSPC: return "a thread's state from an earlier attach cannot be reached (more than 4096 threads)";
	case -ENOENT: return "no loaded module was built by sonde-cc (for its locks use 'sonde record --locks -p')";
	case -ENOEXEC: return "its modules were built by another sonde version: relink them";
	case -EINVAL: return "the session memory could not be mapped";
	default: return strerror(-rc);
	}
}

/* Whether a stopped thread's pc is in [lo, hi) (the runtime's mappings), or
 * not known for every thread. */
static int frames_inside(const struct attach_frames *fr, uint64_t lo, uint64_t hi)
{
	if (fr->npcs < fr->nthreads)
		return 0; /* more threads than pcs kept: the others are not known (docs/ATTACH.md) */
	for (int i = 0; i < fr->npcs; i++)
		if (fr->pcs[i] >= lo && fr->pcs[i] < hi)
			return 1;
	return 0;
}

/* The start proper, by the tracer (sonde, or its helper process): one stop
 * of one thread for all of it, dlopen, the other threads' frames (that
 * thread unwound as it was stopped), the agent's start.  self: the pid whose
 * descriptors session_fd and alive_fd are.  by_exit: the other threads are
 * let go by the caller's exit (start_by_helper), unless the start waits.
 * 0 with *ret the start's return value; -1 with err. */
static int start_in_target(pid_t pid, pid_t self, const char *rt, const uint64_t off[3],
                           const struct dl_funcs *dlf, int sonde_build, int session_fd, int alive_fd,
                           struct sonde_session_hdr *h, int by_exit, struct agent *a, uint64_t *ret, char *err,
                           size_t n)
{
	struct inject *in = inject_attach(pid, 0, err, n);
	attach_time("thread stopped");
	if (!in)
		return -1;
	uint64_t handle, start = 0;
	if (inject_dlopen_with(in, dlf, rt, &handle, err, n)) {
		inject_detach(in);
		return -1;
	}
	/* The handle is the loader's record of the object (glibc's link_map,
	 * musl's dso): its first word is the load bias.  Checked: the runtime
	 * is linked at 0, so its ELF header is there; else from the maps. */
	uint64_t bias = 0;
	unsigned char magic[4] = { 0 };
	if (inject_peek(in, handle, &bias, sizeof bias) || inject_peek(in, bias, magic, sizeof magic) ||
	    memcmp(magic, "\177ELF", 4))
		bias = agent_target_sym(pid, rt, "sonde_agent_start") - off[0];
	start = bias + off[0];
	a->stop_fn = bias + off[1];
	attach_time("runtime loaded");
	/* The calls running now, which the threads take as resumed frames at
	 * their first event: the other threads stay stopped (after the frames
	 * were read) until the agent's start has switched the sleds on, so no
	 * call can begin or end unseen in between, and the start runs without
	 * the program's threads competing for the CPU.  The start might wait
	 * for a lock one of them holds (the loader's, malloc's): after
	 * HOLD_MS they are let go and the start goes on. */
	a->frames.any_module = h->instr_off != 0; /* functions patched without a rebuild: any module */
	/* The runtime loaded before (an earlier attach): its state is taken
	 * back in the agent's start, which needs every thread held, none of
	 * them inside the runtime's code (an exit trampoline, a hook): those
	 * are let go and stopped again, a few times. */
	int again = a->rt_hi > a->rt_lo;
	int held = (sonde_build || again) && inject_put_back(in) == 0 &&
	           frames_take(pid, inject_where(in)->tid, 1, &a->frames, a->frames_err, sizeof a->frames_err) == 0;
	for (int tries = 0; held && again && frames_inside(&a->frames, a->rt_lo, a->rt_hi); tries++) {
		frames_let_go();
		int any = a->frames.any_module;
		frames_free(&a->frames);
		a->frames.any_module = any;
		held = tries < 50 && frames_take(pid, inject_where(in)->tid, 1, &a->frames, a->frames_err,
		                                 sizeof a->frames_err) == 0;
	}
	char sess[64], alive[64];
	snprintf(sess, sizeof sess, "/proc/%d/fd/%d", (int)self, session_fd);
	snprintf(alive, sizeof alive, "/proc/%d/fd/%d", (int)self, alive_fd);
	uint64_t s_at, a_at;
	/* What the earlier attach left is taken back first (its hooked frames'
	 * return addresses among them), then the stacks are read again: the
	 * calls running under those frames are found too. */
	if (held && again) {
		frames_busy_to_session(&a->frames, h, h->size); /* the agent frees no region a thread is in */
		uint64_t r = 0, args[6] = { 0, 1 };
		if (inject_push(in, sess, strlen(sess) + 1, &args[0], err, n) ||
		    inject_call_at(in, bias + off[2], args, &r, START_TIMEOUT_MS, err, n)) {
			frames_let_go();
			inject_detach(in);
			return -1;
		}
		frames_let_go();
		int any = a->frames.any_module;
		frames_free(&a->frames);
		a->frames.any_module = any;
		if ((int)(int32_t)(uint32_t)r < 0) { /* refused: the start says why, the threads not held */
			*ret = r;
			inject_detach(in);
			return 0;
		}
		held = inject_put_back(in) == 0 &&
		       frames_take(pid, inject_where(in)->tid, 1, &a->frames, a->frames_err, sizeof a->frames_err) == 0;
	}
	if (held) {
		frames_to_session(&a->frames, h);
		frames_busy_to_session(&a->frames, h, h->size);
	}
	attach_time("running calls found");
	int rc = inject_push(in, sess, strlen(sess) + 1, &s_at, err, n);
	if (!rc)
		rc = inject_push(in, alive, strlen(alive) + 1, &a_at, err, n);
	if (!rc) {
		uint64_t args[6] = { s_at, a_at, (uint64_t)held };
		rc = inject_call_begin(in, start, args, err, n);
	}
	if (!rc && held)
		rc = inject_call_end(in, ret, HOLD_MS, 0, err, n);
	attach_time("start: returned");
	if (held && (rc || !by_exit))
		frames_let_go();
	if (rc == 1 || (!rc && !held))
		rc = inject_call_end(in, ret, START_TIMEOUT_MS, 1, err, n);
	if (!rc && (int32_t)(uint32_t)*ret >= 0) /* started: its int3s must not meet a mask blocking SIGTRAP */
		inject_unblock_at_detach(in, SIGTRAP);
	inject_detach(in);
	return rc ? -1 : 0;
}

/* What the helper sends back. */
struct helper_result {
	int rc;
	uint64_t ret, stop_fn, tsc;
	int nframes, nthreads;
	char err[512], frames_err[256];
};

static int write_all(int fd, const void *p, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t w = write(fd, (const char *)p + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return 0;
}

static int read_all(int fd, void *p, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t r = read(fd, (char *)p + done, len - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

static int (*serve_fn)(void *);
static void *serve_arg;

void agent_serve_with(int (*fn)(void *), void *arg)
{
	serve_fn = fn;
	serve_arg = arg;
}

/* The fork of a helper process (start_by_helper, stop_by_helper) with a
 * pipe res for its result: -1 when there is no pipe or no fork (the caller
 * does the work itself), 0 in the helper, which writes res[1], has its own
 * process group (a kill of sonde's group spares it), ignores SIGPIPE
 * (sonde gone: the result is not needed) and holds no copy of alive_w, the
 * write end of the agent's alive pipe (-1: none); else the helper's pid, to
 * sonde, which reads res[0]. */
static pid_t fork_helper(int res[2], int alive_w)
{
	if (pipe2(res, O_CLOEXEC) != 0)
		return -1;
	fflush(NULL);
	pid_t c = fork();
	if (c < 0) {
		close(res[0]);
		close(res[1]);
		return -1;
	}
	if (c == 0) {
		close(res[0]);
		if (alive_w >= 0)
			close(alive_w);
		setpgid(0, 0);
		signal(SIGPIPE, SIG_IGN);
		return 0;
	}
	close(res[1]);
	return c;
}

struct frame_msg {
	int32_t tid;
	uint32_t namelen;
	uint64_t fn, slot, ra;
};

/* The start in a helper process, sonde's child, which is the tracer: when
 * it exits the kernel lets every thread it stopped go at once
 * (exit_ptrace, under one lock), where detaching them one by one took 7-15
 * ms of 100 on a loaded machine: each thread let go took the CPU from sonde
 * before the next one was.  Its results (the return value, the frames with
 * their names) come back through a pipe; the session memory, shared, gets
 * the frames directly.  Without fork, the start runs here.
 *
 * The helper outlives sonde: if sonde is killed (SIGKILL) while the target
 * runs an injected call, the helper still catches the call's return and
 * puts the thread back; killed with it, the tracer would be gone and the
 * call would return into the faulting address (inject.c), a crash of the
 * target.  So it has its own process group (a kill of sonde's group spares
 * it) and none of the pipe's write end: then the agent, if it started,
 * sees sonde's end at once (the pipe's EOF) and ends too. */
static int start_by_helper(pid_t pid, pid_t fd_pid, const char *rt, const uint64_t off[3],
                           const struct dl_funcs *dlf, int sonde_build, int session_fd, int alive_fd, int alive_w,
                           struct sonde_session_hdr *h, struct agent *a, uint64_t *ret, char *err, size_t n)
{
	pid_t self = getpid();
	int res[2];
	pid_t c = fork_helper(res, alive_w);
	if (c < 0)
		return start_in_target(pid, fd_pid, rt, off, dlf, sonde_build, session_fd, alive_fd, h, 0, a, ret, err, n);
	if (c == 0) {
		static struct helper_result r;
		r.rc = getppid() == self ? start_in_target(pid, fd_pid, rt, off, dlf, sonde_build, session_fd, alive_fd, h,
		                                           1, a, &r.ret, r.err, sizeof r.err)
		                         : -1;
		r.stop_fn = a->stop_fn;
		r.tsc = a->frames.tsc;
		r.nframes = a->frames.n;
		r.nthreads = a->frames.nthreads;
		snprintf(r.frames_err, sizeof r.frames_err, "%s", a->frames_err);
		int bad = write_all(res[1], &r, sizeof r);
		for (int i = 0; !bad && i < a->frames.n; i++) {
			const struct attach_frame *f = &a->frames.f[i];
			struct frame_msg m = { f->tid, f->name ? (uint32_t)strlen(f->name) : 0, f->fn, f->slot, f->ra };
			bad = write_all(res[1], &m, sizeof m) || write_all(res[1], f->name ? f->name : "", m.namelen);
		}
		_exit(bad);
	}
	static struct helper_result r;
	/* The agent's start may ask for stubs (src/instr/): served while it runs. */
	while (serve_fn) {
		struct pollfd pf = { res[0], POLLIN, 0 };
		int pr = poll(&pf, 1, 1);
		if (pr > 0 || (pr < 0 && errno != EINTR))
			break;
		serve_fn(serve_arg);
	}
	int rc = read_all(res[0], &r, sizeof r);
	if (rc)
		snprintf(err, n, "the attach helper process ended without a result");
	else if (r.rc) {
		snprintf(err, n, "%s", r.err);
		rc = -1;
	} else {
		*ret = r.ret;
		a->stop_fn = r.stop_fn;
		a->frames.tsc = r.tsc;
		a->frames.nthreads = r.nthreads;
		snprintf(a->frames_err, sizeof a->frames_err, "%s", r.frames_err);
		for (int i = 0; i < r.nframes && i < 1 << 20; i++) {
			struct frame_msg m;
			if (read_all(res[0], &m, sizeof m) || m.namelen > 4096)
				break;
			char *name = malloc(m.namelen + 1);
			if (!name || read_all(res[0], name, m.namelen)) {
				free(name);
				break;
			}
			name[m.namelen] = 0;
			struct attach_frame f = { m.tid, m.fn, m.slot, m.ra, name, 0 };
			if (frames_add(&a->frames, &f)) {
				free(name);
				break;
			}
		}
	}
	close(res[0]);
	while (waitpid(c, NULL, 0) < 0 && errno == EINTR)
		;
	return rc;
}

int agent_start(pid_t pid, const char *rt_path, int session_fd, struct sonde_session_hdr *h, int locks,
                struct agent *a, char *err, size_t n)
{
	attach_time("sonde ready");
	memset(a, 0, sizeof *a);
	a->pid = pid;
	a->alive_w = -1;
	if (!agent_target_alive(pid)) {
		snprintf(err, n, "cannot attach to process %d (no such process)", (int)pid);
		return -1;
	}
	/* A sonde build?  Read from its files, before the process is touched
	 * (--locks works on any dynamically linked program); dlopen too, so
	 * that a static binary is refused without being stopped.  The maps are
	 * read once for both. */
	struct modules ms = { 0 };
	struct dl_funcs dlf;
	int sonde_build = 0;
	if (modules_load(&ms, pid) != 0) {
		modules_free(&ms);
		snprintf(err, n, "cannot attach to process %d (cannot read /proc/%d/maps: %s)", (int)pid, (int)pid,
		         strerror(errno));
		return -1;
	}
	if (!ms.n && agent_target_exiting(pid)) {
		modules_free(&ms);
		snprintf(err, n, "cannot attach to process %d (it is exiting: no memory mapped any more)", (int)pid);
		return -1;
	}
	sonde_build = dl_count_note_section(pid, &ms, ".note.sonde") > 0;
	/* A session with functions to patch without a rebuild (src/instr/)
	 * records any program: the agent patches what sonde planned. */
	if (h->instr_off)
		sonde_build = 1;
	if (!sonde_build && !locks) {
		modules_free(&ms);
		snprintf(err, n, "process %d has no code built by sonde-cc (for its locks use 'sonde record "
		         "--locks -p %d', for probes 'sonde probe -p %d'; or rebuild it with sonde-cc)", (int)pid,
		         (int)pid, (int)pid);
		return AGENT_NOT_SONDE;
	}
	int rc = dl_funcs_find_wait(pid, &ms, &dlf, err, n);
	char rt[PATH_MAX];
	if (!rc && !realpath(rt_path, rt)) {
		snprintf(err, n, "cannot find the runtime %s (%s)", rt_path, strerror(errno));
		rc = -1;
	}
	/* Loaded already (an earlier attach, or launched under sonde)? */
	for (int i = 0; !rc && i < ms.n; i++)
		if (ms.m[i].path && !strcmp(ms.m[i].path, rt)) {
			a->rt_lo = ms.m[i].lo;
			a->rt_hi = ms.m[i].hi;
		}
	if (!rc)
		rc = runtime_other_in(&ms, pid, rt, err, n);
	modules_free(&ms);
	if (rc)
		return -1;
	attach_time("sonde build checked");
	/* The agent's entry points: offsets in our own file of the runtime. */
	const char *names[3] = { "sonde_agent_start", "sonde_agent_stop", "sonde_agent_retire" };
	uint64_t off[3] = { 0, 0, 0 };
	if (dl_file_syms(getpid(), rt, names, off, 3) != 0 || !off[0] || !off[1] || !off[2]) {
		snprintf(err, n, "the runtime %s has no sonde_agent_start (a broken build?)", rt);
		return -1;
	}
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		snprintf(err, n, "cannot create a pipe (%s)", strerror(errno));
		return -1;
	}
	/* The program opens the session and the pipe's read end through
	 * /proc: also as another user (fd_share.c). */
	struct fd_share sh;
	if (fd_share_begin(&sh, pid, (const int[]){ session_fd, pfd[0] }, 2, err, n)) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	uint64_t ret = 0;
	rc = start_by_helper(pid, sh.pid, rt, off, &dlf, sonde_build, session_fd, pfd[0], pfd[1], h, a, &ret, err, n);
	fd_share_end(&sh);
	attach_time("agent started");
	close(pfd[0]); /* the agent has its own */
	if (rc) {
		frames_free(&a->frames);
		close(pfd[1]);
		return -1;
	}
	int r = (int)(int32_t)(uint32_t)ret;
	if (r < 0) {
		snprintf(err, n, "the agent could not start in process %d (%s)", (int)pid, start_error(r));
		close(pfd[1]);
		return r == -ENOENT ? AGENT_NOT_SONDE : -1;
	}
	snprintf(a->rt, sizeof a->rt, "%s", rt);
	a->nmods = r & 0xffff;
	a->nobjs = (r >> 16) & 0x7fff;
	a->alive_w = pfd[1];
	a->start_ns = clock_mono_ns();
	return 0;
}

void agent_free(struct agent *a)
{
	frames_free(&a->frames);
}

/* The stop call, in a helper process as the start (start_by_helper): if
 * sonde is killed while the agent ends (its grace period makes that call
 * last some 20 ms), the helper still puts the thread back.  Without fork,
 * the call is made here. */
#define RT_FILE_NAME "libsonde-rt.so" /* an exec since the start leaves none at stop_fn */
static int stop_by_helper(struct agent *a, char *err, size_t n)
{
	uint64_t args[6] = { 0 }, ret;
	int res[2];
	pid_t c = fork_helper(res, a->alive_w);
	if (c < 0)
		return inject_call(a->pid, RT_FILE_NAME, a->stop_fn, args, &ret, err, n);
	if (c == 0) {
		static char msg[512];
		int rc = inject_call(a->pid, RT_FILE_NAME, a->stop_fn, args, &ret, msg, sizeof msg);
		if (rc)
			write_all(res[1], msg, strlen(msg));
		_exit(rc ? 1 : 0);
	}
	char msg[512];
	size_t got = 0;
	for (;;) {
		ssize_t r = read(res[0], msg + got, sizeof msg - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (got += (size_t)r) == sizeof msg - 1)
			break;
	}
	msg[got] = 0;
	close(res[0]);
	int st = 0;
	while (waitpid(c, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	snprintf(err, n, "%s", got ? msg : "the helper process of the stop call failed");
	return -1;
}

/* Does a thread of pid run the agent's watcher (named sonde-agent)? */
static int watcher_runs(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int yes = 0;
	struct dirent *e;
	while (!yes && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[320], comm[32] = "";
		snprintf(p, sizeof p, "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		FILE *f = fopen(p, "r");
		if (f) {
			yes = fgets(comm, sizeof comm, f) && !strcmp(comm, "sonde-agent\n");
			fclose(f);
		}
	}
	closedir(d);
	return yes;
}

/* Is the runtime mapped at the stop function's address in pid now (not
 * exec'd since the start)? */
static int same_image(const struct agent *a)
{
	struct modules ms = { 0 };
	int yes = 0;
	if (modules_load(&ms, a->pid) == 0) {
		const struct module *m = modules_at(&ms, a->stop_fn);
		yes = m && m->path && !strcmp(m->path, a->rt);
	}
	modules_free(&ms);
	return yes;
}

int agent_stop(struct agent *a, char *err, size_t n)
{
	int rc = 0;
	if (!agent_target_alive(a->pid)) {
		snprintf(err, n, "process %d has ended", (int)a->pid);
		rc = -1;
	} else if (!same_image(a) && agent_target_sym(a->pid, a->rt, "sonde_agent_stop")) {
		/* exec'd since, and the new image started the agent itself
		 * (exec_follow.c): no call into an image that may be starting
		 * still; its watcher ends the recording at the pipe's end, as in
		 * every other process of the tree.  Wait for that (2 s at most). */
		close(a->alive_w);
		a->alive_w = -1;
		for (int i = 0; i < 400 && watcher_runs(a->pid); i++) {
			struct timespec ts = { 0, 5 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	} else {
		rc = stop_by_helper(a, err, n);
	}
	if (a->alive_w >= 0)
		close(a->alive_w); /* the watcher ends too */
	a->alive_w = -1;
	return rc;
}

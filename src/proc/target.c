/* target.c — the traced process: launching (PTRACE_SEIZE + EXITKILL) or
 * attaching to every thread (PTRACE_SEIZE + TRACECLONE), the thread table,
 * memory access through /proc/PID/mem, registers, stopping every thread and
 * resuming or detaching them. */
#include "proc/target.h"

#include "proc/permission.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <elf.h>

#define TRACE_OPTS (PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC)

struct thr *target_thr(struct target *t, pid_t tid)
{
	for (int i = 0; i < t->nthr; i++)
		if (t->thr[i].tid == tid)
			return &t->thr[i];
	return NULL;
}

struct thr *target_add_thr(struct target *t, pid_t tid, int stopped)
{
	struct thr *th = target_thr(t, tid);
	if (th)
		return th;
	if (t->nthr == t->cap) {
		int cap = t->cap ? t->cap * 2 : 16;
		struct thr *v = realloc(t->thr, (size_t)cap * sizeof *v);
		if (!v)
			return NULL;
		t->thr = v;
		t->cap = cap;
	}
	th = &t->thr[t->nthr++];
	memset(th, 0, sizeof *th);
	th->tid = tid;
	th->stopped = stopped;
	return th;
}

void target_del_thr(struct target *t, pid_t tid)
{
	for (int i = 0; i < t->nthr; i++)
		if (t->thr[i].tid == tid) {
			t->thr[i] = t->thr[--t->nthr];
			return;
		}
}

/* The fields of a /proc stat file after the command name (which may hold
 * spaces and parentheses), read into buf: they start at the returned ')',
 * NULL when the file cannot be read. */
static char *stat_fields(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	size_t len = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[len] = 0;
	return strrchr(buf, ')');
}

/* State letter of /proc/PID/task/TID/stat, or 0 when the thread does not
 * exist. */
char target_thread_state(pid_t pid, pid_t tid)
{
	char path[96], buf[512];
	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	char *p = stat_fields(path, buf, sizeof buf);
	return p && p[1] == ' ' && p[2] ? p[2] : 0;
}

uint64_t target_start_stack(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	char *p = stat_fields(path, buf, sizeof buf);
	/* Field 28; the fields after the command name begin with the 3rd. */
	for (int field = 2; p && field < 28; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

static void read_entry(struct target *t)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/auxv", (int)t->pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	Elf64_auxv_t a;
	while (read(fd, &a, sizeof a) == (ssize_t)sizeof a && a.a_type != AT_NULL)
		if (a.a_type == AT_ENTRY)
			t->entry = a.a_un.a_val;
	close(fd);
}

static int open_mem(struct target *t, char *err, size_t n)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)t->pid);
	if (t->memfd >= 0)
		close(t->memfd);
	t->memfd = open(path, O_RDWR | O_CLOEXEC);
	if (t->memfd < 0) {
		snprintf(err, n, "cannot open %s (%s)", path, strerror(errno));
		return -1;
	}
	read_entry(t);
	return 0;
}

int target_reopen(struct target *t)
{
	char e[128];
	return open_mem(t, e, sizeof e);
}

int target_launch(struct target *t, char **argv, char *err, size_t n)
{
	memset(t, 0, sizeof *t);
	t->memfd = -1;
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		snprintf(err, n, "cannot run '%s' (pipe: %s)", argv[0], strerror(errno));
		return -1;
	}
	pid_t c = fork();
	if (c < 0) {
		snprintf(err, n, "cannot run '%s' (fork: %s)", argv[0], strerror(errno));
		return -1;
	}
	if (c == 0) {
		close(pfd[0]);
		raise(SIGSTOP);
		execvp(argv[0], argv);
		int e = errno;
		if (write(pfd[1], &e, sizeof e) < 0)
			_exit(127);
		_exit(127);
	}
	close(pfd[1]);
	int st;
	if (waitpid(c, &st, WUNTRACED) != c || !WIFSTOPPED(st)) {
		close(pfd[0]);
		snprintf(err, n, "cannot run '%s' (child did not start)", argv[0]);
		return -1;
	}
	if (ptrace(PTRACE_SEIZE, c, 0, (void *)(long)(TRACE_OPTS | PTRACE_O_EXITKILL)) < 0) {
		snprintf(err, n, "cannot trace '%s' (ptrace: %s)", argv[0], strerror(errno));
		kill(c, SIGKILL);
		close(pfd[0]);
		return -1;
	}
	kill(c, SIGCONT);
	for (;;) {
		if (waitpid(c, &st, __WALL) != c) {
			snprintf(err, n, "cannot run '%s' (waitpid: %s)", argv[0], strerror(errno));
			close(pfd[0]);
			return -1;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			int e = 0;
			if (read(pfd[0], &e, sizeof e) == (ssize_t)sizeof e)
				snprintf(err, n, "cannot run '%s' (%s)", argv[0], strerror(e));
			else
				snprintf(err, n, "cannot run '%s' (it exited before starting)", argv[0]);
			close(pfd[0]);
			return -1;
		}
		int ev = st >> 16;
		if (ev == PTRACE_EVENT_EXEC)
			break;
		int sig = WSTOPSIG(st);
		if (ev || sig == SIGSTOP || sig == SIGCONT || sig == SIGTRAP)
			sig = 0;
		ptrace(PTRACE_CONT, c, 0, (void *)(long)sig);
	}
	close(pfd[0]);
	t->pid = c;
	t->launched = 1;
	target_add_thr(t, c, 1);
	return open_mem(t, err, n);
}

int target_attach(struct target *t, pid_t pid, char *err, size_t n)
{
	memset(t, 0, sizeof *t);
	t->memfd = -1;
	t->pid = pid;
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *)(long)TRACE_OPTS) < 0) {
		char why[400];
		attach_why_refused(pid, errno, why, sizeof why);
		snprintf(err, n, "cannot attach to process %d (%s)", (int)pid, why);
		return -1;
	}
	target_add_thr(t, pid, 0);
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	for (int again = 1; again;) {
		again = 0;
		DIR *d = opendir(path);
		if (!d)
			break;
		struct dirent *de;
		while ((de = readdir(d))) {
			pid_t tid = atoi(de->d_name);
			if (tid <= 0 || target_thr(t, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)TRACE_OPTS) == 0) {
				target_add_thr(t, tid, 0);
				again = 1;
			}
		}
		closedir(d);
	}
	return open_mem(t, err, n);
}

int target_read(struct target *t, uint64_t addr, void *buf, size_t len)
{
	ssize_t r = pread(t->memfd, buf, len, (off_t)addr);
	if (r == (ssize_t)len)
		return 0;
	/* The mm may have changed (exec); /proc/PID/mem is bound to the old one. */
	return -1;
}

int target_write(struct target *t, uint64_t addr, const void *buf, size_t len)
{
	ssize_t r = pwrite(t->memfd, buf, len, (off_t)addr);
	return r == (ssize_t)len ? 0 : -1;
}

int target_getregs(pid_t tid, arch_regs *r)
{
	return ptrace(PTRACE_GETREGS, tid, 0, r) < 0 ? -1 : 0;
}

int target_setregs(pid_t tid, const arch_regs *r)
{
	return ptrace(PTRACE_SETREGS, tid, 0, r) < 0 ? -1 : 0;
}

int target_getfpregs(pid_t tid, arch_fpregs *f)
{
	return ptrace(PTRACE_GETFPREGS, tid, 0, f) < 0 ? -1 : 0;
}

int target_cont(struct target *t, struct thr *th, int sig)
{
	(void)t;
	th->stopped = 0;
	th->pending_sig = 0;
	return ptrace(PTRACE_CONT, th->tid, 0, (void *)(long)sig) < 0 ? -1 : 0;
}

pid_t target_wait(int *st)
{
	pid_t tid;
	while ((tid = waitpid(-1, st, __WALL)) < 0 && errno == EINTR)
		;
	return tid;
}

/* Stop every running thread.  Stops that are not our interrupt go through
 * park(), which rewinds breakpoint traps or keeps the signal pending. */
int target_stop_all(struct target *t, void (*park)(void *arg, struct thr *th, int status), void *arg)
{
	for (int i = 0; i < t->nthr; i++)
		if (!t->thr[i].stopped)
			ptrace(PTRACE_INTERRUPT, t->thr[i].tid, 0, 0);
	for (;;) {
		int running = 0;
		for (int i = 0; i < t->nthr; i++)
			running += !t->thr[i].stopped;
		if (!running || t->gone)
			return 0;
		int st;
		pid_t tid = target_wait(&st);
		if (tid < 0)
			return -1;
		struct thr *th = target_thr(t, tid);
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (tid == t->pid) {
				t->gone = 1;
				t->status = st;
			}
			target_del_thr(t, tid);
			continue;
		}
		if (!th) {
			/* A new thread reporting before its parent's clone event. */
			th = target_add_thr(t, tid, 1);
			continue;
		}
		th->stopped = 1;
		int ev = st >> 16;
		if (ev == PTRACE_EVENT_CLONE) {
			unsigned long nt = 0;
			ptrace(PTRACE_GETEVENTMSG, tid, 0, &nt);
			struct thr *n2 = target_thr(t, (pid_t)nt);
			if (!n2) {
				n2 = target_add_thr(t, (pid_t)nt, 0);
				if (n2)
					ptrace(PTRACE_INTERRUPT, n2->tid, 0, 0);
			}
			continue;
		}
		if (ev == PTRACE_EVENT_STOP || ev == PTRACE_EVENT_EXEC)
			continue;
		park(arg, th, st);
	}
}

void target_resume_all(struct target *t)
{
	for (int i = 0; i < t->nthr; i++)
		if (t->thr[i].stopped)
			target_cont(t, &t->thr[i], t->thr[i].pending_sig);
}

void target_detach(struct target *t)
{
	for (int i = 0; i < t->nthr; i++)
		ptrace(PTRACE_DETACH, t->thr[i].tid, 0, (void *)(long)t->thr[i].pending_sig);
	t->nthr = 0;
	if (t->memfd >= 0)
		close(t->memfd);
	t->memfd = -1;
}

/* exec_follow.c — a runtime loaded late follows its program through exec:
 * while a session runs in this process, the exec functions the program
 * imports (and posix_spawn) are redirected here (got.c) and pass on an
 * environment that loads the runtime again in the new image, with the
 * session's two descriptors (its memory and sonde's pipe).  The new image's
 * constructor takes sonde's part out again, so that it sees the environment
 * it was given.  Two sessions follow execs this way, one at a time:
 *  - a probe session (probes.c): an exec of the probed process itself; sonde
 *    places the probes again in the new image (src/probe/agent/agent_session.c,
 *    docs/PROBES.md "exec").  A child's exec, and posix_spawn, are passed on
 *    as they are;
 *  - an attached recording (`sonde record -p`, agent.c): every exec of the
 *    recorded tree, the attached process's own, a fork or vfork child's, and
 *    posix_spawn's; the new image starts the agent itself and asks sonde to
 *    plan its executable, as an image exec'd in a launched tree does
 *    (docs/ATTACH.md "An exec while recording").
 * No malloc: a vfork child calls these too; the environment is built on the
 * stack.  An exec with no session, or of a program that would not load the
 * runtime (static, 32-bit), is passed on as it is.  glibc's own internal
 * calls (system, popen) start other processes and are not followed. */
#include "rt/exec_args.h"
#include "rt/got.h"
#include "rt/rt.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                        char *const[], char *const[]);

static execve_fn real_execve;
static execvpe_fn real_execvpe;
static fexecve_fn real_fexecve;
static spawn_fn real_spawn, real_spawnp;

static void reals(void)
{
	if (!real_execve)
		real_execve = (execve_fn)dlsym(RTLD_NEXT, "execve");
	if (!real_execvpe)
		real_execvpe = (execvpe_fn)dlsym(RTLD_NEXT, "execvpe");
	if (!real_fexecve)
		real_fexecve = (fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
	if (!real_spawn)
		real_spawn = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
	if (!real_spawnp)
		real_spawnp = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawnp");
}

/* What an exec that keeps the session passes on: the runtime first in
 * LD_PRELOAD, the session's descriptors (copies open across the exec, at 900
 * and up), its flag; built in the caller's frame. */
struct follow {
	int fds[2];
	char pre[4096], fd0[64], fd1[64];
	const char *flag, *prefix;
};

static void follow_end(struct follow *f)
{
	if (f->fds[0] >= 0)
		close(f->fds[0]);
	if (f->fds[1] >= 0)
		close(f->fds[1]);
}

/* 0 with *f ready when a session of this process follows this exec (spawn:
 * the new image is a posix_spawn child's); -1 to pass it on as it is. */
static int follow_begin(struct follow *f, char *const *envp, int spawn)
{
	struct rt_follow_keep k;
	if (rt_probes_follow(&k, spawn) && rt_agent_follow(&k, spawn))
		return -1;
	Dl_info di;
	if (!dladdr((void *)follow_begin, &di) || !di.dli_fname || strchr(di.dli_fname, ':'))
		return -1;
	const char *old = NULL;
	for (char *const *e = envp; e && *e; e++)
		if (!strncmp(*e, "LD_PRELOAD=", 11))
			old = *e + 11;
	f->fds[0] = fcntl(k.fd[0], F_DUPFD, 900);
	f->fds[1] = fcntl(k.fd[1], F_DUPFD, 900);
	f->flag = k.flag;
	f->prefix = k.prefix;
	if (f->fds[0] < 0 || f->fds[1] < 0 ||
	    (size_t)snprintf(f->pre, sizeof f->pre, "LD_PRELOAD=%s%s%s", di.dli_fname, old && *old ? ":" : "",
	                     old ? old : "") >= sizeof f->pre ||
	    (size_t)snprintf(f->fd0, sizeof f->fd0, "%s=%d", k.var[0], f->fds[0]) >= sizeof f->fd0 ||
	    (size_t)snprintf(f->fd1, sizeof f->fd1, "%s=%d", k.var[1], f->fds[1]) >= sizeof f->fd1) {
		follow_end(f);
		return -1;
	}
	return 0;
}

static size_t env_count(char *const *envp)
{
	size_t n = 0;
	while (envp && envp[n])
		n++;
	return n;
}

/* env (room for env_count(envp) + 5): sonde's part, then envp without its
 * LD_PRELOAD and the session's own variables. */
static void follow_env(const struct follow *f, char *const *envp, char **env)
{
	size_t k = 0, pl = strlen(f->prefix);
	env[k++] = (char *)f->pre;
	env[k++] = (char *)f->fd0;
	env[k++] = (char *)f->fd1;
	env[k++] = (char *)f->flag;
	for (char *const *e = envp; e && *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, f->prefix, pl))
			env[k++] = *e;
	env[k] = NULL;
}

/* An attached recording runs in this process (not only a probe session). */
static int recording(void)
{
	struct rt_follow_keep k;
	return rt_agent_follow(&k, 0) == 0;
}

/* Runs the real exec fn with envp, or with the session's environment. */
#define FOLLOW(call_with, prog, spawn)                                    \
	do {                                                                  \
		reals();                                                          \
		struct follow f_;                                                 \
		const char *why_ = NULL;                                          \
		if (!rt_exec_loads_rt(prog, &why_)) {                             \
			/* a process without functions, noted in a recording */       \
			int slot_ = (spawn) || !recording() ? -1 : rt_note_plain_exec(prog, why_); \
			int rc_ = call_with((char **)envp);                           \
			int e_ = errno;                                               \
			rt_unnote_plain_exec(slot_); /* the exec failed */            \
			errno = e_;                                                   \
			return rc_;                                                   \
		}                                                                 \
		/* (the environment goes on the stack: bounded as the arguments) */ \
		if (env_count(envp) < RT_EXEC_ARGS_MAX && follow_begin(&f_, envp, spawn) == 0) { \
			char *env_[env_count(envp) + 5];                              \
			follow_env(&f_, envp, env_);                                  \
			int rc_ = call_with(env_);                                    \
			int e_ = errno;                                               \
			follow_end(&f_);                                              \
			errno = e_;                                                   \
			return rc_;                                                   \
		}                                                                 \
		return call_with((char **)envp);                                  \
	} while (0)

static int w_execve(const char *path, char *const argv[], char *const envp[])
{
#define CALL(E) (real_execve ? real_execve(path, argv, E) : (errno = ENOSYS, -1))
	FOLLOW(CALL, path, 0);
#undef CALL
}

static int w_execvpe(const char *file, char *const argv[], char *const envp[])
{
#define CALL(E) (real_execvpe ? real_execvpe(file, argv, E) : (errno = ENOSYS, -1))
	char buf[4096];
	FOLLOW(CALL, rt_exec_search_path(file, buf, sizeof buf), 0);
#undef CALL
}

static int w_fexecve(int fd, char *const argv[], char *const envp[])
{
#define CALL(E) (real_fexecve ? real_fexecve(fd, argv, E) : (errno = ENOSYS, -1))
	char buf[64];
	snprintf(buf, sizeof buf, "/proc/self/fd/%d", fd);
	FOLLOW(CALL, buf, 0);
#undef CALL
}

/* posix_spawn's child execs path with envp: an attached recording follows it. */
static int w_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                         const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
#define CALL(E) (real_spawn ? real_spawn(pid, path, fa, at, argv, E) : ENOSYS)
	FOLLOW(CALL, path, 1);
#undef CALL
}

static int w_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                          const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
#define CALL(E) (real_spawnp ? real_spawnp(pid, file, fa, at, argv, E) : ENOSYS)
	char buf[4096];
	FOLLOW(CALL, rt_exec_search_path(file, buf, sizeof buf), 1);
#undef CALL
}

static int w_execv(const char *path, char *const argv[])
{
	return w_execve(path, argv, environ);
}

static int w_execvp(const char *file, char *const argv[])
{
	return w_execvpe(file, argv, environ);
}

RT_EXEC_L(static, w_execl, w_execve, 0)
RT_EXEC_L(static, w_execlp, w_execvpe, 0)
RT_EXEC_L(static, w_execle, w_execve, 1)

static const struct rt_got_sym exec_wrappers[] = {
	{ "execve", (void *)w_execve },   { "execv", (void *)w_execv },   { "execvp", (void *)w_execvp },
	{ "execvpe", (void *)w_execvpe }, { "execl", (void *)w_execl },   { "execlp", (void *)w_execlp },
	{ "execle", (void *)w_execle },   { "fexecve", (void *)w_fexecve },
	{ "posix_spawn", (void *)w_posix_spawn }, { "posix_spawnp", (void *)w_posix_spawnp },
};

RT_HIDDEN int rt_exec_wrappers(const struct rt_got_sym **out)
{
	reals();
	*out = exec_wrappers;
	return (int)(sizeof exec_wrappers / sizeof exec_wrappers[0]);
}

/* LD_PRELOAD's libsonde-rt.so goes (a new image's constructor, probes.c and
 * agent.c), so that the programs this one starts do not take it. */
RT_HIDDEN void rt_strip_preload(void)
{
	char *v = getenv("LD_PRELOAD");
	if (!v)
		return;
	char out[4096];
	size_t o = 0;
	for (char *p = v; *p;) {
		size_t l = strcspn(p, ": ");
		int ours = l >= 14 && memcmp(p + l - 14, "libsonde-rt.so", 14) == 0;
		if (!ours && l && o + l + 2 < sizeof out) {
			if (o)
				out[o++] = ':';
			memcpy(out + o, p, l);
			o += l;
		}
		p += l;
		while (*p == ':' || *p == ' ')
			p++;
	}
	out[o] = 0;
	if (o)
		setenv("LD_PRELOAD", out, 1);
	else
		unsetenv("LD_PRELOAD");
}

/* probe_exec.c — the probe agent follows its program through exec: while a
 * probe session runs in this process (probes.c), the exec functions the
 * program imports are redirected here (got.c) and pass on an environment
 * that loads the agent again in the new image, with the session's shared
 * area and pipe (probes.c's constructor takes them out again, so the new
 * image sees the environment it was given).  sonde then places the probes
 * again in the new image (src/probe/agent/agent_session.c, docs/PROBES.md "exec").
 * A child's exec (vfork, or after fork) is passed on as it is; so is an
 * exec with no session.  glibc's own internal calls (posix_spawn, system)
 * start other processes and are not followed. */
#include "rt/exec_args.h"
#include "rt/got.h"
#include "rt/rt.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

static execve_fn real_execve;
static execvpe_fn real_execvpe;
static fexecve_fn real_fexecve;

static void reals(void)
{
	if (!real_execve)
		real_execve = (execve_fn)dlsym(RTLD_NEXT, "execve");
	if (!real_execvpe)
		real_execvpe = (execvpe_fn)dlsym(RTLD_NEXT, "execvpe");
	if (!real_fexecve)
		real_fexecve = (fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
}

/* Whether the program at path would load the agent: a dynamically linked
 * ELF (PT_INTERP), or a script (its interpreter, most likely one).  A
 * static program, or one that cannot be read, gets the environment it was
 * given (the exec then does what it would without sonde). */
static int takes_agent(const char *path)
{
	if (!path)
		return 1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	Elf64_Ehdr eh;
	int yes = 0;
	ssize_t r = pread(fd, &eh, sizeof eh, 0);
	if (r >= 2 && !memcmp(&eh, "#!", 2))
		yes = 1;
	else if (r == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
	         eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 256)
		for (int i = 0; i < eh.e_phnum && !yes; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) != (ssize_t)sizeof ph)
				break;
			yes = ph.p_type == PT_INTERP;
		}
	close(fd);
	return yes;
}

/* execvp's search: the first executable file in PATH, into buf; NULL when none. */
static const char *search_path(const char *file, char *buf, size_t n)
{
	if (strchr(file, '/'))
		return file;
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	for (const char *p = path;; p++) {
		const char *e = strchr(p, ':');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (snprintf(buf, n, "%.*s%s%s", (int)l, p, l ? "/" : "", file) < (int)n && access(buf, X_OK) == 0)
			return buf;
		if (!e)
			return NULL;
		p = e;
	}
}

/* Runs the real exec fn with envp, or with the session's environment. */
#define FOLLOW(call_with, prog)                                             \
	do {                                                                    \
		reals();                                                            \
		char **env = NULL;                                                  \
		int fds[2];                                                         \
		if (takes_agent(prog) && rt_probes_exec_env(envp, &env, fds) == 0) { \
			int rc_ = call_with(env);                                       \
			int e_ = errno;                                                 \
			rt_probes_exec_undo(env, fds);                                  \
			errno = e_;                                                     \
			return rc_;                                                     \
		}                                                                   \
		return call_with((char **)envp);                                    \
	} while (0)

static int w_execve(const char *path, char *const argv[], char *const envp[])
{
#define CALL(E) (real_execve ? real_execve(path, argv, E) : (errno = ENOSYS, -1))
	FOLLOW(CALL, path);
#undef CALL
}

static int w_execvpe(const char *file, char *const argv[], char *const envp[])
{
#define CALL(E) (real_execvpe ? real_execvpe(file, argv, E) : (errno = ENOSYS, -1))
	char buf[4096];
	FOLLOW(CALL, search_path(file, buf, sizeof buf));
#undef CALL
}

static int w_fexecve(int fd, char *const argv[], char *const envp[])
{
#define CALL(E) (real_fexecve ? real_fexecve(fd, argv, E) : (errno = ENOSYS, -1))
	char buf[64];
	snprintf(buf, sizeof buf, "/proc/self/fd/%d", fd);
	FOLLOW(CALL, buf);
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
};

RT_HIDDEN int rt_exec_wrappers(const struct rt_got_sym **out)
{
	reals();
	*out = exec_wrappers;
	return (int)(sizeof exec_wrappers / sizeof exec_wrappers[0]);
}

/* exec_env.c — a launched recording survives the environments its tree
 * drops: the exec-family functions (and posix_spawn) are interposed by the
 * preloaded runtime, and an environment handed to them that lost sonde's
 * part (LD_PRELOAD without the runtime, SONDE_SESSION_FD and the other
 * SONDE_ variables of the start missing or changed: `env -i`, a shell that
 * clears LD_PRELOAD, a program that rebuilds its environment) gets it back,
 * so that the new image loads the runtime and joins the session
 * (docs/INSTRUMENTATION.md "Programs exec'd in the tree").
 *
 * Only where the runtime was preloaded (a launched record): an attached
 * runtime is dlopen'ed and does not interpose anything, and a process that
 * records nothing passes every call on as it is.  A vfork child calls these
 * too: no malloc, the new environment is built on the stack.  A program
 * that would not load the runtime anyway (static, set-uid) gets the
 * environment it was given, and its process is noted in the session as one
 * without functions, with the reason (sonde info).
 *
 * Left: libc's own internal spawns (system, popen) pass the program's
 * environ as it is, which keeps sonde's part unless the program dropped it
 * from environ itself. */
#include "rt/exec_args.h"
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
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                        char *const[], char *const[]);

static execve_fn real_execve, real_execvpe;
static spawn_fn real_spawn, real_spawnp;

/* sonde's part of the environment at the start: "SONDE_...=value" entries
 * (NUL-separated) and the runtime's path, for LD_PRELOAD. */
static char keep[2048];
static size_t keep_len;
static int nkeep;
static char rt_path[512];
static int keeping;

static void reals(void)
{
	if (!real_execve)
		real_execve = (execve_fn)dlsym(RTLD_NEXT, "execve");
	if (!real_execvpe)
		real_execvpe = (execve_fn)dlsym(RTLD_NEXT, "execvpe");
	if (!real_spawn)
		real_spawn = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
	if (!real_spawnp)
		real_spawnp = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawnp");
}

/* After the runtime's constructor mapped the session (priority 101). */
__attribute__((constructor(102))) static void exec_env_start(void)
{
	reals();
	Dl_info di;
	if (!rt_sess || !getenv(SONDE_ENV_FD) || !dladdr((void *)exec_env_start, &di) || !di.dli_fname ||
	    strlen(di.dli_fname) >= sizeof rt_path || strchr(di.dli_fname, ':'))
		return;
	strcpy(rt_path, di.dli_fname);
	for (char **e = environ; e && *e; e++) {
		size_t l = strlen(*e) + 1;
		if (strncmp(*e, "SONDE_", 6) || !strchr(*e, '=') || keep_len + l > sizeof keep)
			continue;
		memcpy(keep + keep_len, *e, l);
		keep_len += l;
		nkeep++;
	}
	keeping = 1;
}

/* Does the LD_PRELOAD value v hold the runtime's path as one of its entries? */
static int preloads_rt(const char *v)
{
	size_t n = strlen(rt_path);
	for (const char *p = v; *p;) {
		const char *e = p + strcspn(p, ": ");
		if ((size_t)(e - p) == n && !memcmp(p, rt_path, n))
			return 1;
		p = *e ? e + 1 : e;
	}
	return 0;
}

/* The entry of envp named like the keep entry k ("NAME=..."), or NULL. */
static char *const *find_var(char *const *envp, const char *k)
{
	size_t nl = (size_t)(strchr(k, '=') - k) + 1;
	for (char *const *e = envp; e && *e; e++)
		if (!strncmp(*e, k, nl))
			return e;
	return NULL;
}

/* Does envp need sonde's part back? */
static int needs_fix(char *const *envp)
{
	if (!keeping)
		return 0;
	char *const *pre = find_var(envp, "LD_PRELOAD=");
	if (!pre || !preloads_rt(*pre + 11))
		return 1;
	const char *k = keep;
	for (int i = 0; i < nkeep; i++, k += strlen(k) + 1) {
		char *const *v = find_var(envp, k);
		if (!v || strcmp(*v, k))
			return 1;
	}
	return 0;
}

#define ENV_MAX 65536 /* entries: an environment larger than this is passed on as it is */

static size_t env_count(char *const *envp)
{
	size_t n = 0;
	while (envp && envp[n] && n < ENV_MAX)
		n++;
	return n;
}

/* out (room for env_count(envp) + nkeep + 2): envp without its LD_PRELOAD
 * and the variables sonde keeps, then sonde's; pre: room for the new
 * LD_PRELOAD entry (the runtime first, then what the program had). */
static void fix_env(char *const *envp, char **out, char *pre, size_t pren)
{
	size_t k = 0;
	const char *old = NULL;
	for (char *const *e = envp; e && *e && k < ENV_MAX; e++) {
		if (!strncmp(*e, "LD_PRELOAD=", 11)) {
			old = *e + 11;
			continue;
		}
		int ours = 0;
		const char *kv = keep;
		for (int i = 0; i < nkeep && !ours; i++, kv += strlen(kv) + 1)
			ours = !strncmp(*e, kv, (size_t)(strchr(kv, '=') - kv) + 1);
		if (!ours)
			out[k++] = *e;
	}
	const char *kv = keep;
	for (int i = 0; i < nkeep; i++, kv += strlen(kv) + 1)
		out[k++] = (char *)kv;
	if (old && *old && !preloads_rt(old) && strlen(old) + strlen(rt_path) + 13 <= pren)
		snprintf(pre, pren, "LD_PRELOAD=%s:%s", rt_path, old);
	else if (old && preloads_rt(old) && strlen(old) + 12 <= pren)
		snprintf(pre, pren, "LD_PRELOAD=%s", old);
	else
		snprintf(pre, pren, "LD_PRELOAD=%s", rt_path);
	out[k++] = pre;
	out[k] = NULL;
}

RT_HIDDEN int rt_exec_loads_rt(const char *path, const char **why)
{
	struct stat st;
	if (!path || stat(path, &st) != 0)
		return 1;
	if (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) || ((st.st_mode & S_ISGID) && st.st_gid != getegid())) {
		*why = "set-uid";
		return 0;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	Elf64_Ehdr eh;
	int yes = 1;
	if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] != ELFCLASS64) {
		yes = 0; /* a 32-bit program: the loader would refuse the runtime, with a message */
		*why = NULL;
	} else if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	           eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 256) {
		yes = 0;
		for (int i = 0; i < eh.e_phnum && !yes; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) != (ssize_t)sizeof ph) {
				yes = 1;
				break;
			}
			yes = ph.p_type == PT_INTERP;
		}
		if (!yes)
			*why = "static";
	}
	close(fd);
	return yes;
}

/* The environment to exec path with: envp, or sonde's part put back into
 * out (the caller's stack arrays).  A program that will not load the runtime
 * is noted in the session (exec: it replaces this image; spawn: a child). */
#define WITH_ENV(path, envp, CALL, child)                                          \
	do {                                                                          \
		reals();                                                                  \
		const char *why_ = NULL;                                                  \
		if (keeping && !rt_exec_loads_rt(path, &why_)) {                                  \
			int slot_ = (child) ? -1 : rt_note_plain_exec(path, why_);           \
			int rc_ = CALL(envp);                                                 \
			int e_ = errno;                                                       \
			rt_unnote_plain_exec(slot_); /* the exec failed */                    \
			errno = e_;                                                           \
			return rc_;                                                           \
		}                                                                         \
		if (!needs_fix(envp) || env_count(envp) >= ENV_MAX)                       \
			return CALL(envp);                                                    \
		char *out_[env_count(envp) + (size_t)nkeep + 2];                          \
		char pre_[4096];                                                          \
		fix_env(envp, out_, pre_, sizeof pre_);                                   \
		return CALL(out_);                                                        \
	} while (0)

RT_HIDDEN const char *rt_exec_search_path(const char *file, char *buf, size_t n)
{
	if (!file || strchr(file, '/'))
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
			return file;
		p = e;
	}
}

RT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
#define CALL(E) (real_execve ? real_execve(path, argv, E) : (errno = ENOSYS, -1))
	WITH_ENV(path, envp, CALL, 0);
#undef CALL
}

RT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
#define CALL(E) (real_execvpe ? real_execvpe(file, argv, E) : (errno = ENOSYS, -1))
	char buf[4096];
	const char *path = rt_exec_search_path(file, buf, sizeof buf);
	WITH_ENV(path, envp, CALL, 0);
#undef CALL
}

RT_EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

RT_EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

RT_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                          const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
#define CALL(E) (real_spawn ? real_spawn(pid, path, fa, at, argv, E) : ENOSYS)
	WITH_ENV(path, envp, CALL, 1);
#undef CALL
}

RT_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
#define CALL(E) (real_spawnp ? real_spawnp(pid, file, fa, at, argv, E) : ENOSYS)
	char buf[4096];
	const char *path = rt_exec_search_path(file, buf, sizeof buf);
	WITH_ENV(path, envp, CALL, 1);
#undef CALL
}

RT_EXEC_L(RT_EXPORT, execl, execve, 0)
RT_EXEC_L(RT_EXPORT, execlp, execvpe, 0)
RT_EXEC_L(RT_EXPORT, execle, execve, 1)

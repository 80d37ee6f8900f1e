/* exec_args.h — execl, execlp and execle as the runtime's interpositions
 * define them (exec_env.c: sonde's environment kept across an exec;
 * exec_follow.c: a late-loaded runtime's session kept): the arguments counted, then put in an
 * array on the stack (no malloc: a vfork child calls these too), then the
 * vector form CALL(where, argv, envp). */
#ifndef SONDE_RT_EXEC_ARGS_H
#define SONDE_RT_EXEC_ARGS_H

#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#define RT_EXEC_ARGS_MAX 65536

static inline int rt_exec_count_args(const char *arg0, va_list ap)
{
	int n = 1;
	while (arg0 && n < RT_EXEC_ARGS_MAX && va_arg(ap, char *))
		n++;
	return n;
}

/* DECL: the function's linkage (RT_EXPORT, static); WITH_ENVP: execle's
 * environment after the list's NULL. */
#define RT_EXEC_L(DECL, NAME, CALL, WITH_ENVP)                              \
	DECL int NAME(const char *where, const char *arg, ...)                  \
	{                                                                       \
		va_list ap, cp;                                                     \
		va_start(ap, arg);                                                  \
		va_copy(cp, ap);                                                    \
		int n = rt_exec_count_args(arg, cp);                                \
		va_end(cp);                                                         \
		if (n >= RT_EXEC_ARGS_MAX) {                                        \
			va_end(ap);                                                     \
			errno = E2BIG;                                                  \
			return -1;                                                      \
		}                                                                   \
		char *argv[n + 1];                                                  \
		argv[0] = (char *)arg;                                              \
		for (int i = 1; i < n; i++)                                         \
			argv[i] = va_arg(ap, char *);                                   \
		argv[n] = NULL;                                                     \
		char **envp = environ;                                              \
		if (WITH_ENVP) {                                                    \
			if (n > 1 || argv[0])                                           \
				(void)va_arg(ap, char *); /* the NULL that ends the list */ \
			envp = va_arg(ap, char **);                                     \
		}                                                                   \
		va_end(ap);                                                         \
		return CALL(where, argv, envp);                                     \
	}

#endif

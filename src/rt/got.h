/* got.h — redirecting imported functions through the GOT of every loaded
 * object, for the agent of `sonde record -p` (got.c, docs/ATTACH.md).
 * Internal to src/rt/. */
#ifndef SONDE_RT_GOT_H
#define SONDE_RT_GOT_H

/* One function to redirect: calls of `name` go to `to` instead. */
struct rt_got_sym {
	const char *name;
	void *to;
};

/* The groups of functions redirected, each restored on its own. */
enum rt_got_group {
	RT_GOT_UNWIND, /* the C++ unwinder's entry points (unwind.c): kept after the end */
	RT_GOT_LOCKS,  /* the lock functions (locks.c), --locks */
	RT_GOT_EXEC,   /* the exec functions and posix_spawn, while a probe session or an attached recording runs (exec_follow.c) */
	RT_GOT_SIGNALS, /* sigaction and signal (signals.c), while a recording runs */
	RT_GOT_SYSCALLS, /* the system-call wrappers (syscalls.c), --syscalls -p */
	RT_GOT_NGROUPS
};

/* Adds a group to redirect at rt_got_redirect: syms must stay valid for
 * the life of the process.  Before rt_got_redirect only. */
void rt_got_add(enum rt_got_group g, const struct rt_got_sym *syms, int n);

/* Redirect the groups added in every loaded object but the runtime, the
 * dynamic loader and the vDSO (GLOB_DAT and JUMP_SLOT entries of undefined
 * symbols), and dlopen/dlmopen too, so that objects loaded later are
 * redirected as soon as their dlopen returns.  Once per process.  Returns how
 * many GOT entries now point at the redirections (>= 0). */
int rt_got_redirect(void);

/* Put back every entry of group g changed (of objects still loaded, whose
 * entry still holds what was written); when no group is left, stop
 * redirecting new objects.  A fork child puts back at once every group but
 * RT_GOT_UNWIND (its stacks keep the frames the unwinder must not meet). */
void rt_got_restore(enum rt_got_group g);

/* A later session of the agent (agent.c), once no frame is hooked any more
 * (rt_session_retire): the unwinder's and the lock functions' entries put
 * back, and, when no group is left (a probe session's RT_GOT_EXEC may be),
 * every object forgotten so that rt_got_add and rt_got_redirect work again.
 * 0, or -1 when a group is still redirected (nothing can be added now). */
int rt_got_reset(void);

/* Objects with at least one entry of group g redirected (the agent's answer). */
int rt_got_objects(enum rt_got_group g);

/* fn is called after each dlopen/dlmopen of the program that returned an
 * object, once its entries are redirected (instr.c: the libraries of
 * `record --module` that the program opens late).  No lock of got.c held. */
void rt_got_on_dlopen(void (*fn)(void));

#endif

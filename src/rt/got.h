/* got.h — redirecting imported functions through the GOT of every loaded
 * object, for the agent of `sonde record --locks -p` (got.c, docs/ATTACH.md).
 * Internal to src/rt/. */
#ifndef SONDE_RT_GOT_H
#define SONDE_RT_GOT_H

/* One function to redirect: calls of `name` go to `to` instead. */
struct rt_got_sym {
	const char *name;
	void *to;
};

/* Redirect syms[0..n) in every loaded object but the runtime, the dynamic
 * loader and the vDSO (GLOB_DAT and JUMP_SLOT entries of undefined symbols),
 * and dlopen/dlmopen too, so that objects loaded later are redirected as soon
 * as their dlopen returns.  syms must stay valid until rt_got_restore.
 * Returns how many GOT entries now point at the redirections (>= 0). */
int rt_got_redirect(const struct rt_got_sym *syms, int n);

/* Put back every entry changed (of objects still loaded, whose entry still
 * holds what was written) and stop redirecting new objects.  Once. */
void rt_got_restore(void);

/* Objects and entries redirected so far (for the agent's answer). */
int rt_got_objects(void);

#endif

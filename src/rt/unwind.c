/* unwind.c — C++ exceptions through hooked frames.
 *
 * The unwinder finds each frame's caller through its return address; in a
 * hooked frame that is rt_exit_tramp's, which has no unwind information, so
 * an exception would stop there (std::terminate).  As uftrace does: before an
 * exception is raised (or rethrown) the real return addresses are put back
 * into every hooked slot of the thread, the frames marked UNHOOKED; when a
 * handler catches it (__cxa_begin_catch, called by the catching frame), the
 * frames below the catcher are closed (the exception ended them) and the
 * survivors are hooked again.  Cleanup code run on the way (destructors)
 * hooks and unhooks its own calls as usual.
 *
 * A cleanup may itself throw and catch an exception (a destructor run by the
 * unwinding calls code that does): that inner catch hooks every frame again,
 * the frames the outer unwinding has still to pass included.  So when a
 * cleanup hands the exception back to the unwinder (_Unwind_Resume, at the
 * end of every landing pad that does not catch), the real return addresses
 * are put back again.
 *
 * Not covered: unwinding that does not call these entry points through the
 * PLT — glibc's pthread_exit / pthread_cancel reach libgcc_s directly, so
 * their forced unwind stops at the first hooked frame (the thread still
 * exits; cleanup handlers above that frame do not run) — and backtrace(),
 * which stops at the first hooked frame. */
#include <dlfcn.h>
#include <stdatomic.h>

#include "common/clock.h"
#include "rt/rt.h"

/* hook = 0: put every real return address back (an exception is about to
 * unwind).  hook = 1: the catching frame's stack pointer is above `sp`:
 * close the frames below it, and hook the survivors again. */
static void set_hooks(int hook, uintptr_t sp)
{
	struct rt_tls *L = &rt_tls;
	if (L->state != RT_T_ON)
		return;
	struct sonde_thread *t = L->t;
	uint32_t busy = L->busy;
	L->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	if (hook)
		rt_close_below(L, t, sp, clock_ticks());
	for (uint32_t i = t->depth; i-- > 0;) {
		struct sonde_frame *f = &t->stack[i];
		uintptr_t *slot = (uintptr_t *)(uintptr_t)f->slot;
		if (!hook && !(f->flags & SONDE_FRAME_UNHOOKED)) {
			*slot = f->site;
			f->flags |= SONDE_FRAME_UNHOOKED;
		} else if (hook && (f->flags & SONDE_FRAME_UNHOOKED)) {
			if (*slot == f->site)
				*slot = (uintptr_t)rt_exit_tramp;
			f->flags &= ~SONDE_FRAME_UNHOOKED;
		}
	}
	atomic_signal_fence(memory_order_seq_cst);
	L->busy = busy;
}

typedef int (*unwind_fn)(void *);
typedef void *(*catch_fn)(void *);
#define REAL(type, name)                      \
	static type real;                     \
	if (!real)                            \
		real = (type)dlsym(RTLD_NEXT, name)

RT_EXPORT int _Unwind_RaiseException(void *exc)
{
	REAL(unwind_fn, "_Unwind_RaiseException");
	set_hooks(0, 0);
	return real ? real(exc) : 5 /* _URC_FATAL_PHASE1_ERROR */;
}

RT_EXPORT int _Unwind_Resume_or_Rethrow(void *exc)
{
	REAL(unwind_fn, "_Unwind_Resume_or_Rethrow");
	set_hooks(0, 0);
	return real ? real(exc) : 5;
}

typedef void (*resume_fn)(void *);
RT_EXPORT void _Unwind_Resume(void *exc)
{
	REAL(resume_fn, "_Unwind_Resume");
	set_hooks(0, 0);
	if (real)
		real(exc);
	__builtin_trap(); /* _Unwind_Resume does not return */
}

RT_EXPORT void *__cxa_begin_catch(void *exc)
{
	REAL(catch_fn, "__cxa_begin_catch");
	void *r = real ? real(exc) : NULL;
	/* Our return address's slot is just below the catching frame. */
	set_hooks(1, (uintptr_t)__builtin_frame_address(0) + 16);
	return r;
}

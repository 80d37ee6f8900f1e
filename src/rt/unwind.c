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
 * Attached (`sonde record -p`, agent.c), the runtime was loaded late and
 * does not win these symbols: the agent redirects them through the GOT of
 * every object (got.c; libstdc++'s own GOT for __cxa_throw's and
 * __cxa_rethrow's calls, the program's for its landing pads' _Unwind_Resume
 * and its handlers' __cxa_begin_catch).  After the agent's end the shadow
 * stacks are no longer kept (rt_exit_ended), but frames open at the end
 * still return through the trampoline: the entries stay redirected for the
 * life of the process, and an exception then unhooks, for good, every slot
 * of its thread that still holds the trampoline (hooked frames returning
 * later return straight to their callers; nothing is recorded any more).
 *
 * The probe agent's return-address replacement (probes.c) is undone the
 * same way before each of these (rt_probes_unhook): those calls' returns
 * are then not timed.
 *
 * The other walks of the program's own stack (backtrace, _Unwind_Backtrace,
 * pthread_exit's and pthread_cancel's forced unwinding, which reach libgcc_s
 * without these entry points) are observe.c's; the frames a thread's
 * unwinding leaves, and coroutines' stacks, context.c's. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "common/clock.h"
#include "rt/got.h"
#include "rt/rt.h"

/* After the agent's end: the slots of this thread that still hold the
 * trampoline get their real return addresses back.  The shadow stack keeps
 * the frames open at the end (returned ones too); the topmost frame with a
 * slot has its real return address (rt_exit_ended), and a slot that holds
 * the trampoline is that of a frame still open (no frame is hooked after the
 * end, and a frame pushed later than another has a deeper slot, or the same
 * one with the same return address: a tail call). */
static void unhook_ended(struct sonde_thread *t)
{
	for (uint32_t i = t->depth; i-- > 0;) {
		uintptr_t *slot = (uintptr_t *)(uintptr_t)t->stack[i].slot;
		if (rt_is_exit_tramp(__atomic_load_n(slot, __ATOMIC_RELAXED)))
			__atomic_store_n(slot, t->stack[i].site, __ATOMIC_RELAXED);
	}
}

/* hook = 0: put every real return address back (an exception is about to
 * unwind), but those of dead frames (an unwinding that left them and runs a
 * cleanup now, a longjmp): below `sp`, the wrapper's own frame, or whose
 * slot no longer holds the trampoline.  Their slots may be live memory now:
 * a cleanup's call of _Unwind_Resume puts its return address where the
 * return address of the call the unwinding left was (clang -O2,
 * tests/progs/selfsame.cpp), and writing that call's into it resumed the
 * unwinding at the same cleanup again.  hook = 1: the catching
 * frame's stack pointer is above `sp`: close the frames below it, and hook
 * the survivors again. */
static void set_hooks(int hook, uintptr_t sp)
{
	struct rt_tls *L = &rt_tls;
	if (L->state != RT_T_ON)
		return;
	struct sonde_thread *t = L->t;
	if (__atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE)) {
		if (!hook)
			unhook_ended(t);
		return; /* a catch hooks nothing again */
	}
	struct rt_altstack alt = { 0 };
	rt_busy_in(L);
	atomic_signal_fence(memory_order_seq_cst);
	if (hook)
		rt_close_below(L, t, sp, clock_ticks());
	for (uint32_t i = t->depth; i-- > 0;) {
		struct sonde_frame *f = &t->stack[i];
		uintptr_t *slot = (uintptr_t *)(uintptr_t)f->slot;
		if (!hook && ((f->slot < sp && rt_slot_dead(&alt, sp, f->slot)) || !rt_is_exit_tramp(*slot)))
			continue; /* dead, its slot maybe reused (the wrapper's own return address) */
		if (!hook && !(f->flags & SONDE_FRAME_UNHOOKED)) {
			*slot = f->site;
			f->flags |= SONDE_FRAME_UNHOOKED;
		} else if (hook && (f->flags & SONDE_FRAME_UNHOOKED)) {
			if (*slot == f->site)
				*slot = rt_exit_tramp_for(f->flags);
			f->flags &= ~SONDE_FRAME_UNHOOKED;
		}
	}
	atomic_signal_fence(memory_order_seq_cst);
	rt_busy_out(L);
}

/* The real entry point: the next definition after the runtime's (a
 * preloaded runtime); loaded late, the runtime's own scope does not hold
 * libgcc_s or libstdc++: the global scope's, else that of the library
 * (loaded RTLD_LOCAL by a plugin, say).  Never our own. */
RT_HIDDEN void *rt_real_sym(void **cache, const char *name, void *self, const char *lib)
{
	void *p = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
	if (p)
		return p;
	p = dlsym(RTLD_NEXT, name);
	if (!p || p == self)
		p = dlsym(RTLD_DEFAULT, name);
	if (p == self)
		p = NULL;
	if (!p) {
		void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			p = dlsym(h, name);
			dlclose(h);
		}
		if (p == self)
			p = NULL;
	}
	dlerror();
	if (p)
		__atomic_store_n(cache, p, __ATOMIC_RELEASE);
	return p;
}

typedef int (*unwind_fn)(void *);
typedef void (*resume_fn)(void *);
typedef void *(*catch_fn)(void *);
static void *real_raise, *real_rethrow, *real_resume, *real_catch;
RT_HIDDEN int uw_raise(void *);
RT_HIDDEN int uw_rethrow(void *);
RT_HIDDEN void uw_resume(void *);
RT_HIDDEN void *uw_catch(void *);
#define REAL(type, cache, name, self, lib) ((type)rt_real_sym(&cache, name, (void *)self, lib))

RT_EXPORT int _Unwind_RaiseException(void *exc)
{
	unwind_fn real = REAL(unwind_fn, real_raise, "_Unwind_RaiseException", uw_raise, "libgcc_s.so.1");
	set_hooks(0, (uintptr_t)__builtin_frame_address(0));
	rt_probes_unhook();
	return real ? real(exc) : 5 /* _URC_FATAL_PHASE1_ERROR */;
}

RT_EXPORT int _Unwind_Resume_or_Rethrow(void *exc)
{
	unwind_fn real =
	        REAL(unwind_fn, real_rethrow, "_Unwind_Resume_or_Rethrow", uw_rethrow, "libgcc_s.so.1");
	set_hooks(0, (uintptr_t)__builtin_frame_address(0));
	rt_probes_unhook();
	return real ? real(exc) : 5;
}

RT_EXPORT void _Unwind_Resume(void *exc)
{
	resume_fn real = REAL(resume_fn, real_resume, "_Unwind_Resume", uw_resume, "libgcc_s.so.1");
	set_hooks(0, (uintptr_t)__builtin_frame_address(0));
	rt_probes_unhook();
	if (real)
		real(exc);
	__builtin_trap(); /* _Unwind_Resume does not return */
}

RT_EXPORT void *__cxa_begin_catch(void *exc)
{
	catch_fn real = REAL(catch_fn, real_catch, "__cxa_begin_catch", uw_catch, "libstdc++.so.6");
	void *r = real ? real(exc) : NULL;
	/* Our return address's slot is just below the catching frame. */
	set_hooks(1, (uintptr_t)__builtin_frame_address(0) + 16);
	return r;
}

/* Their addresses in this object: the exported names, referred to from
 * here, could be bound to libgcc_s's (no -Bsymbolic). */
RT_HIDDEN int uw_raise(void *) __attribute__((alias("_Unwind_RaiseException")));
RT_HIDDEN int uw_rethrow(void *) __attribute__((alias("_Unwind_Resume_or_Rethrow")));
RT_HIDDEN void uw_resume(void *) __attribute__((alias("_Unwind_Resume")));
RT_HIDDEN void *uw_catch(void *) __attribute__((alias("__cxa_begin_catch")));

/* The agent's redirections (got.c): the real entry points resolved now, those
 * that can be (a program that loads libstdc++ later resolves them at its
 * first exception). */
static const struct rt_got_sym unwind_wrappers[] = {
	{ "_Unwind_RaiseException", (void *)uw_raise },
	{ "_Unwind_Resume_or_Rethrow", (void *)uw_rethrow },
	{ "_Unwind_Resume", (void *)uw_resume },
	{ "__cxa_begin_catch", (void *)uw_catch },
};

RT_HIDDEN int rt_unwind_wrappers(const struct rt_got_sym **out)
{
	REAL(void *, real_raise, "_Unwind_RaiseException", uw_raise, "libgcc_s.so.1");
	REAL(void *, real_rethrow, "_Unwind_Resume_or_Rethrow", uw_rethrow, "libgcc_s.so.1");
	REAL(void *, real_resume, "_Unwind_Resume", uw_resume, "libgcc_s.so.1");
	REAL(void *, real_catch, "__cxa_begin_catch", uw_catch, "libstdc++.so.6");
	/* and those of observe.c (backtrace, pthread_exit, libgcc_s's FDE
	 * lookup), context.c (swapcontext, thread_local destructors) and
	 * dlcall.c (dlsym) */
	static struct rt_got_sym all[sizeof unwind_wrappers / sizeof unwind_wrappers[0] + 12];
	int n = (int)(sizeof unwind_wrappers / sizeof unwind_wrappers[0]);
	const struct rt_got_sym *more[3];
	int nmore[3] = { rt_observe_wrappers(&more[0]), rt_context_wrappers(&more[1]), rt_dlcall_wrappers(&more[2]) };
	memcpy(all, unwind_wrappers, sizeof unwind_wrappers);
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < nmore[k] && n < (int)(sizeof all / sizeof all[0]); i++)
			all[n++] = more[k][i];
	*out = all;
	return n;
}

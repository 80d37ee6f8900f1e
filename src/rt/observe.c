/* observe.c — what a recorded program sees of its own stack is what it sees
 * unrecorded.
 *
 * While a hooked call runs, its return address slot holds rt_exit_tramp's
 * address (hooks.c), and an unwinder walking the stack meets that address
 * where the caller's should be: it has no unwind information there and the
 * walk stops.  As for C++ exceptions (unwind.c), the entry points through
 * which a program walks or unwinds its own stack put the real return
 * addresses back for their duration, as uftrace does:
 *  - backtrace(): glibc's reaches libgcc_s through pointers it took at its
 *    dlopen, so interposing _Unwind_Backtrace does not catch it.  This one
 *    is glibc 2.36's own (debug/backtrace.c), on libgcc_s's entry points,
 *    between putting the return addresses back and hooking them again.
 *  - _Unwind_Backtrace (libstdc++'s <stacktrace>, libbacktrace, abseil):
 *    the same, the callback never seeing this wrapper's frame.
 *  - pthread_exit and _Unwind_ForcedUnwind: the thread unwinds to its end;
 *    the return addresses are put back for good (the frames the unwinding
 *    left are closed at the thread's first thread-local or TSD destructor:
 *    context.c, runtime.c's thread_end).
 *  - _Unwind_Find_FDE, which libgcc_s calls through its PLT for every frame
 *    of every walk (and so whoever entered it: pthread_cancel's unwinding,
 *    which glibc starts from its own code through a pointer, is reached by
 *    nothing else): for a pc in an exit trampoline, an FDE made for the
 *    calling thread whose return address rule finds the real one in the
 *    thread's shadow stack (a DWARF expression searching it for the slot
 *    just below the frame's CFA).  The walk then shows one more frame, the
 *    trampoline's, and goes on to the real caller.  At every instruction
 *    of the trampolines, and so from a signal handler that interrupted
 *    them or the exit hook they call (a sampling profiler's backtrace, an
 *    asynchronous cancellation).
 * Frames whose slot lies below the caller's stack pointer are dead (a
 * longjmp left them; rt_slot_dead: not those a signal handler on an
 * alternate stack interrupted); their slots may be live memory now and are
 * not written.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/instr_abi.h"
#include "rt/got.h"
#include "rt/rt.h"

/* Put back the real return address of every live hooked frame of this
 * thread (slot at or above sp, or on another stack: rt_slot_dead).  Returns 1 if some
 * frame was unhooked (show_hooks puts them back), 0 otherwise. */
static int show_real(uintptr_t sp)
{
	struct rt_tls *L = &rt_tls;
	if (L->state != RT_T_ON)
		return 0;
	struct sonde_thread *t = L->t;
	int ended = __atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE), any = 0;
	struct rt_altstack alt = { 0 };
	rt_busy_in(L);
	atomic_signal_fence(memory_order_seq_cst);
	for (uint32_t i = t->depth; i-- > 0;) {
		struct sonde_frame *f = &t->stack[i];
		if (f->slot < sp && rt_slot_dead(&alt, sp, f->slot))
			continue; /* dead */
		uintptr_t *slot = (uintptr_t *)(uintptr_t)f->slot;
		if (ended) { /* as unwind.c's unhook_ended: for good, hooking nothing again */
			if (rt_is_exit_tramp(__atomic_load_n(slot, __ATOMIC_RELAXED)))
				__atomic_store_n(slot, f->site, __ATOMIC_RELAXED);
			continue;
		}
		if (!(f->flags & SONDE_FRAME_UNHOOKED) && rt_is_exit_tramp(*slot)) {
			*slot = f->site;
			f->flags |= SONDE_FRAME_UNHOOKED;
			any = 1;
		}
	}
	atomic_signal_fence(memory_order_seq_cst);
	rt_busy_out(L);
	return any;
}

/* Hook again the frames show_real unhooked (those still holding their real
 * return address). */
static void show_hooks(void)
{
	struct rt_tls *L = &rt_tls;
	if (L->state != RT_T_ON || __atomic_load_n(&rt_agent_ended, __ATOMIC_ACQUIRE))
		return;
	struct sonde_thread *t = L->t;
	rt_busy_in(L);
	atomic_signal_fence(memory_order_seq_cst);
	for (uint32_t i = t->depth; i-- > 0;) {
		struct sonde_frame *f = &t->stack[i];
		if (!(f->flags & SONDE_FRAME_UNHOOKED))
			continue;
		uintptr_t *slot = (uintptr_t *)(uintptr_t)f->slot;
		if (*slot == f->site)
			*slot = rt_exit_tramp_for(f->flags);
		f->flags &= ~SONDE_FRAME_UNHOOKED;
	}
	atomic_signal_fence(memory_order_seq_cst);
	rt_busy_out(L);
}

/* libgcc_s's entry points.  glibc loads it on demand too (RTLD_LOCAL); so
 * do we, once, if nobody has. */
typedef int (*trace_fn)(void *ctx, void *arg);
static void *real_bt, *real_getip, *real_getcfa, *real_forced, *real_find, *real_pexit;
RT_HIDDEN int obs_unwind_backtrace(trace_fn fn, void *arg);
RT_HIDDEN int obs_forced_unwind(void *exc, void *stop, void *arg);
RT_HIDDEN const void *obs_find_fde(void *pc, void *bases);

static void *gcc_sym(void **cache, const char *name, void *self)
{
	void *p = rt_real_sym(cache, name, self, "libgcc_s.so.1");
	if (!p) {
		void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
		if (h) /* kept loaded, as glibc keeps its own */
			p = rt_real_sym(cache, name, self, "libgcc_s.so.1");
	}
	return p;
}

/* glibc 2.36's debug/backtrace.c, on the real entry points. */
struct bt_arg {
	void **array;
	uintptr_t (*getip)(void *);
	uintptr_t (*getcfa)(void *);
	uintptr_t cfa;
	int cnt, size;
};

static int bt_helper(void *ctx, void *a)
{
	struct bt_arg *arg = a;
	/* First called with the frame of backtrace itself: skipped. */
	if (arg->cnt != -1) {
		arg->array[arg->cnt] = (void *)arg->getip(ctx);
		uintptr_t cfa = arg->getcfa(ctx);
		if (arg->cnt > 0 && arg->array[arg->cnt - 1] == arg->array[arg->cnt] && cfa == arg->cfa)
			return 5; /* _URC_END_OF_STACK: no progress */
		arg->cfa = cfa;
	}
	if (++arg->cnt == arg->size)
		return 5;
	return 0; /* _URC_NO_REASON */
}

RT_EXPORT __attribute__((noinline)) int backtrace(void **array, int size)
{
	struct bt_arg arg = { array, NULL, NULL, 0, -1, size };
	if (size <= 0)
		return 0;
	typedef int (*ub_fn)(trace_fn, void *);
	ub_fn ub = (ub_fn)gcc_sym(&real_bt, "_Unwind_Backtrace", (void *)obs_unwind_backtrace);
	arg.getip = (uintptr_t(*)(void *))gcc_sym(&real_getip, "_Unwind_GetIP", NULL);
	arg.getcfa = (uintptr_t(*)(void *))gcc_sym(&real_getcfa, "_Unwind_GetCFA", NULL);
	if (!ub || !arg.getip || !arg.getcfa)
		return 0;
	int undo = show_real((uintptr_t)__builtin_frame_address(0));
	ub(bt_helper, &arg);
	if (undo)
		show_hooks();
	/* _Unwind_Backtrace puts a NULL address above _start. */
	if (arg.cnt > 1 && arg.array[arg.cnt - 1] == NULL)
		--arg.cnt;
	return arg.cnt != -1 ? arg.cnt : 0;
}

/* _Unwind_Backtrace: the caller's callback never sees this frame. */
struct ub_arg {
	trace_fn fn;
	void *arg;
	int skip;
};

static int ub_helper(void *ctx, void *a)
{
	struct ub_arg *u = a;
	if (u->skip) {
		u->skip = 0;
		return 0;
	}
	return u->fn(ctx, u->arg);
}

RT_EXPORT __attribute__((noinline)) int _Unwind_Backtrace(trace_fn fn, void *arg)
{
	typedef int (*ub_fn)(trace_fn, void *);
	ub_fn ub = (ub_fn)gcc_sym(&real_bt, "_Unwind_Backtrace", (void *)obs_unwind_backtrace);
	if (!ub)
		return 3; /* _URC_FATAL_PHASE2_ERROR */
	struct ub_arg u = { fn, arg, 1 };
	int undo = show_real((uintptr_t)__builtin_frame_address(0));
	int rc = ub(ub_helper, &u);
	if (undo)
		show_hooks();
	return rc;
}

RT_EXPORT int _Unwind_ForcedUnwind(void *exc, void *stop, void *stop_arg)
{
	typedef int (*fu_fn)(void *, void *, void *);
	fu_fn fu = (fu_fn)gcc_sym(&real_forced, "_Unwind_ForcedUnwind", (void *)obs_forced_unwind);
	if (!fu)
		return 3;
	int undo = show_real((uintptr_t)__builtin_frame_address(0));
	int rc = fu(exc, stop, stop_arg);
	if (undo) /* returned: it did not unwind */
		show_hooks();
	return rc;
}

RT_EXPORT __attribute__((noreturn)) void pthread_exit(void *ret)
{
	typedef void (*pe_fn)(void *);
	pe_fn pe = (pe_fn)rt_real_sym(&real_pexit, "pthread_exit", NULL, "libc.so.6");
	/* The thread unwinds to its end: the real return addresses for good
	 * (its frames close when the unwinding is over: context.c's tls_marker,
	 * runtime.c's thread_end). */
	show_real((uintptr_t)__builtin_frame_address(0));
	if (pe)
		pe(ret);
	__builtin_trap();
}

/* _Unwind_Find_FDE.  libgcc asks for the FDE of pc = return address - 1
 * (the byte before rt_exit_tramp: hooks.c keeps it padding; or the call of
 * the exit hook, a signal having interrupted the hook) or, for a frame a
 * signal interrupted, of the instruction it stopped at.  Every instruction
 * of both trampolines has its rules (tramp_steps below: the frame's CFA is
 * one past the slot, the stack pointer plus what the trampoline pushed);
 * until the exit hook has returned it, the real return address is found in
 * this thread's shadow stack (around the hook's call, also in the entry
 * just past its top: ra_expr_at's fallback):
 *
 *	[cfa] dup lit8 minus                           [c s]      s = the slot
 *	      const8u &t->depth deref_size 4           [c s d]
 *	loop: dup bra(+4) lit0 skip(end)               not found: return 0
 *	      lit1 minus                               [c s i]
 *	      dup const2u sizeof mul const8u &stack plus  [c s i p]  p = &stack[i]
 *	      dup plus_uconst slot deref pick 3 eq bra(found)
 *	      drop skip(loop)                          [c s i]
 *	found: plus_uconst site deref                  [c s i ra]
 * (c, the CFA left at the bottom: libgcc's DW_OP_pick cannot reach the
 * bottom entry)
 *	end:
 *
 * The CIE and FDE are built once per thread (the addresses are this
 * thread's), in its private tables. */
struct eh_bases {
	void *tbase, *dbase, *func;
};

static uint8_t *put_u8(uint8_t *p, uint8_t v) { *p++ = v; return p; }
static uint8_t *put_u16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); return p + 2; }
static uint8_t *put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); return p + 4; }
static uint8_t *put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); return p + 8; }

enum {
	OP_const1u = 0x08, OP_const2u = 0x0a, OP_const8u = 0x0e, OP_dup = 0x12, OP_drop = 0x13, OP_pick = 0x15,
	OP_minus = 0x1c, OP_mul = 0x1e, OP_plus = 0x22, OP_plus_uconst = 0x23, OP_bra = 0x28, OP_eq = 0x29,
	OP_skip = 0x2f, OP_lit0 = 0x30, OP_deref = 0x06, OP_deref_size = 0x94,
	CFA_def_cfa = 0x0c, CFA_val_expression = 0x16, REG_RSP = 7, REG_RA = 16,
};
#define OP_lit(n) ((uint8_t)(OP_lit0 + (n)))

static uint8_t *put_rel(uint8_t *p, uint8_t op, const uint8_t *target)
{
	p = put_u8(p, op);
	return put_u16(p, (uint16_t)(int16_t)(target - (p + 2)));
}

/* [.. i] -> [.. &stack[i] (slot == the entry `pick` deep below)]: the
 * address of shadow-stack entry i, and whether its slot is the one sought. */
static uint8_t *put_frame_slot_eq(uint8_t *p, struct sonde_thread *t, uint8_t pick)
{
	p = put_u8(p, OP_const2u);
	p = put_u16(p, (uint16_t)sizeof(struct sonde_frame));
	p = put_u8(p, OP_mul);
	p = put_u8(p, OP_const8u);
	p = put_u64(p, (uintptr_t)&t->stack[0]);
	p = put_u8(p, OP_plus);
	p = put_u8(p, OP_dup);
	p = put_u8(p, OP_plus_uconst);
	p = put_u8(p, (uint8_t)offsetof(struct sonde_frame, slot));
	p = put_u8(p, OP_deref);
	p = put_u8(p, OP_pick);
	p = put_u8(p, pick);
	return put_u8(p, OP_eq);
}

/* The expression into b; found / end / fb: the offsets of those labels (a
 * first pass with zeros measures them).  With `fallback`, a slot found
 * nowhere in the shadow stack is looked for in the entry just past its top:
 * the frame the exit hook has just closed, while it has not returned yet
 * (it only lowers the depth; tail callers that close with it have the same
 * slot and return address).  Only for the instructions around the hook's
 * call.  Its length. */
static size_t ra_expr_at(uint8_t *b, struct sonde_thread *t, int fallback, size_t *found_at, size_t *end_at,
                         size_t *fb_at)
{
	uint8_t *p = b, *loop;
	p = put_u8(p, OP_dup); /* libgcc's DW_OP_pick never reaches the bottom entry */
	p = put_u8(p, OP_lit(8));
	p = put_u8(p, OP_minus);
	p = put_u8(p, OP_const8u);
	p = put_u64(p, (uintptr_t)&t->depth);
	p = put_u8(p, OP_deref_size);
	p = put_u8(p, 4);
	loop = p;
	p = put_u8(p, OP_dup);
	p = put_rel(p, OP_bra, p + 3 + 1 + 3);
	p = put_u8(p, OP_lit0); /* not found: 0, or (fallback) below */
	p = put_rel(p, OP_skip, b + (fallback ? *fb_at : *end_at));
	p = put_u8(p, OP_lit(1));
	p = put_u8(p, OP_minus);
	p = put_u8(p, OP_dup);
	p = put_frame_slot_eq(p, t, 3);
	p = put_rel(p, OP_bra, b + *found_at);
	p = put_u8(p, OP_drop);
	p = put_rel(p, OP_skip, loop);
	if (fallback) { /* [c s 0 0] */
		*fb_at = (size_t)(p - b);
		p = put_u8(p, OP_drop);
		p = put_u8(p, OP_drop); /* [c s] */
		p = put_u8(p, OP_const8u);
		p = put_u64(p, (uintptr_t)&t->depth);
		p = put_u8(p, OP_deref_size);
		p = put_u8(p, 4);
		p = put_frame_slot_eq(p, t, 2); /* p = &stack[depth] */
		p = put_rel(p, OP_bra, b + *found_at);
		p = put_u8(p, OP_lit0);
		p = put_rel(p, OP_skip, b + *end_at);
	}
	*found_at = (size_t)(p - b);
	p = put_u8(p, OP_plus_uconst);
	p = put_u8(p, (uint8_t)offsetof(struct sonde_frame, site));
	p = put_u8(p, OP_deref);
	*end_at = (size_t)(p - b);
	return (size_t)(p - b);
}

static size_t ra_expr(uint8_t *b, struct sonde_thread *t, int fallback)
{
	size_t found = 0, end = 0, fb = 0;
	ra_expr_at(b, t, fallback, &found, &end, &fb);
	return ra_expr_at(b, t, fallback, &found, &end, &fb);
}

/* The value in the slot (CFA - 8), unless it is an exit trampoline's (the
 * entry hook has hooked the frame): then ra_expr's.
 *	[c] dup lit8 minus deref                       [c v]
 *	    dup const8u tramp eq bra(L)
 *	    dup const8u tramp_full eq bra(L) skip(end) v
 *	L:  drop                                       [c] ra_expr
 *	end: */
static size_t ra_expr_slot(uint8_t *b, struct sonde_thread *t)
{
	uint8_t *p = b, *L = b + 4 + 2 * 14 + 3;
	p = put_u8(p, OP_dup);
	p = put_u8(p, OP_lit(8));
	p = put_u8(p, OP_minus);
	p = put_u8(p, OP_deref);
	for (int k = 0; k < 2; k++) {
		p = put_u8(p, OP_dup);
		p = put_u8(p, OP_const8u);
		p = put_u64(p, k ? (uintptr_t)rt_exit_tramp_full : (uintptr_t)rt_exit_tramp);
		p = put_u8(p, OP_eq);
		p = put_rel(p, OP_bra, L);
	}
	size_t n = ra_expr(L + 1, t, 0);
	p = put_rel(p, OP_skip, L + 1 + n);
	p = put_u8(p, OP_drop); /* at L */
	return (size_t)(p - b) + n;
}

_Static_assert(offsetof(struct sonde_frame, slot) < 128 && offsetof(struct sonde_frame, site) < 128,
               "plus_uconst takes one ULEB128 byte");

#define CIE_SIZE 24 /* 18 bytes, padded */

/* Where an exit trampoline's frame is, instruction by instruction: from
 * `at` bytes into it, the CFA is the stack pointer + cfa (its slot + 8
 * always), and the real return address is found by the expression in the
 * shadow stack (RA_SHADOW: the frame is still open there), or is in rax or
 * r11 (the exit hook returned it), or in the slot again (RA_SLOT: the full
 * trampoline wrote it back for its `ret`).  The byte before each trampoline
 * (a return address - 1) has the entry's rules.  A signal can interrupt any
 * of these instructions, or the exit hook they call (whose return address is
 * the byte after its call): a walk from the handler (a sampling profiler's
 * backtrace) or an asynchronous cancellation passes the frame.  While the
 * hook runs, the expression finds the frame on the shadow stack, and once
 * the hook has closed it (its last instructions), in the entry just past
 * the top, which it leaves as it was: unless the handler itself entered a
 * recorded function before walking, which took that entry (there the walk
 * ends). */
/* RA_HOOK: RA_SHADOW, with ra_expr's fallback; RA_SLOTVAL: ra_expr_slot's */
enum { RA_SHADOW, RA_HOOK, RA_RAX, RA_R11, RA_SLOT, RA_SLOTVAL };
struct tramp_step {
	uint8_t at, cfa, ra;
};
static const struct tramp_step tramp_steps[] = {
	{ 0, 0, RA_SHADOW }, { 1, 8, RA_SHADOW }, { 2, 16, RA_HOOK }, /* push rax, push rdx; the hook's call */
	{ RT_TRAMP_CALLED, 16, RA_RAX }, { RT_TRAMP_CALLED + 3, 16, RA_R11 }, /* mov %rax, %r11 */
	{ RT_TRAMP_CALLED + 4, 8, RA_R11 }, { RT_TRAMP_CALLED + 5, 0, RA_R11 }, /* pop rdx, pop rax; jmp */
};
static const struct tramp_step tramp_full_steps[] = {
	{ 0, 0, RA_SHADOW }, { 4, 8, RA_SHADOW }, /* sub $8 */
	{ 5, 16, RA_SHADOW }, { 6, 24, RA_SHADOW }, { 7, 32, RA_SHADOW }, { 8, 40, RA_SHADOW }, { 9, 48, RA_SHADOW },
	{ 11, 56, RA_SHADOW }, { 13, 64, RA_SHADOW }, { 15, 72, RA_SHADOW }, { 17, 80, RA_HOOK }, /* 9 pushes */
	{ RT_TRAMP_FULL_STORED, 80, RA_SLOT }, /* mov %rax, 72(%rsp) */
	{ 35, 72, RA_SLOT }, { 37, 64, RA_SLOT }, { 39, 56, RA_SLOT }, { 41, 48, RA_SLOT }, { 42, 40, RA_SLOT },
	{ 43, 32, RA_SLOT }, { 44, 24, RA_SLOT }, { 45, 16, RA_SLOT }, { 46, 8, RA_SLOT }, /* 9 pops; ret */
};
_Static_assert(RT_TRAMP_CALLED + 8 == RT_TRAMP_LEN && RT_TRAMP_FULL_STORED + 14 == RT_TRAMP_FULL_LEN,
               "observe.c's steps cover the trampolines (hooks.c checks their layout)");
/* The common entry of a module patched without a rebuild (instr_abi.h,
 * src/instr/stubs.c), entered by a call from the function's stub, which
 * pushed the function's number; nine pushes, the entry hook's call, nine
 * pops, `ret $8`.  Its frame stands for the function's, whose prologue has
 * not run: the CFA is one past the function's slot, where the return
 * address is, or, once the hook has hooked it, on the shadow stack.  The
 * walk goes from it to the function's caller (the stub's own frame, and the
 * function's, are that one frame). */
static const struct tramp_step common_steps[] = {
	{ 0, 24, RA_SLOTVAL }, { 1, 32, RA_SLOTVAL }, { 2, 40, RA_SLOTVAL }, { 3, 48, RA_SLOTVAL },
	{ 4, 56, RA_SLOTVAL }, { 6, 64, RA_SLOTVAL }, { 8, 72, RA_SLOTVAL }, { 9, 80, RA_SLOTVAL },
	{ 11, 88, RA_SLOTVAL }, { 13, 96, RA_SLOTVAL }, /* push rdi ... r11 */
	{ SONDE_INSTR_COMMON_CALLED + 2, 88, RA_SLOTVAL }, { SONDE_INSTR_COMMON_CALLED + 4, 80, RA_SLOTVAL },
	{ SONDE_INSTR_COMMON_CALLED + 5, 72, RA_SLOTVAL }, { SONDE_INSTR_COMMON_CALLED + 7, 64, RA_SLOTVAL },
	{ SONDE_INSTR_COMMON_CALLED + 9, 56, RA_SLOTVAL }, { SONDE_INSTR_COMMON_CALLED + 10, 48, RA_SLOTVAL },
	{ SONDE_INSTR_COMMON_CALLED + 11, 40, RA_SLOTVAL }, { SONDE_INSTR_COMMON_CALLED + 12, 32, RA_SLOTVAL },
	{ SONDE_INSTR_COMMON_CALLED + 13, 24, RA_SLOTVAL }, /* pop r11 ... rdi; ret $8 */
};
_Static_assert(SONDE_INSTR_COMMON_CALLED + 13 + 3 == SONDE_INSTR_COMMON_LEN, "observe.c's steps cover the common entry");

enum { CFA_advance_loc1 = 0x02, CFA_def_cfa_offset = 0x0e, CFA_register = 0x09, CFA_offset_ra = 0x80 | REG_RA };

/* One FDE for the code at `start` (its steps), after the CIE at c; from
 * start - 1 (a return address - 1) with `before`, else from start.  Its
 * location is only ever handed to libgcc as bases->func (_Unwind_Find_FDE
 * below), which is what libgcc's rules start from. */
static uint8_t *tramp_fde_at(uint8_t *p, const uint8_t *c, struct sonde_thread *t, uintptr_t start, size_t len,
                             const struct tramp_step *st, size_t nst, int before)
{
	uint8_t *f = p, *e;
	p = put_u32(p, 0);       /* length, below */
	p = put_u32(p, (uint32_t)(p - c)); /* CIE pointer: from this field back to the CIE */
	p = put_u64(p, start - (uintptr_t)before);
	p = put_u64(p, len + (size_t)before);
	p = put_u8(p, 0);        /* augmentation data length */
	uint32_t at = 0; /* bytes from start - before */
	for (size_t i = 0; i < nst; i++) {
		if (i) {
			p = put_u8(p, CFA_advance_loc1);
			p = put_u8(p, (uint8_t)(st[i].at + (uint32_t)before - at));
			at = st[i].at + (uint32_t)before;
			p = put_u8(p, CFA_def_cfa_offset), p = put_u8(p, st[i].cfa);
		} else {
			p = put_u8(p, CFA_def_cfa), p = put_u8(p, REG_RSP), p = put_u8(p, st[i].cfa);
		}
		if (i && st[i].ra == st[i - 1].ra)
			continue;
		switch (st[i].ra) {
		case RA_SHADOW:
		case RA_HOOK:
			p = put_u8(p, CFA_val_expression), p = put_u8(p, REG_RA);
			e = p++; /* its length, one ULEB128 byte */
			*e = (uint8_t)ra_expr(p, t, st[i].ra == RA_HOOK);
			p += *e;
			break;
		case RA_RAX:
		case RA_R11:
			p = put_u8(p, CFA_register), p = put_u8(p, REG_RA), p = put_u8(p, st[i].ra == RA_RAX ? 0 : 11);
			break;
		case RA_SLOT: /* at CFA - 8 (data alignment -8) */
			p = put_u8(p, CFA_offset_ra), p = put_u8(p, 1);
			break;
		case RA_SLOTVAL:
			p = put_u8(p, CFA_val_expression), p = put_u8(p, REG_RA);
			e = p++;
			*e = (uint8_t)ra_expr_slot(p, t);
			p += *e;
			break;
		}
	}
	while ((p - f) % 8 != 4) /* length excludes itself: padded to 8 */
		p = put_u8(p, 0);
	put_u32(f, (uint32_t)(p - f - 4));
	return p;
}

/* This thread's CIE and the FDEs of both trampolines (and the byte before
 * each), in its private tables (rt.h): 0, or -1 if they do not fit. */
static int tramp_fdes(struct rt_priv *pv, struct sonde_thread *t)
{
	if (pv->fde_for == t)
		return 0;
	uint8_t tmp[RT_FDE_BYTES + 256], *c = tmp, *p = c;
	p = put_u32(p, CIE_SIZE - 4); /* length */
	p = put_u32(p, 0);       /* CIE id */
	p = put_u8(p, 1);        /* version */
	p = put_u8(p, 'z'), p = put_u8(p, 'R'), p = put_u8(p, 0);
	p = put_u8(p, 1);        /* code alignment */
	p = put_u8(p, 0x78);     /* data alignment -8 */
	p = put_u8(p, REG_RA);   /* return address column */
	p = put_u8(p, 1);        /* augmentation data: */
	p = put_u8(p, 0x00);     /* FDE pointers absolute */
	while (p < c + CIE_SIZE) /* DW_CFA_nop */
		p = put_u8(p, 0);
	p = tramp_fde_at(p, c, t, (uintptr_t)rt_exit_tramp, RT_TRAMP_LEN, tramp_steps,
	                 sizeof tramp_steps / sizeof tramp_steps[0], 1);
	pv->fde_full = (uint16_t)(p - c);
	p = tramp_fde_at(p, c, t, (uintptr_t)rt_exit_tramp_full, RT_TRAMP_FULL_LEN, tramp_full_steps,
	                 sizeof tramp_full_steps / sizeof tramp_full_steps[0], 1);
	pv->fde_common = (uint16_t)(p - c); /* for every region: its place is bases->func */
	p = tramp_fde_at(p, c, t, 0, SONDE_INSTR_COMMON_LEN, common_steps, sizeof common_steps / sizeof common_steps[0],
	                 0);
	p = put_u32(p, 0); /* a terminator, as after an .eh_frame */
	if (p - c > RT_FDE_BYTES)
		return -1;
	memcpy(pv->fde, tmp, (size_t)(p - c));
	pv->fde_for = t;
	return 0;
}

RT_EXPORT const void *_Unwind_Find_FDE(void *pc, void *bases)
{
	typedef const void *(*ff_fn)(void *, void *);
	uintptr_t a = (uintptr_t)pc, tr = (uintptr_t)rt_exit_tramp, tf = (uintptr_t)rt_exit_tramp_full;
	int in_tr = a + 1 - tr <= RT_TRAMP_LEN, in_tf = a + 1 - tf <= RT_TRAMP_FULL_LEN; /* [start - 1, end) */
	uintptr_t common = 0;
	if (__builtin_expect(in_tr || in_tf || (common = rt_instr_common_at(a)) != 0, 0)) {
		struct rt_tls *L = &rt_tls;
		if (L->state == RT_T_ON && tramp_fdes(L->priv, L->t) == 0) {
			struct eh_bases *eb = bases;
			eb->tbase = NULL;
			eb->dbase = NULL;
			eb->func = (void *)(common ? common : (in_tr ? tr : tf) - 1);
			return L->priv->fde + (common ? L->priv->fde_common : in_tr ? CIE_SIZE : L->priv->fde_full);
		}
	}
	ff_fn ff = (ff_fn)gcc_sym(&real_find, "_Unwind_Find_FDE", (void *)obs_find_fde);
	return ff ? ff(pc, bases) : NULL;
}

RT_HIDDEN int obs_unwind_backtrace(trace_fn, void *) __attribute__((alias("_Unwind_Backtrace")));
RT_HIDDEN int obs_forced_unwind(void *, void *, void *) __attribute__((alias("_Unwind_ForcedUnwind")));
RT_HIDDEN const void *obs_find_fde(void *, void *) __attribute__((alias("_Unwind_Find_FDE")));
RT_HIDDEN int obs_backtrace(void **, int) __attribute__((alias("backtrace")));
RT_HIDDEN __attribute__((noreturn)) void obs_pthread_exit(void *) __attribute__((alias("pthread_exit")));

static const struct rt_got_sym observe_wrappers[] = {
	{ "backtrace", (void *)obs_backtrace },
	{ "_Unwind_Backtrace", (void *)obs_unwind_backtrace },
	{ "_Unwind_ForcedUnwind", (void *)obs_forced_unwind },
	{ "_Unwind_Find_FDE", (void *)obs_find_fde }, /* in libgcc_s's own GOT too (got.c) */
	{ "pthread_exit", (void *)obs_pthread_exit },
};

RT_HIDDEN int rt_observe_wrappers(const struct rt_got_sym **out)
{
	gcc_sym(&real_bt, "_Unwind_Backtrace", (void *)obs_unwind_backtrace);
	gcc_sym(&real_getip, "_Unwind_GetIP", NULL);
	gcc_sym(&real_getcfa, "_Unwind_GetCFA", NULL);
	gcc_sym(&real_forced, "_Unwind_ForcedUnwind", (void *)obs_forced_unwind);
	gcc_sym(&real_find, "_Unwind_Find_FDE", (void *)obs_find_fde);
	rt_real_sym(&real_pexit, "pthread_exit", NULL, "libc.so.6");
	*out = observe_wrappers;
	return (int)(sizeof observe_wrappers / sizeof observe_wrappers[0]);
}

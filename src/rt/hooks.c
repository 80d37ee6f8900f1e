/* hooks.c — the per-call hot path: what runs on every entry and exit of an
 * instrumented function while sonde records.
 *
 * Entry: the function's sled calls its module's trampoline (module.c), which
 * calls rt_enter_*(module, fn, slot) with `slot` the stack slot holding the
 * function's return address.  The number comes from the padding at fn - 8
 * (seed 000: the number is the subscript, no search).  The hook pushes a
 * frame on the thread's shadow stack, keeps the real return address in it and
 * puts rt_exit_tramp's address into the slot.  Exit: the function's `ret`
 * lands in rt_exit_tramp, which calls rt_exit_hook(slot) for the real return
 * address and jumps there.  So only functions that exist in the machine code
 * are seen (inlined calls are part of their caller, as in uftrace and perf),
 * and a function that is not recorded costs its nops only.  Functions with
 * exit sleds (GCC builds through sonde-cc; modabi.h) are entered through
 * rt_enter_sled_*, which leaves the slot alone, and closed by rt_exit_sled_*
 * from the sled before their `ret` (exit_sled_body below); the sled before a
 * tail call replaces the return address there (tail_sled_body).
 *
 *  - profile mode: the calling-context tree (CCT) of the thread is extended
 *    and its node's calls / inclusive ticks updated.  The node of the callee
 *    is found through the thread's records[number] array for the module
 *    which remembers the node the function last ran in; a check of that
 *    node's parent confirms the context.  Only when the function runs in a
 *    context other than the last one are the current node's children scanned
 *    (move-to-front), and a new context allocated from the thread's pool.
 *  - trace mode: an entry / exit record goes into the thread's ring (trace.h)
 *    at the `used` of the chunk kept in TLS; a module recorded without any
 *    trace filter gets the `traceplain` entry and exit-sled hooks, which look
 *    at none of them and find each function's encoded number in a table
 *    shared by the process's threads, indexed by the function (rt_fenc).
 *
 * Rules: O(1) work, no locks, no system calls, no malloc, no stdio; state in
 * initial-exec TLS; errno untouched; compiled with -mgeneral-regs-only so
 * that vector and x87 registers (arguments, return values) pass untouched;
 * re-entry (a signal handler's instrumented code interrupting a hook) is
 * detected and the nested call is counted as lost and left unhooked.
 *
 * Activations are identified by their slot address: a caller's slot is above
 * its callees'.  Non-local exits:
 *  - longjmp: frames whose slot lies below the stack pointer of the code
 *    that resumed are dead; they are closed (seed 003's rule: they end with
 *    the code that resumes) at the next entry or exit that shows it.
 *  - tail calls: the callee's slot is the caller's, and already holds
 *    rt_exit_tramp: the callee is pushed above the caller with the same
 *    slot and return address; one return closes both.
 *  - exceptions: the unwinder must see real return addresses; unwind.c puts
 *    them back before unwinding and re-hooks the survivors at the catch.
 * A frame closed as dead keeps its return address in a small per-thread
 * "graveyard", so that a slot wrongly taken for dead still finds its way home.
 */
#include <stdatomic.h>
#include <stddef.h>

#include "common/clock.h"
#include "common/instr_abi.h"
#include "rt/rt.h"
#include "rt/trace.h"

#define STALE_WINDOW RT_STACK_WINDOW

RT_HIDDEN int rt_trace_ext(struct rt_tls *L, uint8_t type, const uint64_t *v, int nv, uint64_t now)
{
	uint8_t body[2 + 5 * TR_MAX_VARINT], hd[TR_MAX_VARINT], f[4 * TR_MAX_VARINT];
	int k = 0, b = 0;
	for (int i = 0; i < nv && i < 4; i++)
		k += tr_put_varint(f + k, v[i]);
	body[b++] = type;
	b += tr_put_varint(body + b, (uint64_t)k);
	__builtin_memcpy(body + b, f, (size_t)k);
	b += k;
	uint64_t *last = rt_ring_last(L), prev = *last;
	if (now < prev)
		now = prev;
	int h = tr_put_varint(hd, ((now - prev) << 2) | TR_EXT), fresh;
	rt_ring_forget(L); /* the function records' position (trace.h): the chunk may change */
	uint8_t *p = ring_reserve(rt_sess, L->ring, (uint32_t)(h + b), now, &L->t->wait_ticks,
	                          (rt_mode & SONDE_MODE_LOSSY) != 0, &fresh);
	if (!p) {
		L->ring->lost_pending++;
		L->t->lost[SONDE_LOST_RING_EVENTS]++;
		return -1;
	}
	if (fresh) /* first record of a chunk: time relative to the chunk base (= now) */
		h = tr_put_varint(hd, TR_EXT);
	__builtin_memcpy(p, hd, (size_t)h);
	__builtin_memcpy(p + h, body, (size_t)b);
	ring_commit(rt_sess, L->ring, (uint32_t)(h + b));
	*last = now;
	return 0;
}

/* Find or create the child of `cur` for `func`. */
static __attribute__((noinline, cold)) uint32_t cct_child_slow(struct rt_tls *L, struct sonde_thread *t, uint32_t cur, uint32_t func)
{
	struct sonde_node *nodes = L->nodes;
	uint32_t prev = 0;
	for (uint32_t n = nodes[cur].first_child; n; prev = n, n = nodes[n].next_sibling) {
		if (nodes[n].func != func)
			continue;
		if (prev) { /* move to front: loops call the same callee again */
			nodes[prev].next_sibling = nodes[n].next_sibling;
			nodes[n].next_sibling = nodes[cur].first_child;
			nodes[cur].first_child = n;
		}
		return n;
	}
	if (t->nodes_used >= t->nodes_cap) {
		if (!rt_cct_grow(L, t)) { /* the pool grows (cct_grow.c), same indices */
			t->lost[SONDE_LOST_CCT_NODES]++;
			return RT_NO_NODE;
		}
		nodes = L->nodes;
	}
	uint32_t n = t->nodes_used;
	struct sonde_node *nd = &nodes[n];
	nd->parent = cur;
	nd->func = func;
	nd->first_child = 0;
	nd->calls = 0;
	nd->ticks = 0;
	nd->off_ns = 0;
	nd->run_ns = 0;
	nd->next_sibling = nodes[cur].first_child;
	atomic_signal_fence(memory_order_release); /* node complete before it is linked */
	nodes[cur].first_child = n;
	t->nodes_used = n + 1;
	return n;
}

static inline uint32_t cct_enter(struct rt_tls *L, struct sonde_thread *t, struct sonde_modhook *m,
                                 uint32_t idx, uint32_t func)
{
	uint32_t cur = t->cur_node;
	uint32_t slot = m->slot;
	uint32_t *recs = slot < SONDE_MAX_MODS_PER_THREAD ? L->priv->recs[slot] : NULL;
	uint32_t n;
	if (__builtin_expect(recs != NULL, 1)) {
		n = recs[idx];
		if (n && L->nodes[n].parent == cur)
			goto found;
	} else {
		recs = rt_recs_alloc(L, slot);
	}
	n = cct_child_slow(L, t, cur, func);
	if (n == RT_NO_NODE)
		return n;
	if (recs)
		recs[idx] = n;
found:
	L->nodes[n].calls++;
	t->cur_node = n;
	return n;
}

RT_HIDDEN uint32_t *rt_recs_alloc(struct rt_tls *L, uint32_t mod_slot)
{
	if (mod_slot >= SONDE_MAX_MODS_PER_THREAD) {
		L->t->lost[SONDE_LOST_MODS_PER_THREAD]++;
		return NULL;
	}
	uint32_t n = rt_sess->modules[mod_slot].nfuncs + 1; /* +1: the unnumbered bucket */
	uint64_t off = sess_alloc(rt_sess, (uint64_t)n * sizeof(uint32_t));
	if (!off) {
		L->t->lost[SONDE_LOST_SESSION_MEM]++;
		return NULL;
	}
	L->t->recs_off[mod_slot] = off;
	return L->priv->recs[mod_slot] = sess_ptr(rt_sess, off);
}

/* Close frame i (the top) at `now`. */
static inline __attribute__((always_inline)) void pop_frame_mode(struct rt_tls *L, struct sonde_thread *t, uint32_t i,
                                                                 uint64_t now, int abnormal, uint32_t mode, int plain)
{
	struct sonde_frame *f = &t->stack[i];
	/* A session without profile writes no CCT (record/profile_out.c): the
	 * nodes rt_resume_frames gives its frames are never read. */
	if ((mode & SONDE_MODE_PROFILE) && f->node != RT_NO_NODE) {
		struct sonde_node *nd = &L->nodes[f->node];
		nd->ticks += now - f->start;
		t->cur_node = nd->parent;
	}
	if (mode & SONDE_MODE_TRACE)
		trace_exit(L, t, f, now, abnormal, plain);
	atomic_signal_fence(memory_order_release);
	t->depth = i;
}

/* The slow paths use the session's mode. */
static void pop_frame(struct rt_tls *L, struct sonde_thread *t, uint32_t i, uint64_t now, int abnormal)
{
	pop_frame_mode(L, t, i, now, abnormal, rt_mode, 0);
}

/* Close frame i as dead, remembering its return address. */
static void bury(struct rt_tls *L, struct sonde_thread *t, uint32_t i, uint64_t now)
{
	struct sonde_frame *f = &t->stack[i];
	if (f->flags & SONDE_FRAME_SLED) { /* its slot never held the trampoline */
		pop_frame(L, t, i, now, 1);
		return;
	}
	uint32_t g = L->grave_next++ % RT_GRAVES;
	L->priv->grave[g].slot = f->slot;
	L->priv->grave[g].ra = f->site;
	pop_frame(L, t, i, now, 1);
}

/* sigaltstack(NULL, &ss) without libc: the entry hook's slow path runs with
 * the instrumented function's arguments in the vector registers. */
struct rt_kstack {
	void *sp;
	int flags;
	size_t size;
};
static long sys_sigaltstack_get(struct rt_kstack *ss)
{
#if defined(__x86_64__)
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "0"(131L /* SYS_sigaltstack */), "D"(0L), "S"(ss)
	                 : "rcx", "r11", "memory");
	return r;
#else
	(void)ss;
	return -1;
#endif
}

/* Fill alt: whether sp is on the thread's alternate signal stack. */
static void alt_ask(struct rt_altstack *alt, uintptr_t sp)
{
	if (!alt->asked) {
		struct rt_tls *L = &rt_tls;
		alt->asked = 1;
		if (!L->alt_known) { /* set before the runtime saw it (an attach), or by a system call of its own */
			struct rt_kstack ss;
			L->alt_lo = L->alt_hi = 0;
			if (sys_sigaltstack_get(&ss) == 0 && !(ss.flags & 2 /* SS_DISABLE */)) {
				L->alt_lo = (uintptr_t)ss.sp;
				L->alt_hi = L->alt_lo + ss.size;
			}
			L->alt_known = 1;
		}
		/* on it while a handler runs there (sigaltstack's SS_ONSTACK: the
		 * same test; the kernel's answer would say "disabled" in a
		 * handler of an SS_AUTODISARM stack) */
		if (sp - L->alt_lo < L->alt_hi - L->alt_lo) {
			alt->on = 1;
			alt->lo = L->alt_lo;
			alt->hi = L->alt_hi;
		}
	}
}

RT_HIDDEN int rt_slot_dead(struct rt_altstack *alt, uintptr_t sp, uintptr_t slot)
{
	if (slot > sp || sp - slot >= STALE_WINDOW)
		return 0;
	alt_ask(alt, sp);
	/* on the alternate stack: dead if the slot is on it too */
	return !alt->on || (slot >= alt->lo && slot < alt->hi);
}

RT_HIDDEN void rt_close_alt(struct rt_tls *L, struct sonde_thread *t, uintptr_t sp, uint64_t now)
{
	struct rt_altstack alt = { 0 };
	alt_ask(&alt, sp);
	if (!alt.on)
		return;
	while (t->depth && t->stack[t->depth - 1].slot - alt.lo < alt.hi - alt.lo)
		bury(L, t, t->depth - 1, now);
}

RT_HIDDEN void rt_close_below(struct rt_tls *L, struct sonde_thread *t, uintptr_t sp, uint64_t now)
{
	struct rt_altstack alt = { 0 };
	while (t->depth && t->stack[t->depth - 1].slot < sp && rt_slot_dead(&alt, sp, t->stack[t->depth - 1].slot))
		bury(L, t, t->depth - 1, now);
}

RT_HIDDEN void rt_close_all(struct rt_tls *L, struct sonde_thread *t, uint64_t now)
{
	while (t->depth)
		bury(L, t, t->depth - 1, now);
}

RT_HIDDEN void rt_close_dead(struct rt_tls *L, struct sonde_thread *t, uintptr_t sp, uint64_t now)
{
	struct rt_altstack alt = { 0 };
	uint32_t d = t->depth, i;
	for (i = 0; i < d; i++) {
		const struct sonde_frame *f = &t->stack[i];
		if (f->slot < sp) {
			if (rt_slot_dead(&alt, sp, f->slot))
				break;
			continue;
		}
		if (f->slot - sp >= STALE_WINDOW)
			continue; /* another stack's: not read */
		uintptr_t v = *(const uintptr_t *)(uintptr_t)f->slot;
		/* a frame closed by exit sleds keeps its real return address */
		if (v != ((f->flags & (SONDE_FRAME_UNHOOKED | SONDE_FRAME_SLED)) ? f->site : rt_exit_tramp_for(f->flags)))
			break;
	}
	while (t->depth > i)
		bury(L, t, t->depth - 1, now);
}

RT_HIDDEN uint32_t rt_suspend_frames(struct rt_tls *L, struct sonde_thread *t, struct sonde_frame *out, uint32_t max,
                                     uint64_t now)
{
	uint32_t d = t->depth;
	if (d > max)
		return UINT32_MAX;
	/* copied first: a --min-time roll-back at the pop changes nothing of them */
	__builtin_memcpy(out, t->stack, d * sizeof *out);
	while (t->depth)
		pop_frame(L, t, t->depth - 1, now, 0);
	return d;
}

/* Entry of a call whose slot is at or above the top frame's: close the dead
 * frames.  Returns the return address the new frame must keep: the slot's
 * own, or, for a tail call (the slot is the top frame's and still holds the
 * exit trampoline), the one the tail-calling frame kept; 0 if unknown.  A
 * tail-called function is nested in the function that jumped to it (as
 * uftrace shows it, and as the source reads); both end at its return. */
static __attribute__((noinline, cold)) uintptr_t close_stale(struct rt_tls *L, struct sonde_thread *t,
                                                             uintptr_t *slot, uint64_t now)
{
	uintptr_t s = (uintptr_t)slot, ra = *slot;
	uint32_t d = t->depth;
	struct rt_altstack alt = { 0 };
	while (d) {
		struct sonde_frame *top = &t->stack[d - 1];
		if (top->slot > s || s - top->slot >= STALE_WINDOW)
			break;
		if (top->slot == s && rt_is_exit_tramp(ra)) /* tail call */
			return top->site;
		if (!rt_slot_dead(&alt, s, top->slot))
			break; /* interrupted by the signal handler this call is part of */
		bury(L, t, --d, now);
	}
	if (rt_is_exit_tramp(ra)) { /* hooked by a frame closed before */
		for (uint32_t g = 0; g < RT_GRAVES; g++)
			if (L->priv->grave[g].slot == s)
				return L->priv->grave[g].ra;
		return 0;
	}
	return ra;
}

/* A thread's first event (its state: rt_thread_slow). */
static __attribute__((noinline, cold)) struct rt_tls *enter_first(uintptr_t *slot)
{
	/* A function of a patched library (record --module) that the thread's
	 * start itself calls (mmap, prctl, ...) is not recorded: its thread
	 * does not exist yet. */
	if (rt_tls.busy)
		return NULL;
	rt_tls.busy = 1;
	rt_tls.first_slot = (uintptr_t)slot;
	struct rt_tls *L = rt_thread_slow_saving();
	rt_tls.first_slot = 0;
	rt_busy_out(&rt_tls);
	return L;
}

/* An entry whose thread is not recording yet, or that interrupted a section
 * of the runtime (a signal whose handler signals.c does not hold back). */
static __attribute__((noinline, cold)) struct rt_tls *enter_slow(uintptr_t *slot)
{
	struct rt_tls *L = &rt_tls;
	if (L->busy) {
		if (L->state == RT_T_ON)
			L->t->lost[SONDE_LOST_REENTRY]++;
		return NULL; /* left unhooked: its exit does not come here either */
	}
	return enter_first(slot);
}

/* Whether the thread records and is inside no section of the runtime: state
 * and busy, adjacent, in one comparison. */
_Static_assert(offsetof(struct rt_tls, busy) == offsetof(struct rt_tls, state) + 4, "rt_idle: state, busy");
static inline __attribute__((always_inline)) int rt_idle(const struct rt_tls *L)
{
	uint64_t sb;
	__builtin_memcpy(&sb, &L->state, sizeof sb);
	return sb == RT_T_ON; /* little-endian: state in the low word, busy 0 */
}

/* The hooks' bodies take the session mode as a parameter; the entry points
 * below instantiate them for a constant mode, so the profile-only and
 * trace-only hooks carry none of the other mode's code (the runtime installs
 * the one that matches the session, see runtime.c). */
/* A call of a function counted, not timed (record --timing) that its stub
 * could not count itself (src/instr/stubs.c: the thread's array for the
 * module is not made yet, or an int3 site): counted here in the same array,
 * made now, by number (seed 000's records, flat: no calling context, so
 * no frame and no clock read); its return address is left alone, so no
 * exit hook, and its time stays in its caller's. */
static __attribute__((noinline)) void enter_count(struct rt_tls *L, struct sonde_modhook *m, uint32_t number)
{
	uint32_t slot = m->slot;
	if (slot >= SONDE_MAX_MODS_PER_THREAD) {
		L->t->lost[SONDE_LOST_MODS_PER_THREAD]++;
		return;
	}
	uint64_t *cnt = L->priv->cnt[slot];
	if (!cnt) {
		uint64_t off = sess_alloc(rt_sess, ((uint64_t)m->nfuncs + 1) * sizeof(uint64_t));
		if (!off) {
			L->t->lost[SONDE_LOST_SESSION_MEM]++;
			return;
		}
		cnt = sess_ptr(rt_sess, off);
		L->t->cnt_off[slot] = off;
		L->priv->cnt[slot] = cnt; /* from now on the stub counts */
	}
	uint32_t nf = m->nfuncs; /* the session module's too (rt_module_new) */
	if (number >= nf) {
		L->t->lost[SONDE_LOST_UNNUMBERED]++;
		number = nf;
	}
	cnt[number]++;
}
_Static_assert(offsetof(struct rt_tls, state) == 0 && offsetof(struct rt_tls, busy) == 4 && RT_T_ON == SONDE_INSTR_TLS_ON &&
               offsetof(struct rt_tls, priv) == SONDE_INSTR_TLS_TABLE, "a counted stub's fast path reads rt_tls (instr_abi.h)");

static inline __attribute__((always_inline)) void enter_body(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot,
                                                             uint32_t mode, int numbered, int plain, int keep)
{
	struct rt_tls *L = &rt_tls;
	if (__builtin_expect(!rt_idle(L), 0) && !(L = enter_slow(slot)))
		return;
	struct sonde_thread *t = L->t;
	L->busy = 1; /* was 0: nothing pending */
	atomic_signal_fence(memory_order_seq_cst);
	if (numbered && (fn & SONDE_INSTR_COUNT)) {
		/* a profile's and a trace's alike: a counted call writes no
		 * record (the recording's flat counts hold it); the floor
		 * (mode 0, bench/) records nothing and takes the timed way */
		fn &= ~(uintptr_t)SONDE_INSTR_COUNT;
		if (mode) {
			enter_count(L, m, (uint32_t)fn);
			atomic_signal_fence(memory_order_seq_cst);
			rt_busy_out(L);
			return;
		}
	}
	uint64_t now = clock_ticks();
	/* a switch since the last hook, or a millisecond without a look: the
	 * wait is the caller's (cpu_time.c); a counted call (above) leaves the
	 * context as it was, and the next look gives the wait to it anyway.
	 * The floor (mode 0, bench/) records no split. */
	if (mode)
		rt_cpu_check_enter(L, mode, &now);
	uint32_t d = t->depth;
	uintptr_t ra = *slot;
	/* A live caller's slot is above its callee's: a top frame at or below
	 * ours is dead (longjmp) or tail-called us (close_stale decides). */
	if (__builtin_expect(d && t->stack[d - 1].slot <= (uintptr_t)slot &&
	                     (uintptr_t)slot - t->stack[d - 1].slot < STALE_WINDOW, 0)) {
		ra = close_stale(L, t, slot, now);
		d = t->depth;
		if (!ra) {
			t->lost[SONDE_LOST_UNMATCHED_EXIT]++;
			goto out;
		}
	}
	if (__builtin_expect(d >= SONDE_STACK_MAX, 0)) {
		t->lost[SONDE_LOST_STACK_DEPTH]++;
		goto out; /* left unhooked */
	}
	/* unnumbered: the module's bucket (counted, never misattributed); a
	 * patched function's stub hands its number over (src/instr/stubs.c) */
	uint32_t number = !numbered ? rt_number_of(m, fn) : fn < m->nfuncs ? (uint32_t)fn : SONDE_UNNUMBERED;
	uint32_t idx = number;
	if (__builtin_expect(number == SONDE_UNNUMBERED, 0)) {
		t->lost[SONDE_LOST_UNNUMBERED]++;
		idx = m->nfuncs; /* the module's unnumbered bucket */
	}
	/* plain: computed in 64 bits, trace_enter indexes rt_fenc with it (no
	 * zero-extension); the frame keeps its 32 (the other hooks compute it
	 * in 32: one instruction fewer there) */
	uint64_t func = plain ? (uint64_t)m->slot << 20 | number : SONDE_FUNC(m->slot, number);
	struct sonde_frame *f = &t->stack[d];
	f->node = (mode & SONDE_MODE_PROFILE) ? cct_enter(L, t, m, idx, (uint32_t)func) : RT_NO_NODE;
	f->start = now;
	f->slot = (uintptr_t)slot;
	f->site = ra;
	f->func = (uint32_t)func;
	/* A tail call keeps the slot's trampoline: the full one of a patched
	 * caller must stay, whoever was called.  keep: a function with exit
	 * sleds, its slot left as it is (a tail caller's trampoline, if any,
	 * closes the tail caller after it). */
	uintptr_t held = *slot;
	uintptr_t tramp = keep ? held
	                  : numbered || held == (uintptr_t)rt_exit_tramp_full ? (uintptr_t)rt_exit_tramp_full
	                                                                   : (uintptr_t)rt_exit_tramp;
	f->flags = (keep ? SONDE_FRAME_SLED : tramp == (uintptr_t)rt_exit_tramp_full ? SONDE_FRAME_FULLSAVE : 0) |
	           ((mode & SONDE_MODE_TRACE) && plain ? SONDE_FRAME_TRACED : 0); /* trace_enter clears it if need be */
	if (mode & SONDE_MODE_TRACE) {
		/* plain: the function's bytes are kept in the process's
		 * rt_fenc[func] (rt.h); a module slot below TRACE_PLAIN_SLOTS
		 * whose entries are writable (rt_enter_hook's choice) */
		trace_enter(L, t, f, func, d + 1, now, plain);
	}
	atomic_signal_fence(memory_order_release); /* frame complete before depth covers it */
	t->depth = d + 1;
	if (!keep)
		*slot = tramp;
	if (!(mode & SONDE_MODE_TRACE)) /* a trace's: its records' time (rt_ring_last) */
		t->last_tsc = now;
out:
	atomic_signal_fence(memory_order_seq_cst);
	rt_busy_out(L); /* a signal held back meanwhile comes in now */
}

/* An exit whose slot is not the top frame's: the frames above it were left
 * by a non-local exit and end now; a slot found nowhere may be a frame
 * closed as dead too early (the graveyard). */
static __attribute__((noinline, cold)) uintptr_t exit_slow(struct rt_tls *L, struct sonde_thread *t, uintptr_t s,
                                                           uint64_t now)
{
	uint32_t d = t->depth;
	for (uint32_t i = d; i-- > 0;) {
		if (t->stack[i].slot != s)
			continue;
		for (uint32_t j = d; j-- > i + 1;)
			pop_frame(L, t, j, now, 1);
		uintptr_t ra = t->stack[i].site;
		pop_frame(L, t, i, now, 0);
		while (i && t->stack[i - 1].slot == s) /* tail callers end too */
			pop_frame(L, t, --i, now, 0);
		return ra;
	}
	for (uint32_t g = 0; g < RT_GRAVES; g++)
		if (L->priv->grave[g].slot == s) {
			t->lost[SONDE_LOST_UNMATCHED_EXIT]++;
			L->priv->grave[g].slot = 0;
			return L->priv->grave[g].ra;
		}
	rt_log("a return address sonde replaced is lost; the program cannot go on");
	__builtin_trap();
}

/* The exit hook's end when a signal was held back meanwhile (rt_sig_release
 * lets it in here).  The frame is closed, and the exit trampoline's unwind
 * rule (hooks.c's assembly, observe.c: the topmost frame with the slot)
 * would give a walk from the handler (a sampling profiler's backtrace) no
 * return address: the closed frame, still in the entry past the top, stands
 * on the shadow stack while the handler runs, without a node, unhooked (no
 * slow path reads or writes its slot, which holds the trampoline's saved
 * rax now), and goes when the handler returns; if it leaves by siglongjmp,
 * the frame is closed as dead later, which records nothing. */
static __attribute__((noinline, cold)) void exit_release(struct rt_tls *L, struct sonde_thread *t, uintptr_t s,
                                                         uintptr_t ra)
{
	if (__atomic_load_n(&L->busy, __ATOMIC_RELAXED) != RT_BUSY_PENDING)
		return; /* inside an outer section still */
	uint32_t d = t->depth;
	struct sonde_frame *f = &t->stack[d];
	int ghost = d < SONDE_STACK_MAX && f->slot == s && f->site == ra;
	if (ghost) {
		f->node = RT_NO_NODE;
		f->flags = SONDE_FRAME_UNHOOKED | (f->flags & SONDE_FRAME_FULLSAVE);
		atomic_signal_fence(memory_order_release);
		t->depth = d + 1;
	}
	rt_sig_release(L); /* the handler runs here */
	if (ghost) {
		L->busy = 1; /* 0 since the release: nothing pending */
		atomic_signal_fence(memory_order_seq_cst);
		if (t->depth == d + 1 && t->stack[d].slot == s)
			t->depth = d;
		rt_busy_out(L);
	}
}

/* plain: a trace-only session without any filter (rt_exit_traceplain), whose
 * frames carry neither -F's flag nor a --min-time entry length. */
static inline __attribute__((always_inline)) uintptr_t exit_body(uintptr_t s, uint32_t mode, int plain)
{
	struct rt_tls *L = &rt_tls;
	struct sonde_thread *t = L->t;
	rt_busy_in(L); /* maybe inside a section of the runtime that a hooked frame returns into */
	atomic_signal_fence(memory_order_seq_cst);
	uint64_t now = clock_ticks();
	if (mode)
		rt_cpu_check_at(L, mode, &now); /* a switch since the last hook: its wait is the returning callee's */
	uint32_t d = t->depth;
	uintptr_t ra;
	if (__builtin_expect(d && t->stack[d - 1].slot == s, 1)) {
		ra = t->stack[d - 1].site;
		pop_frame_mode(L, t, d - 1, now, 0, mode, plain);
		while (__builtin_expect(--d && t->stack[d - 1].slot == s, 0)) /* tail callers end too */
			pop_frame_mode(L, t, d - 1, now, 0, mode, plain);
	} else {
		ra = exit_slow(L, t, s, now);
	}
	if (!(mode & SONDE_MODE_TRACE)) /* a trace's: its records' time (rt_ring_last) */
		t->last_tsc = now;
	atomic_signal_fence(memory_order_seq_cst);
	if (__builtin_expect(rt_busy_dec(L), 0))
		exit_release(L, t, s, ra);
	return ra;
}

/* Exit sleds (sonde-as builds, modabi.h): the function is returning, its
 * frame is the topmost one with its slot and the SLED flag; the frames above
 * it were left by a non-local exit (a longjmp; a coroutine switched away
 * from, its stack anywhere) and end now, as exit_slow does for replaced
 * ones.  No such frame: its entry was not recorded (re-entry, a full shadow
 * stack); only frames whose slots show them dead (below this one's, on the
 * same stack) are closed.  A tail caller sharing the slot is closed by the
 * trampoline in the slot after this function's `ret`. */
static __attribute__((noinline, cold)) void exit_sled_slow(struct rt_tls *L, struct sonde_thread *t, uintptr_t s,
                                                           uint64_t now)
{
	for (uint32_t i = t->depth; i-- > 0;) {
		if (t->stack[i].slot != s || !(t->stack[i].flags & SONDE_FRAME_SLED))
			continue;
		while (t->depth > i + 1)
			bury(L, t, t->depth - 1, now);
		pop_frame(L, t, i, now, 0);
		return;
	}
	while (t->depth && t->stack[t->depth - 1].slot < s && s - t->stack[t->depth - 1].slot < STALE_WINDOW)
		bury(L, t, t->depth - 1, now);
}

static inline __attribute__((always_inline)) void exit_sled_body(uintptr_t *slot, uint32_t mode, int plain)
{
	struct rt_tls *L = &rt_tls;
	/* busy: a hook interrupted (a signal), whose nested entries were
	 * left unhooked */
	if (__builtin_expect(!rt_idle(L), 0))
		return;
	struct sonde_thread *t = L->t;
	L->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	uint64_t now = clock_ticks();
	if (mode)
		rt_cpu_check_at(L, mode, &now);
	uint32_t d = t->depth;
	uintptr_t s = (uintptr_t)slot;
	/* plain: the fast path takes only the frames the plain sled hook leaves
	 * (SLED and TRACED, nothing else in the low byte: not unhooked for an
	 * exception, not a resumed frame without its TRX_RESUME record), whose
	 * exit record need not look at TRACED; exit_sled_slow closes the others
	 * as the hook of any trace session does */
	if (__builtin_expect(d && t->stack[d - 1].slot == s &&
	                     (plain ? (uint8_t)t->stack[d - 1].flags == (SONDE_FRAME_SLED | SONDE_FRAME_TRACED)
	                            : (t->stack[d - 1].flags & SONDE_FRAME_SLED) != 0), 1))
		pop_frame_mode(L, t, d - 1, now, 0, mode, plain ? TRACE_PLAIN_TRACED : 0);
	else
		exit_sled_slow(L, t, s, now);
	if (!(mode & SONDE_MODE_TRACE)) /* a trace's: its records' time (rt_ring_last) */
		t->last_tsc = now;
	atomic_signal_fence(memory_order_seq_cst);
	rt_busy_out(L);
}

/* A tail call's sled (sonde-as builds): the function is about to jump to
 * another with its own return address in the slot.  From here on the frame
 * is an ordinary replaced one: the exit trampoline goes into the slot, so
 * the callee (instrumented or not) returns through it, which closes the
 * callee's frame if it has one (pushed above, same slot) and this one: the
 * callee is nested in the function that jumped to it, as for replaced
 * frames.  An entry that was not recorded finds no frame here: nothing. */
static inline __attribute__((always_inline)) void tail_sled_body(uintptr_t *slot)
{
	struct rt_tls *L = &rt_tls;
	if (__builtin_expect(!rt_idle(L), 0))
		return;
	struct sonde_thread *t = L->t;
	L->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	uintptr_t s = (uintptr_t)slot;
	uint32_t d = t->depth;
	if (__builtin_expect(!(d && t->stack[d - 1].slot == s), 0)) {
		while (t->depth && t->stack[t->depth - 1].slot < s && s - t->stack[t->depth - 1].slot < STALE_WINDOW)
			bury(L, t, t->depth - 1, clock_ticks());
		d = t->depth;
	}
	struct sonde_frame *f = d ? &t->stack[d - 1] : NULL;
	if (f && f->slot == s && (f->flags & SONDE_FRAME_SLED) && *slot == f->site) {
		f->flags &= ~SONDE_FRAME_SLED;
		*slot = (uintptr_t)rt_exit_tramp;
	}
	atomic_signal_fence(memory_order_seq_cst);
	rt_busy_out(L);
}

#define ENTER_HOOKS(name, mode, plain)                                                             \
	RT_HIDDEN void rt_enter_##name(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot)          \
	{                                                                                          \
		enter_body(m, fn, slot, mode, 0, plain, 0);                                        \
	}                                                                                          \
	RT_HIDDEN void rt_enter_num_##name(struct sonde_modhook *m, uintptr_t number, uintptr_t *slot)  \
	{                                                                                          \
		enter_body(m, number, slot, mode, 1, plain, 0);                                    \
	}                                                                                          \
	RT_HIDDEN void rt_enter_sled_##name(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot)     \
	{                                                                                          \
		enter_body(m, fn, slot, mode, 0, plain, 1);                                        \
	}
#define HOOKS(name, mode)                                                                          \
	ENTER_HOOKS(name, mode, 0)                                                                 \
	RT_HIDDEN uintptr_t rt_exit_##name(uintptr_t slot)                                          \
	{                                                                                          \
		return exit_body(slot, mode, 0);                                                   \
	}                                                                                          \
	RT_HIDDEN void rt_exit_sled_##name(uintptr_t *slot)                                         \
	{                                                                                          \
		exit_sled_body(slot, mode, 0);                                                     \
	}
HOOKS(profile, SONDE_MODE_PROFILE)
HOOKS(trace, SONDE_MODE_TRACE)
/* A trace-only session without filters (rt_enter_hook): no filter looked at
 * per call; their exits are rt_exit_trace's (trace.h's trace_exit), and
 * rt_exit_sled_traceplain's for the functions with exit sleds (whose frames
 * the plain hooks entered: no -F flag, no --min-time entry to roll back). */
ENTER_HOOKS(traceplain, SONDE_MODE_TRACE, 1)
RT_HIDDEN void rt_exit_sled_traceplain(uintptr_t *slot)
{
	exit_sled_body(slot, SONDE_MODE_TRACE, 1);
}
/* The replaced return address's exit in a trace-only session without any
 * filter (runtime.c): its frames, whichever hook entered them, carry no -F
 * flag and no --min-time entry to roll back. */
RT_HIDDEN uintptr_t rt_exit_traceplain(uintptr_t slot)
{
	return exit_body(slot, SONDE_MODE_TRACE, 1);
}
HOOKS(any, rt_mode)

/* record --timing=none (SONDE_MODE_NO_CPU: nothing is timed): a sonde-cc
 * build's sleds count each call by its number, as a counted stub does
 * (enter_count), with no clock read and no frame; its exit sled finds no
 * frame but one resumed at an attach (closed as by any hook).  Installed
 * for such sessions by runtime.c (rt_enter_hook, rt_sled_hooks). */
static inline __attribute__((always_inline)) void counted_body(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot)
{
	struct rt_tls *L = &rt_tls;
	if (__builtin_expect(!rt_idle(L), 0) && !(L = enter_slow(slot)))
		return;
	L->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	enter_count(L, m, rt_number_of(m, fn));
	atomic_signal_fence(memory_order_seq_cst);
	rt_busy_out(L);
}
RT_HIDDEN void rt_enter_counted(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot)
{
	counted_body(m, fn, slot);
}
RT_HIDDEN void rt_enter_sled_counted(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot)
{
	counted_body(m, fn, slot);
}
RT_HIDDEN void rt_exit_sled_counted(uintptr_t *slot)
{
	if (__builtin_expect(rt_tls.state == RT_T_ON && rt_tls.t && rt_tls.t->depth, 0))
		exit_sled_body(slot, rt_mode, 0);
}
/* The floor (docs/ARCHITECTURE.md, "Hot-path rules and the floor"): control at entry and exit (sled, trampolines,
 * shadow stack) and one TSC read each, nothing recorded.  For bench/ only:
 * installed when SONDE_BENCH_FLOOR=1 is in the environment. */
HOOKS(floor, 0)

RT_HIDDEN void rt_tail_sled(uintptr_t *slot)
{
	tail_sled_body(slot);
}

/* The chunk trace.h's fast path finds when it knows none (rt_ring_forget):
 * always full, so the bound check sends every record to the slow path;
 * read-only, never written (a record is only written after that check). */
RT_HIDDEN const struct sonde_chunk rt_chunk_full = { .used = RING_CHUNK_SIZE };

RT_HIDDEN uint8_t *rt_ring_reserve_slow(struct rt_tls *L, uint32_t n, uint64_t now)
{
	int fresh;
	struct sonde_ring *r = L->ring;
	rt_ring_forget(L);
	if (!r)
		return NULL; /* no ring (no memory for it, counted then): nothing traced */
	uint8_t *p = NULL;
	/* trace.h's fast path knows the chunks of RING_CHUNK_SIZE only, the
	 * only ones the recorder reads (ring_drain) */
	if (r->chunk_size == RING_CHUNK_SIZE)
		p = ring_reserve(rt_sess, r, n, now, &L->t->wait_ticks, (rt_mode & SONDE_MODE_LOSSY) != 0, &fresh);
	if (!p) {
		r->lost_pending++;
		L->t->lost[SONDE_LOST_RING_EVENTS]++;
		return NULL;
	}
	struct sonde_chunk *c = ring_chunk(rt_sess, r, r->cur);
	L->tchunk = c; /* p is its payload + used */
	if (fresh) /* the chunk's first record: its time is relative to the chunk's base, now */
		L->t->last_tsc = now; /* rt_ring_last: in a trace */
	return p;
}

RT_HIDDEN void rt_trace_mark(struct rt_tls *L, uint32_t func)
{
	trace_mark(L, func);
}

/* After the agent's end (agent.c): sleds are nops again, but frames hooked
 * before still return through rt_exit_tramp.  Their real return addresses
 * are found without changing anything in the session, which sonde is
 * reading: the shadow stack is left as it was at the end (its open frames
 * are closed at the end time by the writer) and searched from the top.  No
 * frame is pushed after the end, so the topmost frame with this slot is the
 * one returning (tail callers share its slot and its return address). */
RT_HIDDEN void rt_enter_ended(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot)
{
	(void)m, (void)fn, (void)slot; /* a call already in its sled as the sleds went back to nops */
}

RT_HIDDEN uintptr_t rt_exit_ended(uintptr_t s)
{
	struct rt_tls *L = &rt_tls;
	struct sonde_thread *t = L->t;
	for (uint32_t i = t->depth; i-- > 0;)
		if (t->stack[i].slot == s)
			return t->stack[i].site;
	for (uint32_t g = 0; g < RT_GRAVES; g++)
		if (L->priv->grave[g].slot == s)
			return L->priv->grave[g].ra;
	rt_log("a return address sonde replaced is lost; the program cannot go on");
	__builtin_trap();
}

/* The exit trampoline: a hooked function's `ret` lands here with %rsp one
 * past its slot.  rax / rdx (and xmm0 / xmm1 / st0, which the hook does not
 * touch) hold its return value.  The stack is 16-byte aligned at the call:
 * slot + 8 is, and two pushes keep it so.
 *
 * Its unwind information, for debuggers (gdb's bt through recorded frames):
 * a .debug_frame FDE (not .eh_frame: libgcc_s gets its own from observe.c,
 * as its unwinder reads no thread-local storage) from the byte before it
 * (unwinders look up return address - 1).  The frame's CFA is its slot + 8;
 * the return address rule, a DWARF expression, finds the slot in this
 * thread's shadow stack (rt_tls.t->stack, through the TLS operator; the
 * topmost frame with that slot) and gives its real return address, 0 once
 * the exit hook has closed the frame.  Offsets checked below. */
__asm__(
	"	.text\n"
	"	.p2align 4\n"
	/* 16 bytes before it, no code's (observe.c): a debugger names the
	 * trampoline's frames (their pc - 1) sonde_exit_trampoline */
	"	.type sonde_exit_trampoline,@function\n"
	"sonde_exit_trampoline:\n"
	"	.skip 16, 0xcc\n"
	"	.globl rt_exit_tramp\n"
	"	.hidden rt_exit_tramp\n"
	"	.type rt_exit_tramp,@function\n"
	"rt_exit_tramp:\n"
	"	push %rax\n"                     /* +0 */
	"	push %rdx\n"                     /* +1 */
	"	lea 8(%rsp), %rdi\n"             /* +2 */
	"	call *rt_exit_hook(%rip)\n"      /* +7 */
	".Lrt_exit_tramp_called:\n"
	"	mov %rax, %r11\n"                /* +13 */
	"	pop %rdx\n"                      /* +16 */
	"	pop %rax\n"                      /* +17 */
	"	jmp *%r11\n"                     /* +18 */
	".Lrt_exit_tramp_end:\n"
	"	.if .Lrt_exit_tramp_called - rt_exit_tramp - " RT_STR(RT_TRAMP_CALLED) "\n"
	"	.error \"rt_exit_tramp's layout is not rt.h's (observe.c's unwind information)\"\n"
	"	.endif\n"
	"	.if .Lrt_exit_tramp_end - rt_exit_tramp - " RT_STR(RT_TRAMP_LEN) "\n"
	"	.error \"rt_exit_tramp's layout is not rt.h's (observe.c's unwind information)\"\n"
	"	.endif\n"
	"	.size rt_exit_tramp, .-rt_exit_tramp\n"
	"	.size sonde_exit_trampoline, .-sonde_exit_trampoline\n"
	"	.section .debug_frame,\"\",@progbits\n"
	".Lrt_tramp_cie:\n"
	"	.long .Lrt_tramp_cie_end - .Lrt_tramp_cie_id\n"
	".Lrt_tramp_cie_id:\n"
	"	.long 0xffffffff\n"
	"	.byte 1, 0\n"                    /* version 1, no augmentation */
	"	.uleb128 1\n"
	"	.sleb128 -8\n"
	"	.byte 16\n"                      /* return address column */
	"	.byte 0x0c, 7, 0\n"              /* DW_CFA_def_cfa rsp, 0 */
	"	.p2align 3, 0\n"
	".Lrt_tramp_cie_end:\n"
	"	.long .Lrt_tramp_fde_end - .Lrt_tramp_fde_cie\n"
	".Lrt_tramp_fde_cie:\n"
	"	.long .Lrt_tramp_cie\n"
	"	.quad rt_exit_tramp - 1\n"
	"	.quad .Lrt_exit_tramp_end - rt_exit_tramp + 1\n"
	"	.byte 0x16, 16\n"                /* DW_CFA_val_expression ra */
	"	.uleb128 .Lrt_tramp_expr_end - .Lrt_tramp_expr\n"
	".Lrt_tramp_expr:\n"                 /* [cfa] */
	"	.byte 0x38, 0x1c\n"              /* lit8 minus: [s] */
	"	.byte 0x0e\n"                    /* const8u */
	"	.quad rt_tls@dtpoff\n"
	"	.byte 0xe0\n"                    /* GNU_push_tls_address: [s &rt_tls] */
	"	.byte 0x23, 16, 0x06\n"          /* plus_uconst t, deref: [s t] */
	"	.byte 0x12, 0x23, 12, 0x94, 4\n" /* dup plus_uconst depth deref_size 4: [s t d] */
	".Lrt_tramp_loop:\n"
	"	.byte 0x12, 0x28, 4, 0\n"        /* dup bra +4 */
	"	.byte 0x30, 0x2f\n"              /* lit0 skip end: not found */
	"	.short .Lrt_tramp_expr_end - .Lrt_tramp_nf\n"
	".Lrt_tramp_nf:\n"
	"	.byte 0x31, 0x1c\n"              /* lit1 minus: [s t i] */
	"	.byte 0x12, 0x0a\n"              /* dup const2u sizeof frame */
	"	.short 48\n"
	"	.byte 0x1e, 0x15, 2, 0x22\n"     /* mul pick t plus */
	"	.byte 0x23, 0x90, 0x12\n"        /* plus_uconst stack (2320): [s t i p] */
	"	.byte 0x12, 0x23, 8, 0x06\n"     /* dup plus_uconst slot deref */
	"	.byte 0x15, 4, 0x29\n"           /* pick s eq */
	"	.byte 0x28, 4, 0\n"              /* bra found */
	"	.byte 0x13, 0x2f\n"              /* drop skip loop: [s t i] */
	"	.short .Lrt_tramp_loop - .Lrt_tramp_found\n"
	".Lrt_tramp_found:\n"
	"	.byte 0x23, 40, 0x06\n"          /* plus_uconst site deref: [s t i ra] */
	".Lrt_tramp_expr_end:\n"
	"	.byte 0x02, 2, 0x0e, 8\n"        /* at +1: CFA = rsp + 8 */
	"	.byte 0x02, 1, 0x0e, 16\n"       /* at +2: rsp + 16 */
	"	.byte 0x02, 15, 0x0e, 8\n"       /* at +17: rsp + 8 */
	"	.byte 0x02, 1, 0x0e, 0\n"        /* at +18: rsp */
	"	.p2align 3, 0\n"
	".Lrt_tramp_fde_end:\n"
	"	.text\n");
_Static_assert(offsetof(struct rt_tls, t) == 16, "rt_exit_tramp's CFI: rt_tls.t");
_Static_assert(offsetof(struct sonde_thread, depth) == 12, "rt_exit_tramp's CFI: depth");
_Static_assert(offsetof(struct sonde_thread, stack) == 2320, "rt_exit_tramp's CFI: stack");
_Static_assert(sizeof(struct sonde_frame) == 48, "rt_exit_tramp's CFI: frame size");
_Static_assert(offsetof(struct sonde_frame, slot) == 8 && offsetof(struct sonde_frame, site) == 40,
               "rt_exit_tramp's CFI: slot, site");
/* The same keeping every general register (rt.h): the slot's place is
 * reserved for the real return address, nine pushes keep the stack
 * 16-byte aligned at the call, and a `ret` goes home. */
__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl rt_exit_tramp_full\n"
	"	.hidden rt_exit_tramp_full\n"
	"	.type rt_exit_tramp_full,@function\n"
	"rt_exit_tramp_full:\n"
	"	sub $8, %rsp\n"
	"	push %rax\n	push %rdx\n	push %rcx\n	push %rsi\n	push %rdi\n"
	"	push %r8\n	push %r9\n	push %r10\n	push %r11\n"
	"	lea 72(%rsp), %rdi\n"
	"	call *rt_exit_hook(%rip)\n"
	".Lrt_exit_tramp_full_called:\n"
	"	mov %rax, 72(%rsp)\n"
	".Lrt_exit_tramp_full_stored:\n"
	"	pop %r11\n	pop %r10\n	pop %r9\n	pop %r8\n"
	"	pop %rdi\n	pop %rsi\n	pop %rcx\n	pop %rdx\n	pop %rax\n"
	"	ret\n"
	"	.if .Lrt_exit_tramp_full_called - rt_exit_tramp_full - " RT_STR(RT_TRAMP_FULL_CALLED) "\n"
	"	.error \"rt_exit_tramp_full's layout is not rt.h's\"\n"
	"	.endif\n"
	"	.if .Lrt_exit_tramp_full_stored - rt_exit_tramp_full - " RT_STR(RT_TRAMP_FULL_STORED) "\n"
	"	.error \"rt_exit_tramp_full's layout is not rt.h's\"\n"
	"	.endif\n"
	"	.if . - rt_exit_tramp_full - " RT_STR(RT_TRAMP_FULL_LEN) "\n"
	"	.error \"rt_exit_tramp_full's layout is not rt.h's\"\n"
	"	.endif\n"
	"	.size rt_exit_tramp_full, .-rt_exit_tramp_full\n");

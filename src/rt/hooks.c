/* hooks.c — the per-call hot path: what runs on every entry and exit of an
 * instrumented function while sonde records.
 *
 * The module object (module.c) has already turned the function address into
 * (module slot, number) by reading the function's padding.  Here:
 *  - profile mode: the calling-context tree (CCT) of the thread is extended
 *    and its node's calls / inclusive ticks updated.  The node of the callee
 *    is found through the thread's records[number] array for the module
 *    (seed 000: the number is the subscript) which remembers the node the
 *    function last ran in; a check of that node's parent confirms the
 *    context.  Only when the function runs in a context other than the last
 *    one are the current node's children scanned (move-to-front), and a new
 *    context allocated from the thread's pre-sized pool.
 *  - trace mode: an entry / exit record goes into the thread's ring (trace.c).
 *
 * Rules: O(1) work, no locks, no system calls, no malloc, no stdio; state in
 * initial-exec TLS; errno untouched (nothing here sets it); re-entry (a
 * signal handler's instrumented code interrupting a hook) is detected and the
 * nested calls are counted as lost, not recorded half-way.
 *
 * Non-local exits (longjmp, exceptions caught far up): each frame keeps the
 * instrumented function's frame pointer (`cfa`), the same at its entry and
 * exit hooks, smaller for deeper activations.  An exit that does not match
 * the top frame looks down the stack for its own frame; the frames above it
 * were skipped by a non-local exit and are closed at this instant (seed 003's
 * rule: they end with the code that resumes), then the exiting frame.  Code
 * built without frame pointers falls back to matching the function on top.
 * The entry of a call also closes frames left above it by a non-local exit,
 * so the code that resumed gets its calls under the right caller at once.
 */
#include <stdatomic.h>

#include "common/clock.h"
#include "rt/rt.h"
#include "rt/trace.h"

/* Frames of one stack lie within this distance: a frame pointer further away
 * (a signal handler on an alternate stack) is never taken for a stale frame. */
#define STALE_WINDOW ((uintptr_t)1 << 20)

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
		t->lost[SONDE_LOST_CCT_NODES]++;
		return RT_NO_NODE;
	}
	uint32_t n = t->nodes_used;
	struct sonde_node *nd = &nodes[n];
	nd->parent = cur;
	nd->func = func;
	nd->first_child = 0;
	nd->calls = 0;
	nd->ticks = 0;
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
	uint32_t *recs = slot < SONDE_MAX_MODS_PER_THREAD ? L->recs[slot] : NULL;
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

static __attribute__((noinline, cold)) void close_stale(struct rt_tls *L, struct sonde_thread *t, uintptr_t cfa,
                                                        uintptr_t site, uint64_t now);

/* The hooks' bodies take the session mode as a parameter; the entry points
 * below instantiate them for a constant mode, so the profile-only and
 * trace-only hooks carry none of the other mode's code (the runtime installs
 * the one that matches the session, see runtime.c). */
static inline __attribute__((always_inline)) void enter_body(struct sonde_modhook *m, uint32_t number,
                                                             uintptr_t cfa, uintptr_t site, uint32_t mode)
{
	struct rt_tls *L = &rt_tls;
	if (__builtin_expect(L->state != RT_T_ON, 0) && !rt_thread_slow())
		return;
	struct sonde_thread *t = L->t;
	if (L->busy) {
		t->lost[SONDE_LOST_REENTRY]++;
		return;
	}
	L->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	uint64_t now = clock_ticks();
	uint32_t d = t->depth;
	/* A live caller's frame pointer is above its callee's, or equal for an
	 * inlined callee: a top frame at or below ours may have been skipped by a
	 * longjmp / exception (close_stale decides). */
	if (__builtin_expect(d && t->stack[d - 1].cfa <= cfa && cfa - t->stack[d - 1].cfa < STALE_WINDOW, 0)) {
		close_stale(L, t, cfa, site, now);
		d = t->depth;
	}
	if (__builtin_expect(d >= SONDE_STACK_MAX, 0)) {
		t->lost[SONDE_LOST_STACK_DEPTH]++;
		L->overflow++;
		goto out;
	}
	uint32_t idx = number;
	if (__builtin_expect(number >= m->nfuncs, 0)) {
		t->lost[SONDE_LOST_UNNUMBERED]++;
		idx = m->nfuncs; /* the module's unnumbered bucket */
		number = SONDE_UNNUMBERED;
	}
	uint32_t func = SONDE_FUNC(m->slot, number);
	struct sonde_frame *f = &t->stack[d];
	f->node = (mode & SONDE_MODE_PROFILE) ? cct_enter(L, t, m, idx, func) : RT_NO_NODE;
	f->start = now;
	f->cfa = cfa;
	f->site = site;
	f->func = func;
	f->flags = 0;
	if (mode & SONDE_MODE_TRACE)
		trace_enter(L, t, f, d + 1, now);
	atomic_signal_fence(memory_order_release); /* frame complete before depth covers it */
	t->depth = d + 1;
	t->last_tsc = now;
out:
	atomic_signal_fence(memory_order_seq_cst);
	L->busy = 0;
}

/* Close frame i (the top) at `now`. */
static inline __attribute__((always_inline)) void pop_frame_mode(struct rt_tls *L, struct sonde_thread *t, uint32_t i,
                                                                 uint64_t now, int abnormal, uint32_t mode)
{
	struct sonde_frame *f = &t->stack[i];
	if (f->node != RT_NO_NODE) {
		L->nodes[f->node].ticks += now - f->start;
		t->cur_node = L->nodes[f->node].parent;
	}
	if (mode & SONDE_MODE_TRACE)
		trace_exit(L, t, f, i + 1, now, abnormal);
	atomic_signal_fence(memory_order_release);
	t->depth = i;
}

/* The slow paths use the session's mode. */
static void pop_frame(struct rt_tls *L, struct sonde_thread *t, uint32_t i, uint64_t now, int abnormal)
{
	pop_frame_mode(L, t, i, now, abnormal, rt_mode);
}

/* Close the frames skipped by a non-local exit, found at the entry of a new
 * call from the code that resumed.  A top frame below ours is stale.  One at
 * the same frame pointer is the live host of an inlined callee when it was
 * entered from the same call site (inlined code reports its host's site; GCC
 * also inlines recursive functions into themselves, so the function may be
 * the same); otherwise it is a dead sibling at the same depth.  (A function
 * re-entered from the very call site a longjmp left stays nested under its
 * dead twin until the resuming code returns: then it is closed.) */
static __attribute__((noinline, cold)) void close_stale(struct rt_tls *L, struct sonde_thread *t, uintptr_t cfa,
                                                        uintptr_t site, uint64_t now)
{
	uint32_t d = t->depth;
	while (d) {
		struct sonde_frame *top = &t->stack[d - 1];
		if (top->cfa > cfa || cfa - top->cfa >= STALE_WINDOW)
			break;
		if (top->cfa == cfa && top->site == site)
			break;
		pop_frame(L, t, --d, now, 1);
	}
}

static __attribute__((noinline, cold)) void exit_slow(struct rt_tls *L, struct sonde_thread *t, uint32_t func, uintptr_t cfa, uint64_t now)
{
	uint32_t d = t->depth;
	for (uint32_t i = d; i-- > 0;) {
		if (t->stack[i].func != func || t->stack[i].cfa != cfa)
			continue;
		/* Frames above i were skipped by a non-local exit: they end now. */
		for (uint32_t j = d; j-- > i + 1;)
			pop_frame(L, t, j, now, 1);
		pop_frame(L, t, i, now, 0);
		return;
	}
	if (d && t->stack[d - 1].func == func) { /* no frame pointer: trust the nesting */
		pop_frame(L, t, d - 1, now, 0);
		return;
	}
	t->lost[SONDE_LOST_UNMATCHED_EXIT]++;
}

static inline __attribute__((always_inline)) void exit_body(struct sonde_modhook *m, uint32_t number,
                                                            uintptr_t cfa, uint32_t mode)
{
	struct rt_tls *L = &rt_tls;
	if (__builtin_expect(L->state != RT_T_ON, 0) || L->busy)
		return;
	L->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	struct sonde_thread *t = L->t;
	if (__builtin_expect(L->overflow != 0, 0)) {
		L->overflow--;
		goto out;
	}
	uint64_t now = clock_ticks();
	if (number >= m->nfuncs)
		number = SONDE_UNNUMBERED;
	uint32_t func = SONDE_FUNC(m->slot, number);
	uint32_t d = t->depth;
	if (__builtin_expect(d && t->stack[d - 1].func == func && t->stack[d - 1].cfa == cfa, 1))
		pop_frame_mode(L, t, d - 1, now, 0, mode);
	else
		exit_slow(L, t, func, cfa, now);
	t->last_tsc = now;
out:
	atomic_signal_fence(memory_order_seq_cst);
	L->busy = 0;
}

#define HOOKS(name, mode)                                                                     \
	RT_HIDDEN void rt_enter_##name(struct sonde_modhook *m, uint32_t n, uintptr_t cfa, uintptr_t site) \
	{                                                                                         \
		enter_body(m, n, cfa, site, mode);                                                \
	}                                                                                         \
	RT_HIDDEN void rt_exit_##name(struct sonde_modhook *m, uint32_t n, uintptr_t cfa, uintptr_t site)  \
	{                                                                                         \
		(void)site;                                                                       \
		exit_body(m, n, cfa, mode);                                                       \
	}
HOOKS(profile, SONDE_MODE_PROFILE)
HOOKS(trace, SONDE_MODE_TRACE)
HOOKS(any, rt_mode)

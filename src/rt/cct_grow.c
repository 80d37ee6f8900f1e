/* cct_grow.c — the cold path that grows a thread's calling-context node
 * pool when it is full (docs/ARCHITECTURE.md "Session memory", docs/FORMAT.md
 * "Session memory").
 *
 * The hot path indexes the pool, L->nodes[n], and checks one bound
 * (nodes_used < nodes_cap) only when it makes a node (hooks.c,
 * cct_child_slow).  When that check fails it calls rt_cct_grow, which:
 *  1. takes a pool of twice the nodes from the session's bump allocator
 *     (a page-aligned piece of the same sparse file: every process and the
 *     recorder map the whole session, so nothing is mapped anew), if the
 *     session's memory in use stays within the recorder's cap (mem_cap);
 *  2. copies the nodes made so far into it, with their indices: frames,
 *     records[number] and every link keep meaning the same node;
 *  3. publishes it: nodes_off then nodes_cap in the thread's header, then
 *     L->nodes (the hot path's base);
 *  4. gives the old pool's pages back to the system (MADV_REMOVE punches a
 *     hole in the tmpfs file or memfd) and counts them in mem_freed.
 * Doubling keeps the copies' total below the final pool's size (amortised
 * O(1) a node); giving the old pool back keeps the memory near what the
 * nodes take.  A thread killed anywhere in here leaves a complete pool
 * named in its header: the old one until step 3 (the copy is not yet
 * published), the new one after (the old one is only punched once the new
 * one is named).
 *
 * The recorder reads the trees after the program's end, except when it
 * ends a recording while the program runs on (`sonde record -p`'s end, a
 * launched program's daemons left running): it sets the session's `stop`
 * first, and reads after a grace period (rt/agent.c).  A growth is not
 * begun once `stop` is set (the call is charged to its caller and counted),
 * and the old pool is not given back if `stop` came during the copy: a
 * reader that took the old pool's offset still finds it whole.
 *
 * It runs inside an entry hook: the instrumented function's arguments are in
 * the vector registers (this file is built with -mgeneral-regs-only, and the
 * copy is `rep movsq`, not libc's memcpy), errno is the program's (the system
 * call is made directly), and the hook's re-entry guard is held (a signal's
 * instrumented handler does not come in). */
#include <stdatomic.h>
#include <stdint.h>

#include "rt/rt.h"

#define GROW_PAGE 4096u

/* madvise(addr, len, MADV_REMOVE) without libc (errno stays the program's). */
static long sys_madvise_remove(void *addr, uint64_t len)
{
#if defined(__x86_64__)
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "0"(28L /* SYS_madvise */), "D"(addr), "S"(len), "d"(9L /* MADV_REMOVE */)
	                 : "rcx", "r11", "memory");
	return r;
#else
	(void)addr, (void)len;
	return -1;
#endif
}

/* n 8-byte words from `from` to `to` (not overlapping) with general
 * registers only: `rep movsq`, which the CPU runs as a block copy. */
static void copy_words(uint64_t *to, const uint64_t *from, uint64_t n)
{
#if defined(__x86_64__)
	__asm__ volatile("rep movsq" : "+D"(to), "+S"(from), "+c"(n) : : "memory");
#else
	for (uint64_t i = 0; i < n; i++)
		to[i] = from[i];
#endif
}

/* The pages wholly inside [off, off + len) of the session given back. */
static void give_back(struct sonde_session_hdr *S, uint64_t off, uint64_t len)
{
	uint64_t lo = (off + GROW_PAGE - 1) & ~(uint64_t)(GROW_PAGE - 1);
	uint64_t hi = (off + len) & ~(uint64_t)(GROW_PAGE - 1);
	if (hi <= lo || sys_madvise_remove(sess_ptr(S, lo), hi - lo) != 0)
		return;
	atomic_fetch_add_explicit(&S->mem_freed, hi - lo, memory_order_relaxed);
}

RT_HIDDEN __attribute__((noinline, cold)) int rt_cct_grow(struct rt_tls *L, struct sonde_thread *t)
{
	struct sonde_session_hdr *S = rt_sess;
	uint64_t cap = t->nodes_cap, used = t->nodes_used;
	if (atomic_load_explicit(&S->stop, memory_order_acquire))
		return 0; /* the recorder may be reading: no pool moves */
	if (cap >= SONDE_NODES_MAX || used > cap)
		goto refused;
	uint64_t ncap = cap < 1024 ? 2048 : cap * 2;
	if (ncap > SONDE_NODES_MAX)
		ncap = SONDE_NODES_MAX;
	uint64_t bytes = ncap * sizeof(struct sonde_node);
	/* The cap counts what the allocator handed out less what was given
	 * back: the regions and rings of every thread, used or not, and the
	 * pools (an upper bound of the memory the session can take). */
	uint64_t a = atomic_load_explicit(&S->alloc, memory_order_relaxed);
	uint64_t inuse = a - atomic_load_explicit(&S->mem_freed, memory_order_relaxed);
	if (S->mem_cap && (inuse > S->mem_cap || bytes > S->mem_cap - inuse))
		goto refused;
	/* nor past the session's end: a refused sess_alloc would still move
	 * `alloc` past it, and no thread that starts later would get a region */
	if (a > S->size || bytes + GROW_PAGE > S->size - a)
		goto refused;
	/* page-aligned, so that the pool is given back whole when it grows again */
	uint64_t off = sess_alloc(S, bytes + GROW_PAGE);
	if (!off)
		goto refused;
	uint64_t noff = (off + GROW_PAGE - 1) & ~(uint64_t)(GROW_PAGE - 1);
	const uint64_t *from = (const uint64_t *)L->nodes;
	uint64_t *to = sess_ptr(S, noff);
	_Static_assert(sizeof(struct sonde_node) % 8 == 0, "the copy moves 8 bytes at a time");
	copy_words(to, from, used * (sizeof(struct sonde_node) / 8));
	uint64_t ooff = t->nodes_off;
	/* the copy complete before the header names it; the new offset before
	 * the larger capacity (a reader checks nodes_used against both) */
	atomic_thread_fence(memory_order_release);
	t->nodes_off = noff;
	atomic_thread_fence(memory_order_release);
	t->nodes_cap = (uint32_t)ncap;
	L->nodes = (struct sonde_node *)(void *)to;
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&S->stop, memory_order_relaxed))
		give_back(S, ooff, cap * sizeof(struct sonde_node));
	atomic_fetch_add_explicit(&S->grow_steps, 1, memory_order_relaxed);
	return 1;
refused:
	atomic_fetch_add_explicit(&S->grow_refused, 1, memory_order_relaxed);
	return 0;
}

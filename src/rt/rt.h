/* rt.h — what the parts of the runtime (libsonde-rt.so) share: the mapped
 * session, this process's slot, and per-thread state reached through
 * initial-exec TLS. Internal to src/rt/. */
#ifndef SONDE_RT_RT_H
#define SONDE_RT_RT_H

#include <stddef.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/ring.h"
#include "common/session.h"
#include "rt/modabi.h"

#define RT_HIDDEN __attribute__((visibility("hidden")))
#define RT_EXPORT __attribute__((visibility("default")))
#define RT_NO_NODE 0xffffffffu
#define RT_GRAVES  16
#define RT_FDE_BYTES 1024

enum { RT_T_NEW = 0, RT_T_ON = 1, RT_T_OFF = 2 };
/* For vfork's assembly (runtime.c; checked there against the struct). */
#define RT_T_OFF_VALUE      2
#define RT_TLS_VFORK_RET    72
#define RT_TLS_VFORK_STATE  80
#define RT_STR_(x) #x
#define RT_STR(x) RT_STR_(x)

/* Process-local, per-thread state that does not fit in the TLS block:
 * mapped privately at a thread's first event (see struct rt_tls). */
struct rt_priv {
	uint32_t *recs[SONDE_MAX_MODS_PER_THREAD]; /* records[number] per module (seed 000) */
	/* record --timing: the calls of each counted function, per module, by
	 * number (+1: the unnumbered bucket), in the session (t->cnt_off); NULL
	 * until the thread's first counted call of the module.  A counted
	 * function's stub adds to it itself (instr_abi.h's CNT slot holds
	 * offsetof(cnt) + 8 * slot), else the hook does (hooks.c, enter_count). */
	uint64_t *cnt[SONDE_MAX_MODS_PER_THREAD];
	uint64_t *cnt_none; /* always NULL: the CNT slot of a module whose slot has no cnt[] entry */
	/* Return addresses of the last frames closed as dead (hooks.c). */
	struct { uintptr_t slot, ra; } grave[RT_GRAVES];
	/* observe.c: the exit trampoline's CIE and FDE for libgcc's unwinder,
	 * made for this thread's shadow stack at its first unwinding through a
	 * hooked frame (fde_for: the thread state it was made for). */
	struct sonde_thread *fde_for;
	uint16_t fde_full; /* offset of rt_exit_tramp_full's FDE in fde (rt_exit_tramp's follows the CIE) */
	uint16_t fde_common; /* offset of the FDE of a patched module's common entry (instr_abi.h) */
	uint8_t fde[RT_FDE_BYTES];
};

/* Process-local, per-thread state.  Everything the hot path needs in one
 * cache-friendly place; the durable state lives in the session (t).
 * Kept small: it is initial-exec TLS, and when the runtime is loaded late
 * (the agent, `sonde record -p`) glibc places it in the static TLS surplus,
 * which is about 1.5 KiB shared by every library dlopen'ed with such TLS
 * ("cannot allocate memory in static TLS block" otherwise).  The large
 * per-thread tables are behind `priv`. */
struct rt_tls {
	uint32_t state;         /* RT_T_* */
	uint32_t busy;          /* runtime sections this thread is inside (+ RT_BUSY_PENDING: signals.c) */
	uint32_t grave_next;    /* next graveyard entry to reuse */
	uint32_t slot;          /* thread slot */
	struct sonde_thread *t;
	struct sonde_node *nodes;
	struct sonde_ring *ring;
	uint64_t trace_seq;     /* trace mode: chunk seq of the last entry record */
	uint64_t trace_last;    /* without a trace (lock events of a profile): time of the last record
	                         * written to `ring` (rt_ring_last; in a trace, t->last_tsc) */
	struct rt_priv *priv;   /* never NULL while state == RT_T_ON */
	uintptr_t first_slot;   /* during a thread's first event from an entry: its call's slot (agent.c) */
	uintptr_t vfork_ret;    /* vfork (runtime.c): the caller's return address while the child runs */
	uint32_t vfork_state;   /* vfork: state to give back to the parent */
	uint32_t alt_known;     /* alt_lo/alt_hi hold this thread's alternate signal stack (rt_slot_dead) */
	/* trace mode, the chunk of `ring` the function records fill (trace.h),
	 * their write position its `used`; &rt_chunk_full when not known
	 * (rt_ring_forget, thread_attach), never NULL while state == RT_T_ON */
	struct sonde_chunk *tchunk;
	uintptr_t alt_lo, alt_hi; /* [lo, hi), or 0, 0: none (set by sigaltstack, context.c) */
	uint64_t sig_deferred;  /* signals.c: the signals held back while busy (bit sig - 1) */
	/* cpu_time.c: the lock word of this thread's perf event page, which the
	 * kernel changes at each of the thread's context switches (with the
	 * futex event: the low half of its ring's head, which moves at each
	 * switch and each futex call), or a word that never changes (no page);
	 * never NULL while state == RT_T_ON */
	const volatile uint32_t *cpu_lock;
	uint32_t cpu_seen;      /* its value when off_ns was taken */
	uint64_t cpu_at;        /* the clock ticks when off_ns was taken (an exit hook's, or the cold path's) */
	uint64_t cpu_quiet;     /* ticks after which an exit takes off_ns again without a switch
	                         * (interrupts, stolen time: rt_cpu_check_at); ~0: never (no page) */
	int32_t cpu_tid;        /* the thread cpu_page was opened in (a fork child's copy is its parent's) */
	uint64_t off_ns;        /* the thread's off-CPU nanoseconds as of cpu_seen */
	void *cpu_page;         /* the mapped page (and ring, cpu_len), or NULL */
	uint32_t cpu_len;       /* bytes mapped there: the user page, and a page of switch records
	                         * when the thread's split tells runnable from blocked */
	uint64_t sw_out_ns;     /* the time of a switch-out still waiting for its switch-in (0: none) */
	uint64_t sw_last_ns;    /* the latest switch record's time (they go forward) */
	uint32_t sw_preempt;    /* that switch-out was a preemption */
	uint32_t cpu_futex;     /* the event is the kernel's syscalls:sys_exit_futex (record --syscalls):
	                         * its samples are the thread's futex calls, cpu_lock its ring's head */
	uint32_t futex_ret_off; /* the offset of `ret` in its samples' raw data */
};

/* The runtime's sections on a thread (the hooks, the lock wrappers, the
 * slow paths that change the shadow stack): rt_busy_in / rt_busy_out around
 * them, one read-modify-write instruction each (a signal lands between two
 * instructions of this thread, never inside one).  A signal whose handler
 * the program installed (signals.c wraps it) that lands while busy is held
 * back: queued again to this thread and blocked, RT_BUSY_PENDING set; the
 * outermost section's rt_busy_out sees it and lets the signal in
 * (rt_sig_release), so the handler runs on committed state only, its calls
 * recorded as any others.  A hook entered with busy 0 may store 1 instead
 * of rt_busy_in: nothing was pending. */
#define RT_BUSY_PENDING 0x80000000u
RT_HIDDEN void rt_sig_release(struct rt_tls *L);
static inline __attribute__((always_inline)) void rt_busy_in(struct rt_tls *L)
{
	__asm__ volatile("addl $1, %0" : "+m"(L->busy) : : "cc");
}
/* busy - 1 and its test in one instruction (no signal between them):
 * nonzero when still inside an outer section or a signal is held back. */
static inline __attribute__((always_inline)) int rt_busy_dec(struct rt_tls *L)
{
	__asm__ goto("subl $1, %0\n\tjnz %l[more]" : : "m"(L->busy) : "cc", "memory" : more);
	return 0;
more:
	return 1;
}
static inline __attribute__((always_inline)) void rt_busy_out(struct rt_tls *L)
{
	if (__builtin_expect(rt_busy_dec(L), 0))
		rt_sig_release(L);
}

/* trace.h's plain hook (rt_enter_hook) is given to the modules of these
 * slots only, whose functions' varints (func < 2^26: four bytes at most)
 * rt_fenc keeps. */
#define TRACE_PLAIN_SLOTS 64u
/* Shared by the process's threads, indexed by func = SONDE_FUNC(slot,
 * number) itself (the unnumbered bucket at number SONDE_UNNUMBERED), which
 * the hook has in a register: one load from one base, no per-slot table to
 * find first.  An entry is 0 until a thread of the process first records
 * the function, then the record's bytes as the hook stores them
 * (trace_fenc, trace.h): 0x80 (the two-byte gap's first byte, before the
 * gap is added), varint(func) in bytes 2..5, 2 + its length in byte 6.
 * Process-private memory: TRACE_PLAIN_SLOTS << 20 entries reserved
 * PROT_NONE at the first module given the plain hook, a slot's [0, nfuncs)
 * and its unnumbered entry made writable as its module is (rt_enter_hook),
 * never freed; NULL: no plain hook in this process. */
extern RT_HIDDEN uint64_t *rt_fenc;
_Static_assert(TRACE_PLAIN_SLOTS <= SONDE_MAX_MODS_PER_THREAD, "plain slots have records[number] for their marks");

/* Another writer of the thread's ring (lock events, a resume record, the
 * thread's end, a --min-time roll-back) has moved it: trace.h's next record
 * takes rt_ring_reserve_slow, which finds the position again.  The chunk
 * kept is then rt_chunk_full (hooks.c), read-only and always full, so that
 * the fast path's one test of `used` sends it there (no NULL test). */
extern RT_HIDDEN const struct sonde_chunk rt_chunk_full;
static inline void rt_ring_forget(struct rt_tls *L)
{
	L->tchunk = (struct sonde_chunk *)&rt_chunk_full;
}

extern RT_HIDDEN struct sonde_session_hdr *rt_sess;
extern RT_HIDDEN uint32_t rt_mode;
extern RT_HIDDEN uint32_t rt_proc_slot;
extern RT_HIDDEN __thread struct rt_tls rt_tls;
extern RT_HIDDEN int rt_floor; /* bench: floor hooks instead of the session's */

/* The time of the last record in the thread's ring, the base of the next
 * record's time gap (0 at a chunk's first record: its base).  In a trace,
 * the thread's last_tsc in the session, which the trace hooks store with
 * their records and not otherwise (hooks.c: the hooks of other modes store
 * it at every call), so that a record stores one time, not two; without a
 * trace (lock events of a profile, whose hooks write no record; the
 * floor's hooks, bench/), trace_last in L. */
static inline uint64_t *rt_ring_last(struct rt_tls *L)
{
	return (rt_mode & SONDE_MODE_TRACE) && !rt_floor ? &L->t->last_tsc : &L->trace_last;
}

/* At the start of a hook, before the shadow stack changes (cpu_time.c):
 * while the thread's page's lock word is unchanged, no context switch took
 * it off the CPU since its last hook; else the cold path takes its off-CPU
 * time again (two system calls) and, in a profile, gives what it grew by
 * to the context on top of the stack (t->cur_node), which was running all
 * the while: each node's off-CPU time is exclusive, as its wall time is. */
RT_HIDDEN uint64_t rt_cpu_refresh(struct rt_tls *L, uint32_t lock, uint32_t mode, uint64_t at);
/* The same at a hook whose time *now was taken before (an exit): the cold
 * path's own time (its system calls, slow after a long sleep: cold caches)
 * is then not the returning call's; its trace records go at *now, before
 * the hook's; a switch during it (the word moved again) makes *now the
 * time after it, so that the wait is inside the call it is given to. */
/* An exit also takes the time again when cpu_quiet ticks (2^18 TSC ticks,
 * ~0.1 ms) passed since the last look without a switch: the clocks count
 * interrupt and hypervisor-stolen time as off the CPU though no switch
 * moved the word, and that time, taken only at the next switch, would go
 * to whichever call is on top then.  A stolen stretch longer than the
 * window makes the next hook look by itself, so what can go to the wrong
 * call is less than one window of it (at most two system calls per window
 * of a thread's calls). */
static inline __attribute__((always_inline)) void rt_cpu_check_at(struct rt_tls *L, uint32_t mode, uint64_t *now)
{
	uint32_t l = *L->cpu_lock;
	if (__builtin_expect(l != L->cpu_seen || *now - L->cpu_at > L->cpu_quiet, 0)) {
		rt_cpu_refresh(L, l, mode, *now);
		if (L->cpu_seen != l)
			*now = clock_ticks();
	}
}
/* The same at an entry, its time *now taken before: the wait (a switch,
 * or a window without a look, as at an exit) is the caller's, its
 * trace record at *now; the call starts after the cold path (*now again),
 * so its system calls are not the callee's.  Looking at entries too keeps
 * interrupt and stolen time that fell in a caller from going to the callee
 * whose exit looks next. */
static inline __attribute__((always_inline)) void rt_cpu_check_enter(struct rt_tls *L, uint32_t mode, uint64_t *now)
{
	uint32_t l = *L->cpu_lock;
	if (__builtin_expect(l != L->cpu_seen || *now - L->cpu_at > L->cpu_quiet, 0)) {
		rt_cpu_refresh(L, l, mode, *now);
		if ((l = *L->cpu_lock) != L->cpu_seen) /* switched out during it: that wait is the caller's too */
			rt_cpu_refresh(L, l, mode, clock_ticks());
		*now = clock_ticks();
	}
}
/* thread_attach: the page of this thread opened (kept from an earlier
 * session of the same thread), its state in t; a fork child's copy of its
 * parent's page is unmapped first.  rt_cpu_close: the thread's end. */
RT_HIDDEN void rt_cpu_open(struct rt_tls *L, struct sonde_thread *t);
RT_HIDDEN void rt_cpu_close(struct rt_tls *L);
/* The agent's end: every registered thread's event given back (its page
 * replaced by a zero page, cpu_time.c), under the registry's lock. */
RT_HIDDEN void rt_cpu_retire(struct rt_tls *L);
RT_HIDDEN void rt_cpu_retire_all(void);

/* Attach to the session if this process has one (idempotent). 0 if attached. */
RT_HIDDEN int rt_init(void);
/* The agent: map the session at fd in a process that has none (-EBUSY: it
 * records already, -EINVAL: not a session of this version). */
RT_HIDDEN int rt_init_late(int fd);
/* The agent, at an attach after an earlier session of this process ended,
 * every other thread held stopped by sonde (none inside the runtime): each
 * frame still hooked by that session gets its real return address back,
 * every thread's state is reset (its next event takes a slot of the next
 * session) and the session's memory is given back.  0 (also when there was
 * none); -EBUSY a session is recording (launched, or attached and not
 * ended); -ENOSPC a thread's state cannot be reached; -EAGAIN a thread is
 * taking its slot or ending, try again. */
RT_HIDDEN int rt_session_retire(void);
/* Set when the agent has ended its recording: no module registers after. */
extern RT_HIDDEN int rt_agent_ended;
/* The exit hook once the agent has ended: the real return address of a
 * frame hooked before, nothing recorded (hooks.c). */
RT_HIDDEN uintptr_t rt_exit_ended(uintptr_t slot);
RT_HIDDEN void rt_enter_ended(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot);
/* First event of a thread: take a thread slot.  NULL when recording is off
 * for this thread (no session, no slot, no memory: the loss is counted). */
RT_HIDDEN struct rt_tls *rt_thread_slow(void);
static inline struct rt_tls *rt_thread(void)
{
	struct rt_tls *L = &rt_tls;
	return L->state == RT_T_ON ? L : rt_thread_slow();
}
RT_HIDDEN void rt_count_lost(struct sonde_thread *t, enum sonde_loss why);

/* rt_thread_slow behind a full save of the vector and x87 state (xsave):
 * called from the entry hook, where those registers hold the arguments of
 * the instrumented function and libc may use them. */
RT_HIDDEN struct rt_tls *rt_thread_slow_saving(void);

/* The hooks (hooks.c): one entry hook per session mode, installed into each
 * module's hook at registration; the exit trampoline and the exit hook it
 * calls (rt_exit_hook: the one for the session's mode, set by rt_init). */
RT_HIDDEN void rt_enter_profile(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot);
RT_HIDDEN void rt_enter_trace(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot);
RT_HIDDEN void rt_enter_any(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot);
RT_HIDDEN uintptr_t rt_exit_profile(uintptr_t slot);
RT_HIDDEN uintptr_t rt_exit_trace(uintptr_t slot);
RT_HIDDEN uintptr_t rt_exit_traceplain(uintptr_t slot);
RT_HIDDEN uintptr_t rt_exit_any(uintptr_t slot);
RT_HIDDEN void rt_enter_floor(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot);
/* The same for functions patched without a rebuild (instr.c): the stub
 * hands over the function's number instead of its address. */
RT_HIDDEN void rt_enter_num_profile(struct sonde_modhook *m, uintptr_t number, uintptr_t *slot);
RT_HIDDEN void rt_enter_num_trace(struct sonde_modhook *m, uintptr_t number, uintptr_t *slot);
RT_HIDDEN void rt_enter_num_any(struct sonde_modhook *m, uintptr_t number, uintptr_t *slot);
RT_HIDDEN void rt_enter_num_floor(struct sonde_modhook *m, uintptr_t number, uintptr_t *slot);
RT_HIDDEN void rt_enter_traceplain(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot);
RT_HIDDEN void rt_enter_num_traceplain(struct sonde_modhook *m, uintptr_t number, uintptr_t *slot);
/* The entry hook for the session's mode (numbered: a patched module's) and
 * module M (a trace without filters, none for M: the plain trace hook). */
RT_HIDDEN sonde_enter_fn rt_enter_hook(int numbered, const struct sonde_module *M);
/* The same for functions with exit sleds (sonde-as builds): entry hooks
 * that keep the return address, and the exit sleds' hook. */
#define RT_SLED_HOOKS(name)                                                                        \
	RT_HIDDEN void rt_enter_sled_##name(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot);    \
	RT_HIDDEN void rt_exit_sled_##name(uintptr_t *slot);
RT_SLED_HOOKS(profile)
RT_SLED_HOOKS(trace)
RT_SLED_HOOKS(any)
RT_SLED_HOOKS(floor)
/* record --timing=none (SONDE_MODE_NO_CPU): a sonde-cc build's calls
 * counted by number, no frame (hooks.c, counted_body) */
RT_HIDDEN void rt_enter_counted(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot);
RT_SLED_HOOKS(counted)
RT_HIDDEN void rt_enter_sled_traceplain(struct sonde_modhook *m, uintptr_t fn, uintptr_t *slot);
RT_HIDDEN void rt_exit_sled_traceplain(uintptr_t *slot);
RT_HIDDEN void rt_sled_hooks(const struct sonde_module *M, sonde_enter_fn *enter, sonde_exit_sled_fn *exit);
/* A tail call's sled: the frame's return address replaced from here on (any mode). */
RT_HIDDEN void rt_tail_sled(uintptr_t *slot);
/* The ring writer's slow path (hooks.c): ring_reserve for n bytes, the
 * position in L (trace.h) set, and t->last_tsc = now when the record starts
 * a chunk (its time is relative to the chunk's base); NULL when the record is
 * dropped (no ring; lossy and full, or the session stopping: the loss
 * counted). */
RT_HIDDEN uint8_t *rt_ring_reserve_slow(struct rt_tls *L, uint32_t n, uint64_t now);
/* Mark func as having left a trace record (the --domain file, trace.h). */
RT_HIDDEN void rt_trace_mark(struct rt_tls *L, uint32_t func);
/* An EXT record of the sized form with nv (1 to 4) varint fields v
 * (TRX_RESUME, TRX_OFFCPU, TRX_SWITCH) at `now` into the thread's ring (hooks.c:
 * general registers only, reached from the hooks' cold paths).  0, or -1:
 * lost (counted). */
RT_HIDDEN int rt_trace_ext(struct rt_tls *L, uint8_t type, const uint64_t *v, int nv, uint64_t now);
RT_HIDDEN uintptr_t rt_exit_floor(uintptr_t slot);
RT_HIDDEN void rt_exit_tramp(void);
/* Their layouts, which observe.c's unwind information for libgcc describes
 * instruction by instruction (checked in hooks.c's assembly): the byte
 * after the exit hook's call, after the real return address is where the
 * `ret` or `jmp` takes it from, and the end. */
#define RT_TRAMP_CALLED 13
#define RT_TRAMP_LEN 21
#define RT_TRAMP_FULL_CALLED 28
#define RT_TRAMP_FULL_STORED 33
#define RT_TRAMP_FULL_LEN 47
/* The exit trampoline of functions patched without a rebuild: it keeps every
 * general register, not only the return value's (their callers may keep
 * values in caller-saved registers across the call: GCC's -fipa-ra, which
 * GCC turns off for functions with a sonde-cc sled, not in plain builds). */
RT_HIDDEN void rt_exit_tramp_full(void);
static inline int rt_is_exit_tramp(uintptr_t v)
{
	return v == (uintptr_t)rt_exit_tramp || v == (uintptr_t)rt_exit_tramp_full;
}
/* The exit trampoline a frame of these flags is hooked with. */
static inline uintptr_t rt_exit_tramp_for(uint32_t frame_flags)
{
	return frame_flags & SONDE_FRAME_FULLSAVE ? (uintptr_t)rt_exit_tramp_full : (uintptr_t)rt_exit_tramp;
}
extern RT_HIDDEN uintptr_t (*rt_exit_hook)(uintptr_t slot);
/* Frames of one stack lie within this distance of each other: a slot
 * further from the stack pointer (another thread's stack, a coroutine's, an
 * alternate signal stack elsewhere) is never taken for a dead frame because
 * of its address alone. */
#define RT_STACK_WINDOW ((uintptr_t)1 << 20)
/* Whether a frame whose slot lies at or below `sp` is dead (a non-local exit
 * left it), as the slow paths decide: it is when the two are within the
 * window, unless `sp` is on the thread's alternate signal stack and the slot
 * is not: a handler interrupted that frame, and a handler's stack may lie
 * above the frames it interrupted (an array in main's frame, say).  The
 * thread's alternate stack is what its sigaltstack calls set (interposed,
 * context.c), or, before the first, what the kernel says (one system call
 * per thread, at the first frame that would be dead by its address); `alt`
 * caches it for one decision: zero *alt before the first use. */
struct rt_altstack {
	int asked, on;
	uintptr_t lo, hi;
};
RT_HIDDEN int rt_slot_dead(struct rt_altstack *alt, uintptr_t sp, uintptr_t slot);
/* A non-local exit from sp (signals.c's longjmp): if sp is on the thread's
 * alternate signal stack, close the frames on top whose slots are on it (a
 * handler's there, left for a stack the window does not see). */
RT_HIDDEN void rt_close_alt(struct rt_tls *L, struct sonde_thread *t, uintptr_t sp, uint64_t now);
/* Close the frames of t whose slot lies below sp (dead after a non-local exit). */
RT_HIDDEN void rt_close_below(struct rt_tls *L, struct sonde_thread *t, uintptr_t sp, uint64_t now);
/* Close every open frame of t as dead (abnormal, a graveyard entry each):
 * its thread has ended its start routine (runtime.c, thread_end), or they
 * belong to a context that ended (context.c). */
RT_HIDDEN void rt_close_all(struct rt_tls *L, struct sonde_thread *t, uint64_t now);
/* Close the frames of t that are dead although their slots may lie above sp:
 * those whose slot no longer holds what a live frame's holds (the exit
 * trampoline, or its real return address once unhooked), and every frame
 * above the first such one.  A thread's TLS destructors run after its
 * unwinding (pthread_exit, pthread_cancel) from a frame of start_thread
 * that lies below its first recorded frame's slot (context.c).  Only slots
 * within the window of sp are read. */
RT_HIDDEN void rt_close_dead(struct rt_tls *L, struct sonde_thread *t, uintptr_t sp, uint64_t now);
/* Coroutines (context.c): take every frame of t off its shadow stack, as if
 * they returned now (their time stops; in a trace, their slices end), into
 * out (outermost first; at most max, else nothing is done).  The count, or
 * UINT32_MAX if there are more than max. */
RT_HIDDEN uint32_t rt_suspend_frames(struct rt_tls *L, struct sonde_thread *t, struct sonde_frame *out, uint32_t max,
                                     uint64_t now);
/* The thread's node pool is full: grow it (cct_grow.c; cold).  1 when
 * L->nodes and t->nodes_cap name a larger pool holding the same nodes, 0
 * when refused (the session's memory cap, or the largest pool, reached). */
RT_HIDDEN int rt_cct_grow(struct rt_tls *L, struct sonde_thread *t);
/* Per-module record array of this thread (slow path, once per thread and module). */
RT_HIDDEN uint32_t *rt_recs_alloc(struct rt_tls *L, uint32_t mod_slot);
/* fork: snapshot the open frames (prepare), re-create them in the child. */
RT_HIDDEN void rt_thread_before_fork(void);
RT_HIDDEN void rt_thread_after_fork(int child);
/* Open frames of this thread that it did not enter while recording (a fork
 * child's copy of its parent's, the calls running at an attach): frames[i]
 * (func, slot, site; flags: SONDE_FRAME_TRACED for a TRX_RESUME record,
 * UNHOOKED) become the shadow stack, outermost first, starting at `now`,
 * their CCT nodes made without a call counted.  frames may be t->stack. */
RT_HIDDEN void rt_resume_frames(struct rt_tls *L, const struct sonde_frame *frames, uint32_t depth, uint64_t now);
/* The same for frames that rt_suspend_frames took off this thread's shadow
 * stack (a coroutine resumed, context.c): their CCT nodes are theirs again. */
RT_HIDDEN void rt_resume_suspended(struct rt_tls *L, const struct sonde_frame *frames, uint32_t depth, uint64_t now);
/* The agent (agent.c): at a thread's first event, take the calls it was in
 * at the attach (the session's attach table), checked against its stack,
 * as resumed frames, and hook their return addresses. */
RT_HIDDEN void rt_agent_adopt(struct rt_tls *L);
/* The number of fn in module m from its padding, or SONDE_UNNUMBERED. */
static inline uint32_t rt_number_of(const struct sonde_modhook *m, uintptr_t fn)
{
	uintptr_t pad = fn - SONDE_PAD;
	if (__builtin_expect(pad - m->lo <= m->span, 1)) {
		const uint32_t *w = (const uint32_t *)pad;
		uint32_t num = w[0];
		if (num < m->nfuncs && w[1] == sonde_tag(num, m->salt))
			return num;
	}
	return SONDE_UNNUMBERED;
}
/* Number a module's functions and switch on its sleds (patch.c); `skip`: the
 * trace filter bitmap (bit 2n+1 set: function n stays dormant), or NULL. */
RT_HIDDEN int rt_patch_module(struct sonde_modhook *m, const uint8_t *skip);
/* Switch the sleds back to nops while the program runs (agent.c). */
RT_HIDDEN int rt_unpatch_module(struct sonde_modhook *m);
extern RT_HIDDEN int rt_patch_live; /* sleds are written while threads run */

/* A module slot of the session for a module of nfuncs functions with an
 * instruction at `anchor`: its load bias, path and build-id filled in, its
 * function table allocated (*funcs: nfuncs link-time addresses to fill).
 * NULL when there is none (the loss is counted). */
RT_HIDDEN struct sonde_module *rt_module_new(uintptr_t anchor, uint32_t nfuncs, uint32_t *slot, uint64_t **funcs);
/* Make [lo, hi) of a module's code writable (on = 1) or read-only
 * executable again (0): 0, or -1 (patch.c). */
RT_HIDDEN int rt_text_writable(uintptr_t lo, uintptr_t hi, int on);
/* filter.c: the trace filters' bitmap of module M (M->filter_off). */
RT_HIDDEN void rt_filter_module(struct sonde_module *M);
/* instr.c: the modules sonde planned that this process has loaded are
 * patched (at the runtime's start, before the program's code runs). */
RT_HIDDEN void rt_instr_start(void);
/* instr.c: the SONDE_FUNC id of the patched function whose entry is fn, or
 * SONDE_UNNUMBERED (the calls running at an attach). */
RT_HIDDEN uint32_t rt_instr_func_at(uintptr_t fn);
/* instr.c: the region whose common entry (instr_abi.h) pc is in, or 0
 * (observe.c's unwind information for it). */
RT_HIDDEN uintptr_t rt_instr_common_at(uintptr_t pc);
/* instr.c: the end of an attached recording: every patched byte back while
 * the program runs. */
RT_HIDDEN void rt_instr_end(void);
/* instr.c: a later attach, every other thread held (rt_session_retire):
 * what an earlier one patched without a rebuild (its bytes are back since
 * its end) is forgotten, its stubs and regions unmapped, except a region
 * one of the nbusy pcs of the held threads is inside, or every region when
 * nbusy > SONDE_INSTR_MAX_BUSY (not known whole): those stay. */
RT_HIDDEN void rt_instr_retire(const uint64_t *busy, uint32_t nbusy);

/* Register a module (runtime.c; exported: module constructors call it). */
RT_EXPORT int sonde_rt_register_module(struct sonde_modhook *m);
/* The modules registered in this session (runtime.c): their count, *out the list. */
RT_HIDDEN uint32_t rt_registered_modules(struct sonde_modhook ***out);
RT_EXPORT int sonde_agent_start(const char *session, const char *alive, long held);
RT_EXPORT int sonde_agent_retire(const char *session, long held);

/* The agent's --locks (locks.c): the wrappers for got.c (the real functions
 * resolved first), and their end (pass-through from then on). */
struct rt_got_sym;
RT_HIDDEN int rt_locks_wrappers(const struct rt_got_sym **out);
/* The system-call wrappers (syscalls.c) for the GOT of an attached
 * program (--syscalls -p); reset: a later session boots them afresh. */
RT_HIDDEN int rt_syscall_wrappers(const struct rt_got_sym **out);
RT_HIDDEN void rt_syscalls_reset(void);
/* The futex calls from the kernel's events (syscalls.c; cpu_time.c reads
 * them): the table booted (1), a thread's event opened or refused, one
 * exit of call by the function on top of L's stack with the kernel's
 * result, or `lost` exits the ring lost. */
RT_HIDDEN int rt_sys_ready(void);
RT_HIDDEN void rt_sys_futex_thread(int ok);
RT_HIDDEN void rt_sys_kernel(struct rt_tls *L, uint32_t call, int64_t rc, uint64_t lost);
RT_HIDDEN void rt_locks_end(void);
RT_HIDDEN void rt_locks_reset(void);
/* probes.c: a `sonde probe -p` session runs in this process (its server
 * thread serves sonde). */
RT_HIDDEN int rt_probe_running(void);
/* The agent: the C++ unwinder's wrappers for got.c (unwind.c; the real
 * entry points resolved first). */
RT_HIDDEN int rt_unwind_wrappers(const struct rt_got_sym **out);
/* The real definition of `name` (not `self`): the next after the runtime's,
 * else the global scope's, else that of `lib` if it is loaded; cached. */
RT_HIDDEN void *rt_real_sym(void **cache, const char *name, void *self, const char *lib);
/* observe.c: the wrappers that keep the program's view of its own stack
 * (backtrace, _Unwind_Backtrace, pthread_exit, ...) for got.c. */
RT_HIDDEN int rt_observe_wrappers(const struct rt_got_sym **out);
/* context.c: swapcontext and __cxa_thread_atexit_impl, for got.c; in a
 * fork child, the table of suspended contexts unlocked (another thread of
 * the parent may have held it). */
RT_HIDDEN int rt_context_wrappers(const struct rt_got_sym **out);
/* runtime.c's _exit and _Exit (a forked child's end and status). */
RT_HIDDEN __attribute__((noreturn, nothrow, leaf)) void rt_exit_now(int status);
RT_HIDDEN __attribute__((noreturn, nothrow, leaf)) void rt_exit_now2(int status);
RT_HIDDEN void rt_context_after_fork(void);
/* signals.c: sigaction and signal for got.c; the handlers the program
 * installed before an attach wrapped, and put back at its end. */
RT_HIDDEN int rt_signal_wrappers(const struct rt_got_sym **out);
RT_HIDDEN void rt_signals_adopt(void);
RT_HIDDEN void rt_signals_end(void);
/* dlcall.c: dlsym for got.c; and for a dlopen, dlmopen or dlsym entered
 * with its return address in *slot: if that is an exit trampoline's (a
 * recorded function's tail call), a `ret` byte in the real caller's object
 * to enter libc's with instead, or 0 (the real return address is then back
 * in *slot, under a CET shadow stack, or nothing is done). */
RT_HIDDEN int rt_dlcall_wrappers(const struct rt_got_sym **out);
RT_HIDDEN uintptr_t rt_dl_gadget(uintptr_t *slot);
/* probes.c: the probe agent's replaced return addresses of this thread put back (an exception unwinds). */
RT_HIDDEN void rt_probes_unhook(void);
/* exec_follow.c: a runtime loaded late follows exec (probes.c's session,
 * agent.c's attached recording).  rt_exec_wrappers gives the redirections;
 * rt_probes_follow and rt_agent_follow fill *k with what an exec keeps of
 * their session (0), or say that none follows this one (-1; spawn: it is a
 * posix_spawn's, a new process); no malloc and no lock (a vfork child calls
 * them).  rt_strip_preload takes the runtime out of LD_PRELOAD (a new
 * image's constructor). */
struct rt_got_sym;
struct rt_follow_keep {
	int fd[2];          /* the session's memory, sonde's pipe (the new image gets copies) */
	const char *var[2]; /* the variables that name the copies' numbers */
	const char *flag;   /* "NAME=1": the new image is an exec of the session */
	const char *prefix; /* the session's variables, dropped from the environment given */
};
RT_HIDDEN int rt_exec_wrappers(const struct rt_got_sym **out);
RT_HIDDEN int rt_probes_follow(struct rt_follow_keep *k, int spawn);
RT_HIDDEN int rt_agent_follow(struct rt_follow_keep *k, int spawn);
/* agent.c: an attached recording whose sonde has closed its pipe (it ended,
 * or died): nobody answers the session's requests any more (instr.c). */
RT_HIDDEN int rt_agent_sonde_gone(void);
RT_HIDDEN void rt_strip_preload(void);

/* exec_env.c, for exec_follow.c too: would the program at path load the
 * runtime?  0 when it is statically linked (why: "static"), set-uid/set-gid
 * to another user (the loader ignores LD_PRELOAD: "set-uid") or 32-bit (the
 * loader would refuse the runtime: why NULL, not noted); 1 otherwise (a
 * script, or one that cannot be read: the exec decides).  And execvp's
 * search: the first executable file in PATH (the program's own), into buf;
 * the name itself when it has a slash or none is found.  No malloc. */
RT_HIDDEN int rt_exec_loads_rt(const char *path, const char **why);
RT_HIDDEN const char *rt_exec_search_path(const char *file, char *buf, size_t n);

/* runtime.c, for exec_env.c and exec_follow.c: a process slot for the image
 * an exec is about to start that will not load the runtime (why: "static" or
 * "set-uid"; NULL: none noted): its slot, or -1; given back when the exec
 * returned (it failed). */
RT_HIDDEN int rt_note_plain_exec(const char *path, const char *why);
RT_HIDDEN void rt_unnote_plain_exec(int slot);

/* Signal-safe diagnostics (write(2) on a stack buffer). */
RT_HIDDEN void rt_log(const char *msg);

/* Start a detached thread of the runtime (the agent's watcher, the probe
 * server) running fn(arg) on a stack of `stack` bytes, every signal
 * blocked in it: the program's signals go to its own threads, as before.
 * 0, or the error number of pthread_create. */
RT_HIDDEN int rt_thread_start(void *(*fn)(void *), void *arg, size_t stack);

/* The address span [*lo, *hi) of a loaded object's PT_LOAD segments (from
 * dl_iterate_phdr); 0 when it has none. */
struct dl_phdr_info;
int rt_object_span(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi);

#endif

/* lock_session.h — the lock profiler's data (seed 001), shared by the lock wrappers
 * (src/rt/locks.c, inside the profiled program) and the recorder
 * (src/record/locks_out.c), which converts them to the REC_LOCKS records of
 * common/format_locks.h (record/convert.c).  Pure layout: no runtime code here.
 *
 * Session memory (offsets, never pointers; see common/session.h):
 *  - hdr->locks_off -> struct lk_session: the two map tables of the seed.
 *      * the lock table: lock-free open addressing keyed by (process, address),
 *        giving each lock a small index (lock id).  A slot's id is replaced by a
 *        new id (generation + 1) when the address is initialised again or used
 *        after pthread_*_destroy: a freed and reused address is a new lock;
 *      * lk_lock[id]: what is known of the lock (address, kind, generation, the
 *        return address of its init or first use, last owner);
 *      * lk_map[]: per process, the loaded objects (path, address range, load
 *        bias) captured with dl_iterate_phdr off the hot path, so that a
 *        program that was not built with sonde still gets its locks named by
 *        symbol and call site at report time.
 *    The thread table is the session's thread slots (hdr->threads_off).
 *  - sonde_thread.lock_off -> struct lk_thread: this thread's aggregates, one
 *    struct lk_stat per lock it touched, found through map[lock id] in O(1).
 *    Written by that thread only; read by the recorder after the end.
 *
 * Event stream (--locks=events, --trace): one record per operation in the
 * thread's ring, encoded as common/lock_enc.h says.  The seed's compact word
 * is (thread, lock, op): the thread is the ring's (chunk.thread), so the
 * record carries only lock id and op.  Chunks carry a
 * sequence number: the analysis finds lost chunks as gaps.
 */
#ifndef SONDE_COMMON_LOCK_SESSION_H
#define SONDE_COMMON_LOCK_SESSION_H

#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/lock_enc.h" /* lock kinds, flags, event op codes */
#include "common/session.h"

#define LK_TABLE_BITS 18u
#define LK_TABLE_SLOTS (1u << LK_TABLE_BITS)   /* hash slots (load kept <= 1/2) */
#define LK_MAX_LOCKS   (1u << 17)              /* lock ids over the recording */
#define LK_MAX_MAPS    4096u                   /* loaded objects, all processes */
#define LK_MAP_PATH    256u
#define LK_THREAD_STATS 4096u                  /* distinct locks per thread */
#define LK_HIST        40u                     /* log2(ticks) buckets */
#define LK_SITES       4u                      /* top contended call sites per thread and lock */

struct lk_slot {
	_Atomic uint64_t key;   /* 0 free; else address | (proc + 1) << 48 */
	_Atomic uint32_t id;    /* current lock id; 0 while being inserted; | LK_ID_DEAD after destroy */
	uint32_t pad;
};
#define LK_ID_DEAD 0x80000000u

struct lk_lock {
	uint64_t addr;          /* address in its process */
	uint64_t site;          /* return address of the init (or first) call */
	uint64_t first_tsc;
	uint32_t proc;          /* process slot */
	uint32_t gen;           /* 0 first use of the address, +1 per reuse */
	uint8_t  kind;          /* enum lk_kind */
	_Atomic uint8_t flags;  /* LK_F_* */
	uint16_t pad;
	_Atomic uint32_t last_owner; /* thread slot + 1 of the last exclusive owner */
	_Atomic uint32_t waiters;    /* threads waiting now */
	/* The exclusive hold, written only by the thread that holds the lock (the
	 * lock itself orders these writes): any thread may release it (pigz's
	 * locks are taken in one thread and released in another). */
	uint32_t hold_depth;         /* 0 free; > 1 recursive */
	uint64_t held_since;
	uint64_t pad3;
};
static_assert(sizeof(struct lk_lock) == 64, "one cache line per lock");

struct lk_map {
	_Atomic uint32_t valid; /* 1 when complete */
	uint32_t proc;
	uint64_t lo, hi;        /* runtime address range of the object's PT_LOAD segments */
	uint64_t bias;          /* load bias (runtime - link-time address) */
	char path[LK_MAP_PATH];
};

struct lk_session {
	_Atomic uint32_t nlocks;      /* lock ids handed out; id 0 is never used */
	_Atomic uint32_t nmaps;
	_Atomic uint64_t lost_locks;  /* locks not tracked: table or id space full */
	_Atomic uint64_t lost_maps;   /* objects not captured: map table full */
	uint64_t pad[5];
	struct lk_slot table[LK_TABLE_SLOTS];
	struct lk_lock locks[LK_MAX_LOCKS];
	struct lk_map maps[LK_MAX_MAPS];
};

struct lk_site {
	uint64_t site;          /* return address of the contended call */
	uint64_t count;
	uint64_t wait_ticks;
};

/* One thread's aggregates for one lock. */
struct lk_stat {
	uint32_t lock;          /* lock id */
	uint32_t depth;         /* read holds of this thread now (re-entry counted) */
	uint64_t held_since;    /* tsc of the outer read acquisition */
	uint32_t reserved;
	uint32_t max_waiters;   /* most threads seen waiting (this one included) */
	uint64_t acquisitions;  /* successful lock / wait calls (sem: waits; cond: waits) */
	uint64_t read_acquisitions, write_acquisitions; /* rwlock only */
	uint64_t contended;     /* acquisitions that had to wait */
	uint64_t trylock_failures, timeouts, errors;
	uint64_t owner_changes; /* exclusive acquisitions whose previous owner was another thread */
	uint64_t releases;      /* unlocks (sem: posts) */
	uint64_t unmatched_releases; /* unlocks of a lock nobody was seen holding */
	uint64_t cross_thread_releases; /* unlocks of a hold another thread started */
	uint64_t cond_reacquisitions; /* acquisitions made inside a condition wait */
	uint64_t wait_ticks, max_wait_ticks;
	uint64_t hold_ticks, max_hold_ticks, holds;
	uint32_t wait_hist[LK_HIST];
	uint32_t hold_hist[LK_HIST];
	struct lk_site sites[LK_SITES];
};

struct lk_thread {
	uint32_t nstats, cap;
	uint32_t proc, thread;  /* process and thread slot */
	uint64_t lost_stats;    /* lock operations not counted: no free stat */
	uint64_t pad[5];
	uint32_t map[LK_MAX_LOCKS]; /* lock id -> stat index + 1 */
	/* struct lk_stat stats[cap] follows */
};

static inline struct lk_stat *lk_thread_stats(struct lk_thread *T)
{
	return (struct lk_stat *)(T + 1);
}

#endif

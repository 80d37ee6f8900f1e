/* format_locks.h — the REC_LOCKS records of profile.sonde (format.h's
 * container): the lock profiler's aggregates, declared apart from the
 * runtime's structs of src/common/lock_session.h, which the collector converts
 * (record/convert.c).  docs/FORMAT.md describes every field.
 *
 * Payload of a REC_LOCKS record: struct lkrec_hdr, then `count` items of the
 * subtype's struct (LKREC_STATS: a struct lkrec_stats_hdr first).
 */
#ifndef SONDE_COMMON_FORMAT_LOCKS_H
#define SONDE_COMMON_FORMAT_LOCKS_H

#include <assert.h>
#include <stdint.h>

#include "common/lock_enc.h" /* lkrec_lock.kind, .flags; TRX_LOCK op bytes */

/* Limits: lock ids are 1 .. LKREC_MAX_LOCKS - 1, a recording holds at most
 * LKREC_MAX_MAPS maps.  The runtime's limits are at most these. */
#define LKREC_MAX_LOCKS (1u << 17)
#define LKREC_MAX_MAPS  4096u
#define LKREC_MAP_PATH  256u
#define LKREC_HIST      40u    /* log2(ticks) buckets */
#define LKREC_SITES     4u     /* top contended call sites per thread and lock */

enum {
	LKREC_SUMMARY = 1, /* one struct lkrec_summary */
	LKREC_LOCKS   = 2, /* struct lkrec_lock[] */
	LKREC_MAPS    = 3, /* struct lkrec_map[] */
	LKREC_STATS   = 4, /* struct lkrec_stats_hdr, struct lkrec_stat[] */
};

struct lkrec_hdr {
	uint32_t subtype;       /* LKREC_* */
	uint32_t count;         /* items */
};
static_assert(sizeof(struct lkrec_hdr) == 8, "format");

struct lkrec_summary {
	uint64_t nlocks;        /* lock ids handed out */
	uint64_t nmaps;
	uint64_t lost_locks;    /* locks not tracked: table or id space full */
	uint64_t lost_maps;     /* objects not captured: map table full */
	uint64_t lost_stats;    /* lock operations not counted: a thread's stat table was full */
	uint64_t pad[3];
};
static_assert(sizeof(struct lkrec_summary) == 64, "format");

struct lkrec_lock {
	uint32_t id;            /* lock id, >= 1 */
	uint32_t proc;          /* process slot */
	uint32_t gen;           /* 0 first use of the address, +1 per reuse */
	uint32_t kind;          /* enum lk_kind */
	uint32_t flags;         /* LK_F_* */
	uint32_t pad;
	uint64_t addr;          /* address in its process */
	uint64_t site;          /* return address of the init (or first) call */
	uint64_t first_tsc;
};
static_assert(sizeof(struct lkrec_lock) == 48, "format");

struct lkrec_map {
	uint32_t proc;
	uint32_t pad;
	uint64_t lo, hi;        /* runtime address range of the object's PT_LOAD segments */
	uint64_t bias;          /* load bias (runtime - link-time address) */
	char     path[LKREC_MAP_PATH];
};
static_assert(sizeof(struct lkrec_map) == 288, "format");

struct lkrec_stats_hdr {
	uint32_t thread;        /* thread slot */
	uint32_t count;         /* = lkrec_hdr.count */
};
static_assert(sizeof(struct lkrec_stats_hdr) == 8, "format");

struct lkrec_site {
	uint64_t site;          /* return address of the contended call */
	uint64_t count;
	uint64_t wait_ticks;
};
static_assert(sizeof(struct lkrec_site) == 24, "format");

/* One thread's aggregates for one lock. */
struct lkrec_stat {
	uint32_t lock;          /* lock id */
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
	uint32_t wait_hist[LKREC_HIST]; /* bucket b: 2^b .. 2^(b+1)-1 ticks (0 in 0, longer in the last) */
	uint32_t hold_hist[LKREC_HIST];
	struct lkrec_site sites[LKREC_SITES];
};
static_assert(sizeof(struct lkrec_stat) == 560, "format");

#endif

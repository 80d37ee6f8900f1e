/* locks.h (analysis) — lock statistics of a recording: the aggregates of
 * REC_LOCKS, the locks named (data symbol, or the call site of their init /
 * first use), and, when the recording has lock events, the same statistics
 * decoded from the event stream and checked against the aggregates. */
#ifndef SONDE_ANALYSIS_LOCKS_H
#define SONDE_ANALYSIS_LOCKS_H

#include <stdint.h>

#include "common/format_locks.h"
#include "data/reader.h"

/* Per-thread statistics of one lock (a REC_LOCKS stat). */
struct lka_thread {
	uint32_t thread;          /* thread slot */
	int32_t tid;
	struct lkrec_stat st;
};

struct lka_site {
	char *name;               /* "func (file.c:42)" */
	uint64_t count, wait_ticks;
};

struct lka_lock {
	struct lkrec_lock rec;
	const char *kind;         /* "mutex", "rwlock", ... */
	char *name;               /* "hot_lock", "make_queue (q.c:12)", "0x7f..." */
	char *init_site;          /* "func (file.c:42)" of the init / first use, or NULL */
	int named_by_symbol;
	int32_t pid;
	struct lkrec_stat tot;       /* sum over threads (max_* are maxima) */
	struct lka_thread *threads;
	int nthreads;
	struct lka_site *sites;   /* merged top contended call sites, busiest first */
	int nsites;
	int members;              /* locks in this entry: 1, or more after lka_group */
};

struct lka_events {
	int present;              /* the recording has lock events */
	uint64_t records, lock_records, chunks;
	uint64_t sequence_gaps;   /* chunks missing in a thread's sequence */
	uint64_t chunk_lost;      /* events dropped, as counted in chunk headers */
	uint64_t compared, mismatched; /* (thread, lock) pairs checked against the aggregates */
	uint64_t unknown_locks;   /* events naming a lock id the aggregates do not know */
	uint64_t damaged;         /* damaged chunks, and chunks of threads the recording does not list */
	char error[256];          /* damage found while decoding, or "" */
};

struct lka {
	struct recording *r;
	struct lka_lock *locks;
	int nlocks;               /* entries of locks[] (groups after lka_group) */
	int nlocks_all;           /* locks of the recording */
	struct lkrec_summary sum;
	uint64_t ring_events_lost; /* sum of the threads' REC_LOST_RING_EVENTS */
	uint64_t reentry_lost;
	uint64_t unmatched_releases;
	struct lka_events ev;
};

/* Load the lock profile of r (which stays owned by the caller).  Returns 0,
 * or -1 with err set (damaged records).  A recording without locks gives
 * nlocks == 0. */
int lka_load(struct recording *r, struct lka *a, char *err, size_t errlen);
void lka_free(struct lka *a);
/* Group the locks made at one site (as mutrace does): locks that no data
 * symbol names, of one process and kind, with the same init / first-use
 * site, become one entry (members = how many) whose statistics, threads and
 * sites are the sums (maxima for max_*); rec, generation and address are the
 * first member's.  Locks named by a symbol stay alone.  -1 out of memory. */
int lka_group(struct lka *a);
double lka_ns(const struct lka *a, uint64_t ticks);
/* How many waits s->wait_ticks sums: every condition wait (each one waits),
 * else the contended acquisitions and the timed-out attempts. */
uint64_t lka_waits(uint32_t kind, const struct lkrec_stat *s);
const char *lka_kind_name(uint32_t kind);

#endif

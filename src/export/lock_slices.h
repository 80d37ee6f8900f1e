/* lock_slices.h — lock waits and holds as timeline slices, shared by the
 * Chrome and Perfetto exports of a `--locks --trace` recording.
 *
 * The lock events (TR_EXT / TRX_LOCK) sit in each thread's ring among the
 * call events; rd_each_event() hands them over through rd_event_ops.lock
 * in the thread's time order, and lks_lock() turns them into slices:
 *  - "wait NAME" [T - W, T] for an acquisition after a wait (LK_EV_ACQ_WAIT),
 *    a timed wait that gave up (LK_EV_TIMEOUT) and a condition wait
 *    (LK_EV_COND, named after the condition variable);
 *  - "NAME" from the outer acquisition to the outer release of a mutex,
 *    rwlock (read or write), spinlock or C11 mutex.  Semaphores and
 *    condition variables have no hold.  A hold released by another thread is
 *    closed on the thread that took it; holds still open at the end of the
 *    trace are closed at their thread's end.
 *
 * Tracks: lock slices do not go on the thread's function track.  A lock
 * taken in f and released in f's caller (or hand-over-hand locking: A, B,
 * release A) would cross function slices, and a track whose slices cross
 * cannot be drawn by Perfetto (its slice stacks are strictly nested; the
 * importer drops or mis-pairs crossing ends).  So each thread gets child
 * tracks "TID locks" next to its function track, and a lock slice goes to the
 * first such lane where it nests properly with the lock slices already there
 * (almost always lane 0; another lane only for crossing holds).  Chosen over
 * async (process-scoped) tracks because those lose the link to the thread
 * and Perfetto stacks them by id, not by time, which hides who held what.
 *
 * Slices are passed on when they end (a wait when its lock is taken, a hold
 * when it is released): per thread, in order of their end time.  Memory: the
 * open holds and the lanes' recent slices, never the length of the trace. */
#ifndef SONDE_EXPORT_LOCK_SLICES_H
#define SONDE_EXPORT_LOCK_SLICES_H

#include <stdint.h>

#include "data/reader.h"
#include "data/events.h"

enum { LKS_WAIT = 0, LKS_HOLD = 1 };

/* lks_slice.flags */
enum {
	LKS_READ     = 1u << 0, /* read hold of a rwlock */
	LKS_TIMEOUT  = 1u << 1, /* the wait gave up (timed lock, timed condition wait) */
	LKS_COND     = 1u << 2, /* wait on a condition variable */
	LKS_CROSS    = 1u << 3, /* hold released by another thread */
	LKS_AT_END   = 1u << 4, /* hold still open at the end: closed at its thread's end */
	LKS_FORKED   = 1u << 5, /* hold carried into a fork child (starts at the fork) */
	LKS_LOST     = 1u << 6, /* hold cut by lost events: closed at the last time known before them */
};

#define LKS_MAX_LANES 16u

struct lks_slice {
	uint32_t thread;     /* index into recording.threads */
	uint32_t lane;       /* 0 .. LKS_MAX_LANES-1: which "locks" child track */
	int what;            /* LKS_WAIT / LKS_HOLD */
	uint32_t name_id;    /* small id of this slice's name, for interning: 2 * lock + what */
	const char *name;    /* "wait hot_lock" / "hot_lock" */
	const char *lock;    /* "hot_lock" */
	const char *kind;    /* "mutex", "rwlock", ... */
	uint32_t flags;      /* LKS_* */
	uint64_t start, end; /* ticks */
};

struct lks_ops {
	/* First slice of a lane (before its slice() call): describe the track. */
	void (*lane)(void *arg, uint32_t thread, uint32_t lane);
	void (*slice)(void *arg, const struct lks_slice *s);
};

struct lks_stats {
	uint64_t waits, holds;
	uint64_t closed_at_end;   /* holds closed at their thread's end */
	uint64_t closed_at_loss;  /* holds cut by lost events (a sequence gap, dropped events, damage) */
	uint64_t misnested;       /* slices put on the last lane although they cross one there */
	uint64_t bad;             /* damaged lock records */
};

struct lks;

/* NULL when the recording has no lock events (nothing to draw).  The lock
 * names come from the recording's lock records (analysis/locks.h). */
struct lks *lks_open(const struct recording *r, const struct tr_filter *f, const struct lks_ops *ops, void *arg);
/* Feed one lock event, from the exporter's rd_event_ops.lock callback. */
void lks_lock(struct lks *l, const struct rd_lock_event *e);
/* Events of a thread were lost (rd_event_ops.loss): its open holds may have
 * been released among them.  A later release of the same hold (its hold
 * time reaches back to the hold's start) still closes it; otherwise (another
 * hold's release, a new acquisition, the thread's end) it ends at the last
 * time known before the loss, as LKS_LOST: never a hold made up across it. */
void lks_loss(struct lks *l, const struct rd_loss *e);
/* Close the holds still open (at their thread's end), fill st, free l. */
void lks_close(struct lks *l, struct lks_stats *st);
/* Name of a lane's track: "1234 locks", "1234 locks 2". */
void lks_lane_name(const struct recording *r, uint32_t thread, uint32_t lane, char *buf, size_t len);

#endif

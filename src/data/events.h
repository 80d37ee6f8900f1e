/* events.h — the one event iterator of a recording: every consumer of
 * events.sonde (timeline exports, replay, the CCT rebuilt from a trace, lock
 * analysis, probe recordings, the fuzz harness) walks it through
 * rd_each_event() and fills in only the callbacks of struct rd_event_ops it
 * needs; nobody else parses chunk bytes.  The way perf's perf_session +
 * perf_tool, and uftrace's fstack, do it.
 *
 * Calls become properly nested slices, one per recorded call, streaming
 * (memory bounded by the number of threads and their call depth, never by
 * the length of the trace).
 *
 * Every slice gets an end:
 *  - EXIT: the call returned;
 *  - EXIT_ABNORMAL: the runtime saw the frame skipped by a non-local exit
 *    (longjmp, exception): closed when the code that resumed returned;
 *  - still open when the thread or process ended (thread exit, exit() from a
 *    deep frame, crash, SIGKILL): closed at the thread's end time, which for a
 *    killed process is the time the recorder saw it die;
 *  - records lost (--lossy, or a sequence gap in a damaged file): the open
 *    slices are closed at the last time known before the loss.
 * So the output is always properly nested per thread.
 *
 * Filters, applied while decoding with a small hold-back (a slice is passed
 * on when it or one of its descendants is known to pass):
 *  - tid, time range (slices that overlap [from, to]);
 *  - min_ticks: a slice shorter than this with no emitted child is dropped
 *    (the runtime already rolls such calls back; this catches the few that
 *    straddle a chunk boundary, where the roll-back is not possible).
 *
 * Slices of different threads come in chunk order (each thread's in time
 * order): consumers that need one global order sort, or accept it. */
#ifndef SONDE_DATA_EVENTS_H
#define SONDE_DATA_EVENTS_H

#include <stdint.h>

#include "data/reader.h"

enum {
	TRS_ABNORMAL = 1, /* skipped by a non-local exit, closed when the resumed code's frame ended */
	TRS_AT_END   = 2, /* still open at the end of its thread / process: closed there */
	TRS_LOST     = 4, /* closed at the last known time before lost events */
	TRS_RESUMED  = 8, /* on begin and end: a frame the thread did not enter here (TRX_RESUME:
	                   * a forked child's copy of its parent's frame, a call running at an
	                   * attach, a coroutine's frame running again), not a call */
};

struct tr_slice {
	uint32_t thread;  /* index into recording.threads */
	uint32_t func;    /* SONDE_FUNC(module slot, number) */
	uint32_t depth;   /* 1 = outermost recorded call of the thread */
	uint32_t flags;   /* TRS_* (on end) */
	uint64_t start;   /* ticks */
	uint64_t end;     /* ticks (0 in begin) */
};

/* One probe event.  Hits (TRP_HIT) come as they are; a func probe's entry
 * and return come as TRP_BEGIN then TRP_END, paired per thread by the
 * decoder so that they nest: a return closes the innermost open entry of
 * the same probe (entries above it were left by longjmp / exceptions and
 * are closed there, flag TRS_ABNORMAL); entries still open at the end are
 * closed at the thread's end (TRS_AT_END), or before lost events (TRS_LOST).
 * With a time range, a hit passes when its time is in the range, a slice
 * when its begin is. */
struct tr_probe {
	uint32_t thread;   /* index into recording.threads */
	uint32_t probe;    /* probe id: META "probe.<id>" is its spec */
	int event;         /* TRP_HIT, TRP_BEGIN, TRP_END (common/trace_enc.h) */
	uint32_t flags;    /* TRP_END: TRS_* when closed without its own return */
	uint64_t time;     /* ticks: the hit, the begin, or the end */
	uint64_t start;    /* TRP_END: the begin's time */
	int vkind;         /* TRV_* */
	int64_t i;         /* TRV_INT */
	double f;          /* TRV_FLOAT */
	const char *s;     /* TRV_STR, not NUL-terminated */
	uint32_t slen;
};

/* Decode a TRX_PROBE record (p, len: after the type byte, from its varint(len)):
 * 0 ok, -1 malformed.  Sets probe, event, vkind and the value. */
int tr_probe_parse(const uint8_t *p, int len, struct tr_probe *out);
/* The probe's spec from the recording's META, or "probe N" in buf. */
const char *tr_probe_name(const struct recording *r, uint32_t id, char *buf, size_t n);

/* One lock event (TRX_LOCK, written with --locks=events). */
struct rd_lock_event {
	uint32_t thread;  /* index into recording.threads */
	uint32_t lock;    /* lock id (the REC_LOCKS lock record's id) */
	uint32_t op;      /* LK_EV_* | LK_EVF_* */
	uint64_t time;    /* ticks */
	uint64_t aux;     /* ticks waited (ACQ_WAIT, TIMEOUT, COND) or held (REL) */
};

/* Events the recording says it does not have. */
enum {
	RDL_GAP = 1,      /* chunks missing from a thread's sequence: count = chunks */
	RDL_DROPPED = 2,  /* events the writers dropped (--lossy, full ring): count = events */
	RDL_DAMAGED = 3,  /* a malformed record: the rest of its chunk is skipped (count = 1) */
	RDL_UNKNOWN_THREAD = 4, /* a chunk of a thread slot the recording does not list (count = 1) */
};
struct rd_loss {
	uint32_t thread;  /* index into recording.threads; UINT32_MAX for RDL_UNKNOWN_THREAD */
	int cause;        /* RDL_* */
	uint64_t time;    /* ticks: the last time known before the loss */
	uint64_t count;
};

struct rd_event_ops {
	/* Every callback may be NULL.  Per thread, events come in time order;
	 * threads interleave in chunk order (consumers that need one global
	 * order sort, or accept it).
	 * call() of a slice always comes before the call() of its children and
	 * ret() after theirs. */
	void (*call)(void *arg, const struct tr_slice *s);
	void (*ret)(void *arg, const struct tr_slice *s);
	void (*lock)(void *arg, const struct rd_lock_event *e);
	void (*probe)(void *arg, const struct tr_probe *h);
	/* TRX_NAME: the thread took a new name (name is not NUL-terminated). */
	void (*name)(void *arg, uint32_t thread, uint64_t time, const char *name, uint32_t len);
	/* TRX_OFFCPU: the thread waited ns nanoseconds off the CPU inside its
	 * innermost open call, before `time`; run of them runnable (preempted),
	 * UINT64_MAX when the record does not tell. */
	void (*offcpu)(void *arg, uint32_t thread, uint64_t time, uint64_t ns, uint64_t run);
	/* TRX_SWITCH: one of those waits, before the TRX_OFFCPU that sums them:
	 * the thread was switched out at `out` (CLOCK_MONOTONIC ns: rd_mono_ticks
	 * gives the recording's ticks) for len ns, runnable (preempted) or
	 * blocked; cpu the CPU it ran on after it, -1 when not known. */
	void (*sw)(void *arg, uint32_t thread, uint64_t time, uint64_t out, uint64_t len, int runnable, int32_t cpu);
	/* TRX_SYSCALL: a system call (enum sys_call) from `time - ticks` to
	 * `time` inside the innermost open call; result -1 an error, else the
	 * call's result (bytes for the read/write-like ones). */
	void (*syscall)(void *arg, uint32_t thread, uint64_t time, uint32_t call, uint64_t ticks, int64_t result);
	void (*loss)(void *arg, const struct rd_loss *l);
	/* A thread's first event comes after its start() and its last before its
	 * end(); a process's start() comes before its first thread's, its end()
	 * after its last thread's.  Only threads (and processes) with events in
	 * the file, selected by the filter, are started and ended.  The times are
	 * those of the recording's thread / process records, or the first / last
	 * event's when those are missing. */
	void (*thread_start)(void *arg, uint32_t thread, uint64_t time);
	void (*thread_end)(void *arg, uint32_t thread, uint64_t time);
	void (*process_start)(void *arg, uint32_t proc, uint64_t time); /* proc: process slot */
	void (*process_end)(void *arg, uint32_t proc, uint64_t time);
};

struct tr_filter {
	struct rd_select sel;    /* the threads (all zero: every thread) */
	int has_range;
	uint64_t from, to;       /* ticks, absolute */
	uint64_t min_ticks;      /* 0: keep all */
};

/* Fill f from the command line's threads (sel, NULL: every thread) and time
 * range (seconds from the recording's start) and the recording's --min-time. */
void tr_filter_init(struct tr_filter *f, const struct recording *r, const struct rd_select *sel, int has_range,
                    double from_s, double to_s);

struct tr_stats {
	uint64_t chunks, bytes;  /* chunks and payload bytes read */
	uint64_t records;        /* ENTER + EXIT + EXT records */
	uint64_t calls;          /* slices emitted, less the resumed ones (TRS_RESUMED) */
	uint64_t gaps;           /* sequence gaps found (chunks missing) */
	uint64_t lost;           /* events the writers dropped (--lossy) */
	uint64_t unmatched;      /* exit records with no open slice (ignored) */
	uint64_t closed_at_end;  /* slices closed at their thread's end */
	uint64_t abnormal;       /* slices closed by a non-local exit */
	uint64_t dropped_short;  /* slices dropped by min_ticks while decoding */
	uint64_t bad;            /* damaged records / unknown thread / bad function ids */
	uint64_t ext;            /* EXT records */
	uint64_t lock_events;    /* TRX_LOCK records */
	uint64_t probe_hits;     /* TRX_PROBE records (hits and func entries / returns) */
	uint64_t probe_slices;   /* probe slices passed on (TRP_END) */
};

/* Walk the whole events file.  flt may be NULL (every thread, every time, no
 * minimum duration); it filters slices and probe events, while lock and name
 * events of the selected threads all pass (lock slices need the events
 * around a range to be drawn in it).  0 ok; -1 with err set when the file is
 * damaged beyond the point reached (what was decoded before was passed on,
 * and open slices were closed). */
int rd_each_event(const struct recording *r, const struct tr_filter *flt, const struct rd_event_ops *ops,
                  void *arg, struct tr_stats *st, char *err, size_t errlen);

#endif

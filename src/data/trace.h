/* trace.h — decoder of the timeline (events.sonde, written with --trace):
 * turns each thread's chunk stream back into properly nested slices, one per
 * recorded call, streaming (memory bounded by the number of threads and their
 * call depth, never by the length of the trace).
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
#ifndef SONDE_DATA_TRACE_H
#define SONDE_DATA_TRACE_H

#include <stdint.h>

#include "data/reader.h"

enum {
	TRS_ABNORMAL = 1, /* skipped by a non-local exit, closed when the resumed code's frame ended */
	TRS_AT_END   = 2, /* still open at the end of its thread / process: closed there */
	TRS_LOST     = 4, /* closed at the last known time before lost events */
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

struct tr_ops {
	/* Both may be NULL.  begin() of a slice always comes before the begin()
	 * of its children and its end() after theirs. */
	void (*begin)(void *arg, const struct tr_slice *s);
	void (*end)(void *arg, const struct tr_slice *s);
	/* EXT records (lock events and others), may be NULL. */
	void (*ext)(void *arg, uint32_t thread, uint64_t time, uint8_t type, const uint8_t *p, int len);
};

/* Receiver of dynamic-probe events (TRX_PROBE, `sonde probe --record`). */
typedef void (*tr_probe_fn)(void *arg, const struct tr_probe *h);

struct tr_filter {
	int tid;                 /* 0: all threads */
	int has_range;
	uint64_t from, to;       /* ticks, absolute */
	uint64_t min_ticks;      /* 0: keep all */
};

struct tr_stats {
	uint64_t chunks, bytes;  /* chunks and payload bytes read */
	uint64_t records;        /* ENTER + EXIT + EXT records */
	uint64_t calls;          /* slices emitted */
	uint64_t gaps;           /* sequence gaps found (chunks missing) */
	uint64_t lost;           /* events the writers dropped (--lossy) */
	uint64_t unmatched;      /* exit records with no open slice (ignored) */
	uint64_t closed_at_end;  /* slices closed at their thread's end */
	uint64_t abnormal;       /* slices closed by a non-local exit */
	uint64_t dropped_short;  /* slices dropped by min_ticks while decoding */
	uint64_t bad;            /* damaged records / unknown thread / bad function ids */
	uint64_t ext;            /* EXT records */
	uint64_t probe_hits;     /* TRX_PROBE records (hits and func entries / returns) */
	uint64_t probe_slices;   /* probe slices passed on (TRP_END) */
};

/* Fill f from the command line's tid and time range (seconds from the
 * recording's start) and the recording's --min-time. */
void tr_filter_init(struct tr_filter *f, const struct recording *r, int tid, int has_range, double from_s,
                    double to_s);

/* Decode the whole events file.  0 ok; -1 with err set when the file is
 * damaged beyond the point reached (what was decoded before was passed on,
 * and open slices were closed). */
int tr_decode(const struct recording *r, const struct tr_filter *flt, const struct tr_ops *ops, void *arg,
              struct tr_stats *st, char *err, size_t errlen);
/* The same, also passing probe events to probe (may be NULL: then they are
 * only counted, as tr_decode does). */
int tr_decode_probes(const struct recording *r, const struct tr_filter *flt, const struct tr_ops *ops,
                     tr_probe_fn probe, void *arg, struct tr_stats *st, char *err, size_t errlen);

/* Decode one chunk's payload into a flat list of records (unit tests and
 * tools): returns the number of records, -1 if malformed. */
struct tr_rec { uint64_t time; uint32_t kind, func; uint8_t ext_type; };
int tr_chunk_records(const struct rec_chunk *c, const uint8_t *p, struct tr_rec *out, int max);

#endif

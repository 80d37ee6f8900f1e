/* recorder.h — the one writer of a recording directory (docs/FORMAT.md),
 * used by `sonde record` (the collector drains the session's rings into it,
 * then the end-of-run records follow) and by `sonde probe --record` (the
 * probe hits it encodes itself).  It owns the directory, both files, the
 * clock calibration and the META lines every recording has; the callers add
 * only their own records and META lines.
 *
 * Order of use:
 *   recorder_open            directory made empty, events.sonde opened if asked,
 *                            the recording's start time taken
 *   recorder_chunk ...       REC_CHUNK records, while the program runs (with
 *                            keep_last set: held in memory, the oldest let go,
 *                            written by recorder_profile; recorder_snapshot
 *                            copies them)
 *   recorder_meta_common     the META lines every recording has
 *   meta_add(&r->meta, ...)  the caller's own META lines
 *   recorder_profile         events.sonde completed; profile.sonde opened, META written
 *   writer_put(&r->prof, ...) processes, threads, modules, trees, locks
 *   recorder_close           profile.sonde completed
 * recorder_abort removes what was written (the program could not be run).
 * Errors: 0, or -1 with a message (see docs/ERRORS.md); recorder_open says
 * RECORDER_USAGE when the user must choose another directory. */
#ifndef SONDE_RECORD_RECORDER_H
#define SONDE_RECORD_RECORDER_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "common/clock.h"
#include "record/record.h"

enum { RECORDER_USAGE = 1 };
/* recorder_open's flags */
enum {
	RECORDER_EVENTS = 1,      /* the recording has events.sonde */
	RECORDER_KEEP_DOMAIN = 2, /* keep the old recording's domain.txt (--domain auto reads it) */
};

struct recorder {
	char dir[PATH_MAX];
	char evpath[PATH_MAX + 32], profpath[PATH_MAX + 32];
	struct rec_writer ev, prof;
	int events;                /* events.sonde is open */
	uint64_t chunks, bytes;    /* REC_CHUNK records and payload bytes written */
	struct clock_point c0;     /* the recording's start */
	struct clock_point c1;     /* its end (recorder_meta_common) */
	int c1_given;              /* c1 was set by the caller (a recovery): not taken again */
	struct meta_buf meta;      /* META lines, written by recorder_profile */
	/* Flight recorder (record --keep-last): when non-zero, chunks are kept
	 * in memory, the newest that fit in keep_last bytes of events.sonde
	 * (headers included), and written at the end; the older ones are let go
	 * (the readers see them as sequence gaps).  Set after recorder_open. */
	uint64_t keep_last;
	struct kept_chunk *kept;   /* FIFO of kept chunks, stored form (a ring of kcap slots) */
	size_t khead, kn, kcap;
	uint64_t kbytes;           /* bytes of events.sonde the kept chunks will take */
	uint64_t kmem;             /* bytes of memory they take */
	uint64_t other_mem;        /* sonde's resident set besides them, last measured */
	uint64_t measured;         /* chunks kept since the start (measured every few) */
	uint64_t mem_short;        /* other_mem when it left less than keep_last/8 (bound not held) */
	uint64_t dropped_chunks, dropped_bytes, dropped_calls;
	int snapshots;             /* recorder_snapshot: the last N of DIR.snap-N */
	/* zstd level of the chunks (0: stored as they are); set after
	 * recorder_open.  A chunk is stored compressed when that makes it at
	 * least 1/16 smaller. */
	int zstd_level;
	struct ZSTD_CCtx_s *zctx;
	void *zbuf;
	size_t zcap;
	uint64_t stored;           /* bytes of chunk records' payloads in events.sonde */
};

/* Make dir an empty recording directory (an existing directory is reused
 * only if it holds nothing but a recording's files: never wipe a user's
 * directory), open events.sonde if asked (RECORDER_* flags), take the start
 * time. */
int recorder_open(struct recorder *r, const char *dir, int flags, char *err, size_t n);

/* Recovery (record/recover.c): take up the recording in dir that a killed
 * recorder started at c0.  events_pid > 0: it was writing events.sonde under
 * its temporary name (events.sonde.PID.tmp); what it holds up to its last
 * complete record is kept (the tail a kill cut off is dropped) and the
 * following chunks are appended.  The META lines and profile.sonde are then
 * written as at a normal end.  0, or -1 with err set. */
int recorder_resume(struct recorder *r, const char *dir, const struct clock_point *c0, int events_pid,
                    char *err, size_t n);

/* One chunk of one thread's events: its header (c->used payload bytes at
 * data, encoded as common/trace_enc.h says). */
int recorder_chunk(struct recorder *r, const struct rec_chunk *c, const void *data);

/* The records a writer buffered for thread (its *used bytes at data, times
 * from base), as that thread's next chunk (*seq, then incremented); *used
 * back to 0.  Nothing when *used is 0.  The probe engines' --record
 * (probe/record.c, probe/remote/remote_record.c). */
void recorder_chunk_buf(struct recorder *r, uint32_t thread, uint64_t base, uint64_t *seq, const void *data,
                        uint32_t *used);

/* Into to's events.sonde (open, without keep_last of its own), the chunks
 * `from` keeps now, oldest first; to's META will say what `from` let go.
 * 0, or -1 (write error). */
int recorder_copy_kept(const struct recorder *from, struct recorder *to);

/* Take the end time (measuring on for at least 1 ms, so the clock
 * calibration is never too short) and add the META lines every recording
 * has: program, command, recorder, mode, the clock, time, hostname,
 * exit_status (not written when INT32_MIN: unknown), event_chunks,
 * event_bytes.  command: the words of the command line, `len` bytes
 * separated by NULs (as /proc/PID/cmdline). */
void recorder_meta_common(struct recorder *r, const char *program, const char *command, size_t len,
                          const char *recorder_name, uint32_t mode, int exit_status);

/* Complete events.sonde; open profile.sonde and write the META record. */
int recorder_profile(struct recorder *r, char *err, size_t n);

/* Complete profile.sonde. */
int recorder_close(struct recorder *r, char *err, size_t n);

/* Close and remove what was written, and the directory if it is empty. */
void recorder_abort(struct recorder *r);

#endif

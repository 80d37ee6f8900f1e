/* record.h — the parts of `sonde record`: the session memory it owns, the
 * launched program, the collector that drains rings while the program runs,
 * and the writer of sonde.data. */
#ifndef SONDE_RECORD_RECORD_H
#define SONDE_RECORD_RECORD_H

#include <stdint.h>
#include <stdio.h>

#include "common/clock.h"
#include "common/format.h"
#include "common/session.h"

struct record_config {
	uint32_t mode;             /* SONDE_MODE_* */
	uint64_t thread_region;    /* bytes per thread region */
	uint64_t ring_size;        /* bytes per thread ring */
	uint64_t session_size;     /* bytes of session memory (sparse) */
	uint32_t max_depth;
	uint64_t min_time_ns;
	const char **filters; int nfilters;   /* "+glob" / "-glob" */
	const char *domain_file;   /* functions allowed (--domain), or NULL */
};

/* The session as sonde made it: its own copies of the sizes, which the
 * program's side cannot change (the header's copies are the program's). */
struct session {
	int fd;
	struct sonde_session_hdr *hdr;
	uint64_t size;
	uint64_t thread_region, ring_size;
};

/* session.c */
int session_create(struct session *s, const struct record_config *cfg, double ticks_per_ns_guess);
void session_destroy(struct session *s);

/* writer.c: the record container of format.h */
/* A file of the recording directory, created fresh and private (0600):
 * written under a temporary name opened with O_CREAT | O_EXCL | O_NOFOLLOW
 * (a link planted in the directory is never followed), renamed to its
 * name when complete.  file_create: the stream, or NULL with errno set;
 * file_commit: fclose, then rename (0, or -errno; on error the temporary
 * file is removed). */
FILE *file_create(const char *path, char *tmp, size_t tmplen);
int file_commit(FILE *f, const char *tmp, const char *path);

struct rec_writer {
	FILE *f;
	const char *path;
	char tmp[4200];      /* its temporary name until writer_close */
	uint64_t bytes;
	int failed;
};
int writer_open(struct rec_writer *w, const char *path, uint32_t kind);
int writer_put(struct rec_writer *w, uint32_t type, const void *a, uint64_t alen, const void *b, uint64_t blen);
int writer_close(struct rec_writer *w); /* writes REC_END */

/* The text of a REC_META record, built one "key=value" line at a time. */
struct meta_buf {
	char *p;
	size_t len, cap;
};
void meta_add(struct meta_buf *m, const char *key, const char *val);
/* The clock calibration every reader needs: ticks_per_ns, start/end ticks and monotonic ns. */
void meta_add_clock(struct meta_buf *m, const struct clock_point *c0, const struct clock_point *c1);
/* Write the REC_META record and free the buffer. */
int meta_write(struct rec_writer *w, struct meta_buf *m);

/* launch.c */
struct launched {
	int pid;
	int status;          /* wait status of the direct child */
	int exited;
	uint64_t end_tsc;    /* when the recorder saw it end */
	/* Set by the caller after launch_program, read by collect: */
	int end_at_exit;     /* end when the program exits, leaving what it started running */
	/* Called once when the program has exited and, a second later, processes
	 * it started are still running (daemons): collect goes on following them
	 * until they end, or until SIGINT.  May be NULL. */
	void (*left_running)(void *arg, int pid);
	void *arg;
	/* Called (by collect, between two drains) when sonde gets SIGUSR2, with
	 * snap_arg; SIGUSR2 is left alone when NULL.  record --keep-last. */
	void (*snapshot)(void *snap_arg);
	void *snap_arg;
	int left;            /* out: the recording ended with such processes still running */
};
int launch_program(char **argv, struct session *s, const char *rt_path, struct launched *out);

struct recorder;

/* collector.c: follow the program tree to its end, draining rings into the
 * recorder's events file (rec may be NULL when there are no rings).  The
 * tree ends when every process in it has ended; after the program's own
 * exit, also at SIGINT, or at once with l->end_at_exit (l->left says so).
 * Returns 0, or -1 if it had to stop. */
int collect(struct session *s, struct launched *l, struct recorder *rec);
/* One pass over every thread's ring: full chunks (final: the partly filled
 * ones too) into the recorder's events file.  Returns how many chunks.
 * collect's loop, and `sonde record -p`'s while the process runs. */
int collector_drain(struct session *s, struct recorder *rec, int final);

/* profile_out.c: write the end-of-run records (processes, threads, modules, CCTs, meta). */
/* After the program tree has ended: check and mend what the program's side
 * left in the session (audit.c); returns how many values were impossible. */
uint64_t session_audit(struct session *s);
/* Add the session's META lines to rec, start profile.sonde
 * (recorder_profile) and write its records; recorder_close is the caller's.
 * 0, or -1 with err set. */
int write_profile(struct session *s, struct recorder *rec, const struct launched *l,
                  const struct record_config *cfg, char *err, size_t errlen);
/* snapshot.c: the flight recorder's snapshot, while the program runs:
 * DIR.snap-N/ (N = 1, 2, ...; its path in path), a complete recording of
 * the chunks `live` keeps now and of the session as it is (open calls end at
 * the snapshot, no exit status); `live` goes on.  0, or -1 with err set. */
int record_snapshot(struct session *s, struct recorder *live, const struct launched *l,
                    const struct record_config *cfg, const char *program, const char *cmd, size_t clen,
                    char *path, size_t pathlen, char *err, size_t errlen);
/* locks_out.c: the lock profiler's records (REC_LOCKS), if the program took any lock. */
void write_locks(struct session *s, struct rec_writer *w);

#endif

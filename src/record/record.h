/* record.h — the parts of `sonde record`: the session memory it owns, the
 * launched program, the collector that drains rings while the program runs,
 * and the writer of sonde.data. */
#ifndef SONDE_RECORD_RECORD_H
#define SONDE_RECORD_RECORD_H

#include <stdint.h>
#include <stdio.h>

#include "common/clock.h"
#include "common/format.h"
#include "common/proc_stat.h"
#include "common/session.h"

struct record_config {
	uint32_t mode;             /* SONDE_MODE_* */
	uint64_t thread_region;    /* bytes per thread region */
	uint64_t ring_size;        /* bytes per thread ring */
	uint64_t session_size;     /* bytes of session memory (sparse) */
	uint64_t mem_cap;          /* --max-memory: cap on the session's memory in use (0: the default,
	                            * session_default_cap) */
	uint32_t max_depth;
	uint64_t min_time_ns;
	const char **filters; int nfilters;   /* "+glob" / "-glob" */
	const char *domain_file;   /* functions allowed (--domain), or NULL */
};

/* The session as sonde made it: its own copies of the sizes, which the
 * program's side cannot change (the header's copies are the program's). */
struct session {
	int fd;
	char path[4200];           /* the session file on tmpfs; "": a memfd, or not ours to remove */
	char ref[4200];            /* DIR/session.ref, which names it; "" when none */
	struct sonde_session_hdr *hdr;
	uint64_t size;
	uint64_t thread_region, ring_size;
	char futex_why[200];       /* --syscalls: why futex calls are not counted ("": they are) */
};

/* session.c */
#define SESSION_FILE_PREFIX "sonde-session-" /* then UID-RANDOM (16 hex digits) */
/* Create the session (fresh, 0600, never through a link): a file in
 * session_dir() named in DIR/session.ref, else a memfd; sparse, of
 * cfg->session_size bytes, mapped.  Stale session files of this user are
 * swept first.  0, or -errno. */
int session_create(struct session *s, const struct record_config *cfg, double ticks_per_ns_guess, const char *dir);
/* The default cap on the session's memory in use: a quarter of the RAM,
 * and at most half of what the tmpfs directory sdir (NULL: a memfd) has
 * free (a full tmpfs would SIGBUS the program at its next new page). */
uint64_t session_default_cap(const char *sdir);
/* The line `sonde record` ends with when the node pools grew, or when
 * the cap stopped them (growth.c): 0 and nothing written when neither. */
int session_growth_line(struct session *s, char *buf, size_t n);
struct meta_buf;
/* The same as META lines: mem_cap, cct_grow_steps, cct_grow_refused, cct_pool_max_nodes. */
void session_growth_meta(struct session *s, struct meta_buf *mb);
/* Where session files go: $SONDE_SESSION_DIR ("memfd": none), else /dev/shm
 * or $XDG_RUNTIME_DIR if a tmpfs with 1 GiB free; NULL: a memfd. */
const char *session_dir(void);
/* Is path a session file name of this user (absolute, SESSION_FILE_PREFIX,
 * UID, 16 hex digits)? */
int session_name_ok(const char *path);
/* The session file DIR/session.ref names (a private regular file of this
 * user, one line, a session_name_ok path): 0; -ENOENT: none; -ELOOP: a
 * link; -EPERM or -EINVAL: not one sonde wrote. */
int session_ref_read(const char *dir, char *path, size_t n);
/* What a reader needs to finish the recording if this recorder is killed. */
void session_note_recorder(struct session *s, const struct clock_point *c0, int events, int attached);
/* Map the session file of a killed recorder (record/recover.c): a regular
 * file of this user, private, of the size its header says.  0, or -1 with
 * err set. */
int session_open(struct session *s, const char *path, char *err, size_t n);
/* Does process pid map the file of inode ino?  `unreadable` when its maps
 * cannot be read. */
int maps_inode(int pid, unsigned long long ino, int unreadable);
/* A process of the program that still runs with the session mapped: its pid, or 0. */
int session_program_running(struct session *s);
/* Unmap, close and remove the file and DIR/session.ref. */
void session_destroy(struct session *s);
/* Unmap and close, the files left in place. */
void session_keep(struct session *s);

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
/* Take up the temporary file tmp that a killed writer left (a private
 * regular file of this user), its bytes after valid_end dropped; path: its
 * final name (writer_close renames it).  0, or -errno. */
int writer_reopen(struct rec_writer *w, const char *path, const char *tmp, uint64_t valid_end);

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
	/* Called at every turn of collect's loop (which then polls instead of
	 * blocking in waitpid): the program's requests of functions to patch
	 * (src/instr/serve.c).  May be NULL. */
	int (*serve)(void *serve_arg);
	void *serve_arg;
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

/* sweep.c: remove the session files in sdir that nobody will recover: of
 * this user, their recorder dead, no process of their program left, and
 * their recording directory's session.ref not naming them (the directory
 * gone, or recorded again); and those this sonde cannot read (another
 * version's, or damaged) that no process maps and that have not changed for
 * an hour. */
void session_sweep(const char *sdir);

/* recover.c: a recording whose recorder was killed (docs/FORMAT.md,
 * "Recovery").  If dir has a session.ref and no profile.sonde: RECOVER_BUSY
 * when its recorder or its program still runs (err says which), else
 * profile.sonde (and events.sonde) written from the session, marked
 * incomplete, the session removed: RECOVER_DONE (err: what was recovered,
 * for a notice).  RECOVER_NONE: nothing to recover; -1: error (err set). */
enum { RECOVER_NONE = 0, RECOVER_DONE = 1, RECOVER_BUSY = 2 };
int recover_recording(const char *dir, char *err, size_t errlen);

/* profile_out.c: write the end-of-run records (processes, threads, modules, CCTs, meta). */
/* After the program tree has ended: check and mend what the program's side
 * left in the session (audit.c); span_ticks, the ticks since the recording
 * began, bounds its loss counts.  Returns how many values were impossible. */
uint64_t session_audit(struct session *s, uint64_t span_ticks);
/* Add the session's META lines to rec, start profile.sonde
 * (recorder_profile) and write its records; recorder_close is the caller's.
 * 0, or -1 with err set. */
int write_profile(struct session *s, struct recorder *rec, const struct launched *l,
                  const struct record_config *cfg, char *err, size_t errlen);
/* finish.c: the end of every recording, launched, attached or recovered,
 * and a snapshot's: the session audited (*damaged: impossible values left
 * out; damaged NULL: no audit, the program still runs), the META lines
 * every recording has and the caller's (meta: "key", "value" pairs,
 * NULL-terminated, or NULL), the profile records, the recorder closed.
 * 0, or -1 with err set. */
int recording_finish(struct session *s, struct recorder *rec, const struct launched *l,
                     const struct record_config *cfg, const char *program, const char *cmd, size_t clen,
                     const char *recorder_name, int status, const char *const *meta, uint64_t *damaged,
                     char *err, size_t errlen);

/* snapshot.c: the flight recorder's snapshot, while the program runs:
 * DIR.snap-N/ (N = 1, 2, ...; its path in path), a complete recording of
 * the chunks `live` keeps now and of the session as it is (open calls end at
 * the snapshot, no exit status); `live` goes on.  0, or -1 with err set. */
int record_snapshot(struct session *s, struct recorder *live, const struct launched *l,
                    const struct record_config *cfg, const char *program, const char *cmd, size_t clen,
                    char *path, size_t pathlen, char *err, size_t errlen);
/* syscalls_out.c: the system-call table (REC_SYSCALLS) of a --syscalls recording. */
void write_syscalls(struct session *s, struct rec_writer *w);
/* The same recording's futex counting as META lines: syscalls_futex ("counted"
 * or why not), and the threads counted, refused and the exits lost. */
void session_syscalls_meta(struct session *s, struct meta_buf *mb);
/* locks_out.c: the lock profiler's records (REC_LOCKS), if the program took any lock. */
void write_locks(struct session *s, struct rec_writer *w);

#endif

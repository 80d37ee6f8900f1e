/* recover.c — the recording of a recorder that was killed (SIGKILL, the OOM
 * killer): its session memory is a file on tmpfs named by DIR/session.ref
 * (session.c), which the program went on writing into until its end; the
 * next reader finishes the recording from it with the writer a normal end
 * uses (finish.c), marked incomplete.  See docs/FORMAT.md, "Recovery". */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/record.h"
#include "record/recorder.h"

#define MAX_FILTERS 256

/* Bounded copy of a string the program's side wrote. */
static void copy_str(char *dst, size_t n, const char *src, size_t srcmax)
{
	size_t k = strnlen(src, srcmax < n ? srcmax : n - 1);
	memcpy(dst, src, k);
	dst[k] = 0;
}

/* The recording's end as the session tells it: the latest end or last tick
 * of its processes and threads. */
static uint64_t session_end_ticks(struct session *s)
{
	struct sonde_session_hdr *h = s->hdr;
	uint64_t end = 0;
	uint32_t n = atomic_load(&h->nprocs);
	for (uint32_t i = 0; i < n && i < SONDE_MAX_PROCS; i++)
		if (h->procs[i].end_tsc > end)
			end = h->procs[i].end_tsc;
	n = atomic_load(&h->nthreads);
	for (uint32_t i = 0; i < n && i < SONDE_MAX_THREADS; i++) {
		uint64_t off = h->threads_off[i];
		if (!off || !sess_fits(s->size, off, sizeof(struct sonde_thread), _Alignof(struct sonde_thread)))
			continue;
		struct sonde_thread *t = sess_ptr(h, off);
		uint64_t e = t->end_tsc > t->last_tsc ? t->end_tsc : t->last_tsc;
		if (e > end)
			end = e;
	}
	return end;
}

/* The -F/-N patterns the session holds (NUL-separated), for the META lines. */
static int session_filters(struct session *s, const char **out, char *copy, size_t copylen)
{
	struct sonde_session_hdr *h = s->hdr;
	uint64_t off = h->filter_spec_off, len = h->filter_spec_len;
	if (!off || !len || len >= copylen || !sess_inside(s->size, off, len))
		return 0;
	memcpy(copy, sess_ptr(h, off), len);
	copy[len] = 0;
	int n = 0;
	for (size_t i = 0; i < len && n < MAX_FILTERS; i += strlen(copy + i) + 1)
		if (copy[i])
			out[n++] = copy + i;
	return n;
}

static int recover_from(struct session *s, const char *dir, char *err, size_t errlen)
{
	struct sonde_session_hdr *h = s->hdr;
	struct sonde_recorder_note note = h->recorder;
	int collector = h->collector_pid;
	if (proc_alive(collector, note.start_time)) {
		snprintf(err, errlen, "%s is being recorded (sonde record, pid %d, still runs): its files are written "
		         "when the program ends", dir, collector);
		return RECOVER_BUSY;
	}
	/* An attached program runs on: the agent's watcher switched the
	 * recording off when sonde died (docs/ATTACH.md). */
	int prog = note.attached ? 0 : session_program_running(s);
	if (prog) {
		snprintf(err, errlen, "%s: its recorder (pid %d) was killed, but the program (pid %d) still runs and "
		         "records into %s; read the recording when the program has ended", dir, collector, prog, s->path);
		return RECOVER_BUSY;
	}
	struct record_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.mode = h->mode;
	cfg.thread_region = s->thread_region;
	cfg.ring_size = s->ring_size;
	cfg.session_size = s->size;
	cfg.max_depth = h->trace_max_depth;
	cfg.min_time_ns = note.min_time_ns;
	static const char *filters[MAX_FILTERS];
	static char fcopy[65536];
	cfg.filters = filters;
	cfg.nfilters = session_filters(s, filters, fcopy, sizeof fcopy);

	static struct recorder rec;
	struct clock_point c0 = { .ticks = note.c0_ticks, .mono_ns = note.c0_mono_ns };
	if (recorder_resume(&rec, dir, &c0, note.events ? collector : 0, err, errlen))
		return -1;
	if (rec.events)
		collector_drain(s, &rec, 1);
	/* The recording's end is the program's, not this reading's (which may
	 * come days later): c1 at the session's last tick, its monotonic time
	 * from the tick rate measured from c0 to now. */
	struct clock_point now;
	clock_point_take(&now);
	uint64_t end = session_end_ticks(s);
	if (now.ticks > c0.ticks && now.mono_ns > c0.mono_ns && end > c0.ticks && end <= now.ticks) {
		double tpn = clock_ticks_per_ns(&c0, &now);
		rec.c1.ticks = end;
		rec.c1.mono_ns = c0.mono_ns + (uint64_t)((double)(end - c0.ticks) / tpn);
		rec.c1_given = rec.c1.mono_ns > c0.mono_ns + 1000; /* else: too short, measured as usual */
	}

	struct launched l;
	memset(&l, 0, sizeof l);
	struct sonde_proc *p = &h->procs[0];
	l.pid = p->pid;
	l.end_tsc = end;
	char program[SONDE_PATH_MAX + 1], cmd[SONDE_PATH_MAX + 1];
	copy_str(program, sizeof program, p->exe, sizeof p->exe);
	size_t clen = p->cmdline_len < sizeof p->cmdline ? p->cmdline_len : sizeof p->cmdline;
	memcpy(cmd, p->cmdline, clen);
	cmd[clen] = 0;
	char pidstr[16];
	snprintf(pidstr, sizeof pidstr, "%d", collector);
	const char *meta[] = { "incomplete", "recorder killed", "recorder_pid", pidstr,
	                       "program_end", p->end_tsc ? "noted by the runtime (exit status unknown)" : "unknown", NULL };
	uint64_t damaged = 0;
	if (recording_finish(s, &rec, &l, &cfg, program[0] ? program : "?", cmd, clen,
	                     note.attached ? "sonde record -p" : "sonde record", INT32_MIN, meta, &damaged, err, errlen))
		return -1;
	snprintf(err, errlen, "%s: its recorder (sonde, pid %d) was killed; recovered the recording from %s "
	         "(marked incomplete%s%s)", dir, collector, s->path,
	         note.events ? ": events the recorder had drained but not written are missing" : "",
	         damaged ? "; impossible values left out" : "");
	return RECOVER_DONE;
}

/* Does the session's header name dir as its recording directory (the same
 * directory, not a copy)? */
static int names_dir(struct session *s, const char *dir)
{
	char rd[SONDE_REC_DIR_MAX];
	copy_str(rd, sizeof rd, s->hdr->recorder.rec_dir, sizeof s->hdr->recorder.rec_dir);
	struct stat a, b;
	return rd[0] == '/' && stat(rd, &a) == 0 && stat(dir, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int recover_recording(const char *dir, char *err, size_t errlen)
{
	char path[4200], prof[4200];
	snprintf(prof, sizeof prof, "%s/%s", dir, SONDE_FILE_PROFILE);
	int rc = session_ref_read(dir, path, sizeof path);
	if (rc == -ENOENT || access(prof, F_OK) == 0)
		return RECOVER_NONE;
	if (rc) {
		snprintf(err, errlen, "%s/%s: refused (%s)", dir, SONDE_FILE_SESSION_REF,
		         rc == -ELOOP ? "a symbolic link" : rc == -EINVAL ? "it does not name a session file of this user"
		                                           : "not a private file of this user");
		return -1;
	}
	struct session s;
	if (session_open(&s, path, err, errlen)) {
		if (access(path, F_OK) != 0 && errno == ENOENT)
			snprintf(err, errlen, "%s: its recorder was killed and its session %s is gone (removed, or the machine "
			         "restarted): the recording cannot be recovered", dir, path);
		return -1;
	}
	if (!names_dir(&s, dir)) {
		snprintf(err, errlen, "%s/%s names the session of another recording directory (%.1000s)", dir,
		         SONDE_FILE_SESSION_REF, s.hdr->recorder.rec_dir[0] ? s.hdr->recorder.rec_dir : "none");
		session_keep(&s);
		return -1;
	}
	snprintf(s.ref, sizeof s.ref, "%s/%s", dir, SONDE_FILE_SESSION_REF);
	/* One recovery at a time: a second reader waits, then finds profile.sonde. */
	if (flock(s.fd, LOCK_EX) != 0 || access(prof, F_OK) == 0) {
		session_keep(&s);
		return RECOVER_NONE;
	}
	rc = recover_from(&s, dir, err, errlen);
	if (rc == RECOVER_DONE) {
		session_destroy(&s);
		const char *sdir = session_dir();
		if (sdir)
			session_sweep(sdir);
	} else {
		session_keep(&s);
	}
	return rc;
}

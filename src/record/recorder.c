/* recorder.c — the one writer of a recording directory (see recorder.h). */
#include "record/recorder.h"

#include "common/path.h"
#include "common/trace_enc.h"

#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "data/reader.h"


static const char *const rec_files[] = { SONDE_FILE_PROFILE, SONDE_FILE_EVENTS, SONDE_FILE_DOMAIN, SONDE_FILE_SESSION_REF,
	                                  SONDE_FILE_REMOTE };
#define NREC_FILES 5

/* A recording's file, or one of their temporary names ("NAME.PID.tmp",
 * left by a recorder that was killed): returns its index, or -1. */
static int rec_file(const char *name)
{
	for (int i = 0; i < NREC_FILES; i++) {
		size_t n = strlen(rec_files[i]);
		if (!strncmp(name, rec_files[i], n) && (!name[n] || (name[n] == '.' && strlen(name) > n + 4 &&
		                                                     !strcmp(name + strlen(name) - 4, ".tmp"))))
			return name[n] ? i + NREC_FILES : i;
	}
	return -1;
}

/* dir holds something that is not a recording's file. */
static int foreign_files(DIR *d)
{
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && rec_file(de->d_name) < 0)
			return 1;
	return 0;
}

/* Remove the temporary files a killed recorder left. */
static void remove_tmp_files(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	char p[PATH_MAX + 300];
	while ((de = readdir(d)))
		if (rec_file(de->d_name) >= NREC_FILES) {
			snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
			unlink(p);
		}
	closedir(d);
}

static int prepare_dir(const char *dir, int flags, char *err, size_t n)
{
	struct stat st;
	if (lstat(dir, &st) != 0) {
		if (mkdir(dir, 0700) == 0) /* recordings hold names, arguments and values: private, as perf.data */
			return 0;
		char why[4200];
		if (errno != ENOENT || !path_missing_parent(dir, why, sizeof why))
			snprintf(why, sizeof why, "%s", strerror(errno));
		snprintf(err, n, "cannot create %s (%s)", dir, why);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, n, "%s exists and is not a directory", dir);
		return RECORDER_USAGE;
	}
	/* Files are created fresh, never through links; still, a directory that
	 * others can write into could be changed under us: refused. */
	if (st.st_uid != geteuid()) {
		snprintf(err, n, "%s belongs to another user (uid %u); record into a directory of your own", dir,
		         (unsigned)st.st_uid);
		return RECORDER_USAGE;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
		snprintf(err, n, "%s is writable by other users; record into a private directory (chmod go-w %s)", dir, dir);
		return RECORDER_USAGE;
	}
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(err, n, "cannot open %s (%s)", dir, strerror(errno));
		return -1;
	}
	int foreign = foreign_files(d);
	closedir(d);
	if (foreign) {
		snprintf(err, n, "%s exists and holds files that are not a sonde recording (choose another -o)", dir);
		return RECORDER_USAGE;
	}
	remove_tmp_files(dir);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/%s", dir, SONDE_FILE_PROFILE);
	unlink(p);
	snprintf(p, sizeof p, "%s/%s", dir, SONDE_FILE_EVENTS);
	unlink(p);
	snprintf(p, sizeof p, "%s/%s", dir, SONDE_FILE_REMOTE);   /* a former record --target's */
	unlink(p);
	/* A killed recording's, never recovered: its session goes with it. */
	char sess[4200];
	if (session_ref_read(dir, sess, sizeof sess) == 0)
		unlink(sess);
	snprintf(p, sizeof p, "%s/%s", dir, SONDE_FILE_SESSION_REF);
	unlink(p);
	if (!(flags & RECORDER_KEEP_DOMAIN)) {
		snprintf(p, sizeof p, "%s/%s", dir, SONDE_FILE_DOMAIN);
		unlink(p);
	}
	return 0;
}

int recorder_open(struct recorder *r, const char *dir, int flags, char *err, size_t n)
{
	memset(r, 0, sizeof *r);
	if (strlen(dir) >= sizeof r->dir) {
		snprintf(err, n, "%.200s...: path too long", dir);
		return RECORDER_USAGE;
	}
	int rc = prepare_dir(dir, flags, err, n);
	if (rc)
		return rc;
	snprintf(r->dir, sizeof r->dir, "%s", dir);
	snprintf(r->evpath, sizeof r->evpath, "%s/%s", dir, SONDE_FILE_EVENTS);
	snprintf(r->profpath, sizeof r->profpath, "%s/%s", dir, SONDE_FILE_PROFILE);
	if (flags & RECORDER_EVENTS) {
		if ((rc = writer_open(&r->ev, r->evpath, 2)) != 0) {
			snprintf(err, n, "cannot write %s (%s)", r->evpath, strerror(-rc));
			return -1;
		}
		r->events = 1;
	}
	clock_point_take(&r->c0);
	return 0;
}

int recorder_resume(struct recorder *r, const char *dir, const struct clock_point *c0, int events_pid,
                    char *err, size_t n)
{
	memset(r, 0, sizeof *r);
	if (strlen(dir) >= sizeof r->dir) {
		snprintf(err, n, "%.200s...: path too long", dir);
		return -1;
	}
	snprintf(r->dir, sizeof r->dir, "%s", dir);
	snprintf(r->evpath, sizeof r->evpath, "%s/%s", dir, SONDE_FILE_EVENTS);
	snprintf(r->profpath, sizeof r->profpath, "%s/%s", dir, SONDE_FILE_PROFILE);
	r->c0 = *c0;
	if (events_pid <= 0)
		return 0;
	char tmp[sizeof r->ev.tmp];
	snprintf(tmp, sizeof tmp, "%s.%d.tmp", r->evpath, events_pid);
	uint64_t chunks = 0, bytes = 0;
	int64_t end = rd_valid_prefix(tmp, SONDE_KIND_EVENTS, &chunks, &bytes);
	int rc = end > 0 ? writer_reopen(&r->ev, r->evpath, tmp, (uint64_t)end)
	                 : writer_open(&r->ev, r->evpath, SONDE_KIND_EVENTS); /* nothing usable was written */
	if (rc) {
		snprintf(err, n, "cannot write %s (%s)", r->evpath, strerror(-rc));
		return -1;
	}
	if (end <= 0)
		unlink(tmp);
	r->events = 1;
	r->chunks = chunks;
	r->bytes = bytes;
	return 0;
}

struct kept_chunk {
	struct rec_chunk c;
	uint32_t type;      /* REC_CHUNK, or REC_CHUNK_ZSTD */
	uint32_t len;       /* bytes stored at data */
	uint64_t calls;     /* calls that begin in the chunk */
	size_t mem;         /* the heap it takes */
	void *data;
};

/* What a kept chunk costs in events.sonde: record header, chunk header, stored bytes. */
static uint64_t kept_disk(const struct kept_chunk *k)
{
	return sizeof(struct sonde_rec_hdr) + sizeof k->c + k->len;
}

/* The window on disk: keep_last less the file's own header and end record. */
#define KEEP_SLACK 4096u
/* In memory, keep_last less what sonde takes besides the kept chunks
 * (measured: its resident set less the kept chunks), less this margin for
 * what may come between two measures (KEEP_MEASURE_EVERY chunks of the
 * rings' pages read in, at 64 KiB each). */
#define KEEP_MEASURE_EVERY 8u
#define KEEP_MEM_MARGIN (1u << 20)

/* sonde's resident set, bytes (0 when /proc cannot say). */
static uint64_t resident_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long size, res = 0;
	if (f) {
		if (fscanf(f, "%llu %llu", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void drop_oldest(struct recorder *r)
{
	struct kept_chunk *k = &r->kept[r->khead];
	r->kbytes -= kept_disk(k);
	r->kmem -= k->mem;
	r->dropped_chunks++;
	r->dropped_bytes += k->c.used;
	r->dropped_calls += k->calls;
	free(k->data);
	r->khead = (r->khead + 1) % r->kcap;
	r->kn--;
}

/* The chunk as it is stored: compressed when that is on and pays (then in
 * r->zbuf, valid until the next call).  Sets *type and *len. */
static const void *stored_form(struct recorder *r, const struct rec_chunk *c, const void *data, uint32_t *type,
                               size_t *len)
{
	*type = REC_CHUNK;
	*len = c->used;
	if (!r->zstd_level || c->used < 256)
		return data;
	size_t bound = ZSTD_compressBound(c->used);
	if (!r->zctx)
		r->zctx = ZSTD_createCCtx();
	if (bound > r->zcap) {
		void *nb = realloc(r->zbuf, bound);
		if (nb) {
			r->zbuf = nb;
			r->zcap = bound;
		}
	}
	if (!r->zctx || r->zcap < bound)
		return data;
	size_t n = ZSTD_compressCCtx(r->zctx, r->zbuf, r->zcap, data, c->used, r->zstd_level);
	if (ZSTD_isError(n) || n >= c->used - c->used / 16) /* pays: at least 1/16 smaller */
		return data;
	*type = REC_CHUNK_ZSTD;
	*len = n;
	return r->zbuf;
}

/* A chunk in its stored form into events.sonde. */
static int put_stored(struct recorder *r, struct rec_writer *w, const struct rec_chunk *c, uint32_t type,
                      const void *p, size_t len)
{
	r->chunks++;
	r->bytes += c->used;
	r->stored += sizeof *c + len;
	return writer_put(w, type, c, sizeof *c, p, len);
}

/* --keep-last: hold the chunk (in its stored form), let the oldest go
 * beyond keep_last bytes of events.sonde or of sonde's memory. */
static int keep_chunk(struct recorder *r, const struct rec_chunk *c, const void *data)
{
	uint32_t type;
	size_t len;
	uint64_t calls = tr_count_calls(data, (const uint8_t *)data + c->used);
	const void *p = stored_form(r, c, data, &type, &len);
	if (r->kn == r->kcap) {
		size_t cap = r->kcap ? r->kcap * 2 : 64;
		struct kept_chunk *v = malloc(sizeof *v * cap);
		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < r->kn; i++)
			v[i] = r->kept[(r->khead + i) % r->kcap];
		free(r->kept);
		r->kmem += (cap - r->kcap) * sizeof *v;
		r->kept = v;
		r->kcap = cap;
		r->khead = 0;
	}
	struct kept_chunk k = { *c, type, (uint32_t)len, calls, 0, malloc(len ? len : 1) };
	if (!k.data)
		return -ENOMEM;
	memcpy(k.data, p, len);
	k.mem = malloc_usable_size(k.data) + 2 * sizeof(size_t); /* and malloc's own header */
	if (r->measured++ % KEEP_MEASURE_EVERY == 0) {
		uint64_t rss = resident_bytes();
		r->other_mem = rss > r->kmem ? rss - r->kmem : 0;
	}
	/* When sonde itself leaves less than an eighth of keep_last for the
	 * chunks, the memory bound cannot be held: the file's still is, and
	 * META says so. */
	uint64_t disk_window = r->keep_last - KEEP_SLACK, mem_window = disk_window;
	if (r->keep_last > r->other_mem + KEEP_MEM_MARGIN + r->keep_last / 8)
		mem_window = r->keep_last - r->other_mem - KEEP_MEM_MARGIN;
	else if (r->other_mem > r->mem_short)
		r->mem_short = r->other_mem;
	if (mem_window > disk_window)
		mem_window = disk_window;
	while (r->kn && (r->kbytes + kept_disk(&k) > disk_window || r->kmem + k.mem > mem_window))
		drop_oldest(r);
	if (kept_disk(&k) > disk_window || k.mem > mem_window) { /* larger than the whole window */
		r->dropped_chunks++;
		r->dropped_bytes += c->used;
		r->dropped_calls += calls;
		free(k.data);
		return 0;
	}
	r->kept[(r->khead + r->kn) % r->kcap] = k;
	r->kn++;
	r->kbytes += kept_disk(&k);
	r->kmem += k.mem;
	return 0;
}

/* One chunk into events.sonde: compressed when that is on and pays. */
static int put_chunk(struct recorder *r, const struct rec_chunk *c, const void *data)
{
	uint32_t type;
	size_t len;
	const void *p = stored_form(r, c, data, &type, &len);
	return put_stored(r, &r->ev, c, type, p, len);
}

int recorder_chunk(struct recorder *r, const struct rec_chunk *c, const void *data)
{
	if (!r->events)
		return -1;
	if (r->keep_last)
		return keep_chunk(r, c, data);
	int rc = put_chunk(r, c, data);
	/* Into the file at once (one write per chunk of 64K): a recorder that
	 * is killed loses no chunk it drained (record/recover.c). */
	if (rc == 0 && fflush(r->ev.f) != 0) {
		r->ev.failed = 1;
		rc = -EIO;
	}
	return rc;
}

void recorder_chunk_buf(struct recorder *r, uint32_t thread, uint64_t base, uint64_t *seq, const void *data,
                        uint32_t *used)
{
	if (!*used)
		return;
	struct rec_chunk c;
	memset(&c, 0, sizeof c);
	c.used = *used;
	c.seq = (*seq)++;
	c.base_tsc = base;
	c.thread = thread;
	recorder_chunk(r, &c, data);
	*used = 0;
}

static void free_zstd(struct recorder *r)
{
	ZSTD_freeCCtx(r->zctx);
	free(r->zbuf);
	r->zctx = NULL;
	r->zbuf = NULL;
	r->zcap = 0;
}

/* The kept chunks into events.sonde, oldest first, and their memory given
 * back (what follows the recording is not counted against keep_last). */
static int write_kept(struct recorder *r)
{
	int rc = 0;
	while (r->kn) {
		struct kept_chunk *k = &r->kept[r->khead];
		if (!rc)
			rc = put_stored(r, &r->ev, &k->c, k->type, k->data, k->len);
		free(k->data);
		r->khead = (r->khead + 1) % r->kcap;
		r->kn--;
	}
	free(r->kept);
	r->kept = NULL;
	r->kcap = r->kbytes = r->kmem = 0;
	malloc_trim(0);
	return rc;
}

int recorder_copy_kept(const struct recorder *from, struct recorder *to)
{
	int rc = 0;
	for (size_t i = 0; i < from->kn && !rc; i++) {
		const struct kept_chunk *k = &from->kept[(from->khead + i) % from->kcap];
		rc = put_stored(to, &to->ev, &k->c, k->type, k->data, k->len);
	}
	to->dropped_chunks = from->dropped_chunks;
	to->dropped_bytes = from->dropped_bytes;
	to->dropped_calls = from->dropped_calls;
	to->zstd_level = from->zstd_level;
	return rc;
}

void recorder_meta_common(struct recorder *r, const char *program, const char *command, size_t len,
                          const char *recorder_name, uint32_t mode, int exit_status)
{
	if (!r->c1_given)
		clock_point_take(&r->c1);
	if (!r->c1_given && r->c1.mono_ns <= r->c0.mono_ns + 1000000) { /* too short to calibrate: measure 1 ms more */
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
		clock_point_take(&r->c1);
	}
	struct meta_buf *m = &r->meta;
	char num[64];
	meta_add(m, "program", program && *program ? program : "?");
	char *cmd = malloc(len + 1);
	if (cmd) {
		for (size_t i = 0; i < len; i++)
			cmd[i] = command[i] ? command[i] : ' ';
		while (len && cmd[len - 1] == ' ')
			len--;
		cmd[len] = 0;
		meta_add(m, "command", cmd);
		free(cmd);
	}
	meta_add(m, "recorder", recorder_name);
	meta_add_clock(m, &r->c0, &r->c1);
	snprintf(num, sizeof num, "%u", mode);
	meta_add(m, "mode", num);
	snprintf(num, sizeof num, "%llu", (unsigned long long)time(NULL));
	meta_add(m, "time", num);
	if (gethostname(num, sizeof num) == 0) {
		num[sizeof num - 1] = 0;
		meta_add(m, "hostname", num);
	}
	if (exit_status != INT32_MIN) {
		snprintf(num, sizeof num, "%d", exit_status);
		meta_add(m, "exit_status", num);
	}
	uint64_t chunks = r->chunks + r->kn, bytes = r->bytes; /* the kept ones are written next */
	for (size_t i = 0; i < r->kn; i++)
		bytes += r->kept[(r->khead + i) % r->kcap].c.used;
	snprintf(num, sizeof num, "%llu", (unsigned long long)chunks);
	meta_add(m, "event_chunks", num);
	snprintf(num, sizeof num, "%llu", (unsigned long long)bytes);
	meta_add(m, "event_bytes", num);
	if (r->zstd_level) {
		snprintf(num, sizeof num, "%d", r->zstd_level);
		meta_add(m, "event_zstd_level", num);
	}
	if (r->keep_last) {
		snprintf(num, sizeof num, "%llu", (unsigned long long)r->keep_last);
		meta_add(m, "keep_last_bytes", num);
		snprintf(num, sizeof num, "%llu", (unsigned long long)r->dropped_chunks);
		meta_add(m, "dropped_chunks", num);
		snprintf(num, sizeof num, "%llu", (unsigned long long)r->dropped_bytes);
		meta_add(m, "dropped_bytes", num);
		snprintf(num, sizeof num, "%llu", (unsigned long long)r->dropped_calls);
		meta_add(m, "dropped_calls", num);
		if (r->mem_short) {
			snprintf(num, sizeof num, "%llu", (unsigned long long)r->mem_short);
			meta_add(m, "keep_last_memory_short", num);
		}
	}
}

int recorder_profile(struct recorder *r, char *err, size_t n)
{
	int rc = 0;
	if (r->events) {
		r->events = 0;
		int krc = write_kept(r);
		free_zstd(r);
		if ((krc != 0) | (writer_close(&r->ev) != 0)) {
			snprintf(err, n, "writing %s failed (disk full?)", r->evpath);
			rc = -1;
		}
	}
	int wrc = writer_open(&r->prof, r->profpath, 1);
	if (wrc) {
		snprintf(err, n, "cannot write %s (%s)", r->profpath, strerror(-wrc));
		free(r->meta.p);
		r->meta.p = NULL;
		return -1;
	}
	meta_write(&r->prof, &r->meta);
	return rc;
}

int recorder_close(struct recorder *r, char *err, size_t n)
{
	free(r->meta.p);
	r->meta.p = NULL;
	if (writer_close(&r->prof) != 0) {
		snprintf(err, n, "writing %s failed (disk full?)", r->profpath);
		return -1;
	}
	return 0;
}

void recorder_abort(struct recorder *r)
{
	free_zstd(r);
	while (r->kn)
		drop_oldest(r);
	free(r->kept);
	r->kept = NULL;
	if (r->events) {
		writer_close(&r->ev);
		r->events = 0;
	}
	if (r->prof.f)
		writer_close(&r->prof);
	free(r->meta.p);
	r->meta.p = NULL;
	unlink(r->evpath);
	unlink(r->profpath);
	rmdir(r->dir);
}

/* bulk_out.c — an export's output in 1 MiB blocks, O_DIRECT to a regular
 * file (see bulk_out.h for why and when).
 *
 * O_DIRECT writes are synchronous: a writer thread writes one block while
 * the format fills the other buffer, so the disk's time overlaps the
 * export's instead of adding to it.  One block is in flight at most: the
 * format waits for it (finish_job) before it hands over the next, and a
 * buffer is reused only after its block was written. */
#include "export/bulk_out.h"
#include "common/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BO_BLOCK (1u << 20) /* handed out when this much is buffered */
#define BO_SLOW_NS 50000000ull /* see finish_job */
#define BO_ALIGN 4096u      /* O_DIRECT: memory, offsets and lengths (covers 512 and 4096-byte sectors) */
#define BO_PREALLOC (64 << 20) /* ordinary writes at a file's end: its blocks allocated this much at a time */

struct bulk_out {
	struct bulk_out_at w; /* first: bo_room and bo_put in the header */
	int fd;        /* the caller's: ordinary writes */
	int dfd;       /* the same file opened with O_DIRECT; -1: none (any more) */
	off_t off;     /* with dfd: the file offset of the next block */
	int always;    /* SONDE_EXPORT_DIRECT=always: no page cache for a slow disk */
	int err;       /* errno of the first failed write; later output is dropped */
	/* Ordinary writes at the end of a regular file: its blocks allocated
	 * ahead (fallocate, the size kept), BO_PREALLOC at a time, so that the
	 * page cache's writes find them (ext4's delayed allocation costs more
	 * per block); what lies past the end is given back at bo_close. */
	int prealloc;  /* 0: not a file written at its end, or fallocate refused */
	off_t wpos;    /* with prealloc: the file offset of the next ordinary write */
	off_t pre_end; /* allocated up to here */
	char *buf[2];  /* BO_ALIGN-aligned, BO_BLOCK + BO_ROOM_MAX bytes each */
	int cur;       /* the one being filled, up to w.at */
	FILE *stream;
	/* The writer thread (with dfd only) and its one job. */
	int threaded, mu_made;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int busy, quit;      /* busy: a job is posted and not written yet */
	const char *jp;      /* the job: jlen bytes at jp to file offset joff */
	size_t jlen, jdone;  /* jdone: how many the writer wrote (< jlen: it stopped, jerr) */
	off_t joff;
	int jerr;
	uint64_t t0, waited; /* ns: bo_open's time, the time spent waiting for the writer */
};

static size_t used(const struct bulk_out *b)
{
	return (size_t)(b->w.at - b->buf[b->cur]);
}

static void set_used(struct bulk_out *b, size_t n)
{
	b->w.at = b->buf[b->cur] + n;
	b->w.full = b->buf[b->cur] + BO_BLOCK;
}

static void *writer(void *arg)
{
	struct bulk_out *b = arg;
	pthread_mutex_lock(&b->mu);
	for (;;) {
		while (!b->busy && !b->quit)
			pthread_cond_wait(&b->cv, &b->mu);
		if (!b->busy)
			break;
		pthread_mutex_unlock(&b->mu);
		size_t done = 0;
		int err = 0;
		while (done < b->jlen) {
			ssize_t w = pwrite(b->dfd, b->jp + done, b->jlen - done, b->joff + (off_t)done);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				err = w < 0 ? errno : EIO;
				break;
			}
			done += (size_t)w;
			if (done % BO_ALIGN) /* a short write: the rest is no longer aligned */
				break;
		}
		pthread_mutex_lock(&b->mu);
		b->jdone = done;
		b->jerr = err;
		b->busy = 0;
		pthread_cond_broadcast(&b->cv);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

static void write_all(struct bulk_out *b, const char *p, size_t len)
{
	if (b->prealloc && len && b->wpos + (off_t)len > b->pre_end) {
		off_t from = b->pre_end > b->wpos ? b->pre_end : b->wpos;
		if (fallocate(b->fd, FALLOC_FL_KEEP_SIZE, from, BO_PREALLOC)) /* not here (EOPNOTSUPP, ENOSPC...): the writes say */
			b->prealloc = 0;
		else
			b->pre_end = from + BO_PREALLOC;
	}
	while (len && !b->err) {
		ssize_t w = write(b->fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			b->err = w < 0 ? errno : EIO;
			break;
		}
		p += w;
		len -= (size_t)w;
		b->wpos += w;
	}
}

/* Stop the writer thread (idle) and leave O_DIRECT: the caller's descriptor
 * continues at offset `at`. */
static void drop_direct(struct bulk_out *b, off_t at)
{
	if (b->threaded) {
		pthread_mutex_lock(&b->mu);
		b->quit = 1;
		pthread_cond_broadcast(&b->cv);
		pthread_mutex_unlock(&b->mu);
		pthread_join(b->th, NULL);
		b->threaded = 0;
	}
	close(b->dfd);
	b->dfd = -1;
	if (lseek(b->fd, at, SEEK_SET) < 0 && !b->err)
		b->err = errno;
	b->wpos = at; /* the direct writes ended the file there */
}

/* Wait for the block in flight.  If the writer stopped short because the
 * file system refuses these writes (EINVAL: other alignments) or a write
 * came back short, the rest goes with ordinary writes from there on; so
 * does it when the export has spent more than a quarter of its time (and
 * BO_SLOW_NS) waiting for the disk: O_DIRECT saves CPU time, but a slow
 * disk would then set the export's pace where the page cache would not. */
static void finish_job(struct bulk_out *b)
{
	pthread_mutex_lock(&b->mu);
	if (b->busy) {
		uint64_t t = clock_mono_ns();
		while (b->busy)
			pthread_cond_wait(&b->cv, &b->mu);
		b->waited += clock_mono_ns() - t;
	}
	pthread_mutex_unlock(&b->mu);
	if (b->jdone == b->jlen && b->jlen && !b->always && b->waited > BO_SLOW_NS &&
	    b->waited > (clock_mono_ns() - b->t0) / 4) {
		/* The disk does not keep up: the page cache takes the rest and the
		 * kernel writes it back, as for any file (while memory lasts). */
		drop_direct(b, b->off);
	} else if (b->jdone < b->jlen) {
		if (b->jerr && b->jerr != EINVAL) {
			if (!b->err)
				b->err = b->jerr;
		} else {
			drop_direct(b, b->joff + (off_t)b->jdone);
			write_all(b, b->jp + b->jdone, b->jlen - b->jdone);
		}
	}
	b->jlen = b->jdone = 0;
}

/* Hand out the buffer: with O_DIRECT its whole blocks to the writer (the
 * tail moves to the other buffer), otherwise all of it. */
void bo_flush(struct bulk_out *b)
{
	size_t n = used(b);
	if (b->dfd >= 0)
		finish_job(b);
	if (b->dfd < 0 || b->err) {
		write_all(b, b->buf[b->cur], n);
		set_used(b, 0);
		return;
	}
	size_t len = n & ~(size_t)(BO_ALIGN - 1);
	if (!len)
		return;
	pthread_mutex_lock(&b->mu);
	b->jp = b->buf[b->cur];
	b->jlen = len;
	b->joff = b->off;
	b->busy = 1;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	b->off += (off_t)len;
	memcpy(b->buf[!b->cur], b->buf[b->cur] + len, n - len);
	b->cur = !b->cur;
	set_used(b, n - len);
}

static ssize_t stream_write(void *cookie, const char *data, size_t size)
{
	struct bulk_out *b = cookie;
	for (size_t done = 0; done < size;) {
		size_t k = size - done < BO_ROOM_MAX ? size - done : BO_ROOM_MAX;
		char *p = bo_room(b);
		memcpy(p, data + done, k);
		bo_put(b, p + k);
		done += k;
	}
	return (ssize_t)size; /* a failed write is reported by bo_close */
}

/* A second description of fd's file with O_DIRECT, or -1 when fd is not a
 * regular file at an aligned offset opened for plain writing, the file
 * system refuses O_DIRECT, or SONDE_EXPORT_DIRECT=0 (env) says not to
 * (`always`: finish_job keeps O_DIRECT for a slow disk too). */
static int open_direct(int fd, off_t *off, const char *env)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);
	if ((env && !strcmp(env, "0")) || fl < 0 || (fl & O_APPEND) || fstat(fd, &st) || !S_ISREG(st.st_mode))
		return -1;
	*off = lseek(fd, 0, SEEK_CUR);
	if (*off < 0 || *off % BO_ALIGN)
		return -1;
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	int d = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (d < 0)
		return -1;
	struct stat ds; /* the same file, not whatever the path names now */
	if (fstat(d, &ds) || ds.st_dev != st.st_dev || ds.st_ino != st.st_ino) {
		close(d);
		return -1;
	}
	return d;
}

struct bulk_out *bo_open(FILE *f)
{
	struct bulk_out *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	b->buf[0] = aligned_alloc(BO_ALIGN, BO_BLOCK + BO_ROOM_MAX);
	b->buf[1] = aligned_alloc(BO_ALIGN, BO_BLOCK + BO_ROOM_MAX);
	static const cookie_io_functions_t io = { .write = stream_write };
	b->stream = b->buf[0] && b->buf[1] ? fopencookie(b, "w", io) : NULL;
	if (!b->stream) {
		free(b->buf[0]);
		free(b->buf[1]);
		free(b);
		return NULL;
	}
	setvbuf(b->stream, NULL, _IONBF, 0);
	fflush(f);
	b->fd = fileno(f);
	set_used(b, 0);
	b->t0 = clock_mono_ns();
	struct stat st;
	b->wpos = lseek(b->fd, 0, SEEK_CUR);
	b->prealloc = !fstat(b->fd, &st) && S_ISREG(st.st_mode) && b->wpos == st.st_size && !(fcntl(b->fd, F_GETFL) & O_APPEND);
	b->pre_end = b->wpos;
	const char *env = getenv("SONDE_EXPORT_DIRECT");
	b->dfd = open_direct(b->fd, &b->off, env);
	b->always = env && !strcmp(env, "always");
	if (b->dfd >= 0) {
		pthread_mutex_init(&b->mu, NULL);
		pthread_cond_init(&b->cv, NULL);
		b->mu_made = 1;
		b->threaded = !pthread_create(&b->th, NULL, writer, b);
		if (!b->threaded)
			drop_direct(b, b->off);
	}
	return b;
}

FILE *bo_stream(struct bulk_out *b)
{
	return b->stream;
}

int bo_close(struct bulk_out *b)
{
	fclose(b->stream);
	bo_flush(b);
	if (b->dfd >= 0) {
		finish_job(b);
		if (b->dfd >= 0) /* the tail, shorter than a block, with an ordinary write */
			drop_direct(b, b->off);
	}
	bo_flush(b);
	struct stat st; /* the blocks allocated past the end given back (a size that did not change frees them) */
	if (b->prealloc && b->pre_end > b->wpos && !fstat(b->fd, &st) && st.st_size == b->wpos)
		(void)!ftruncate(b->fd, b->wpos);
	int err = b->err;
	if (b->mu_made) {
		pthread_mutex_destroy(&b->mu);
		pthread_cond_destroy(&b->cv);
	}
	free(b->buf[0]);
	free(b->buf[1]);
	free(b);
	errno = err;
	return err ? -1 : 0;
}

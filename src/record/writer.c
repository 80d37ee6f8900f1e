/* writer.c — writes the record container of format.h (header, typed records
 * with length and CRC, and an END record that marks a complete file). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "record/record.h"

FILE *file_create(const char *path, char *tmp, size_t tmplen)
{
	if ((size_t)snprintf(tmp, tmplen, "%s.%d.tmp", path, (int)getpid()) >= tmplen) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	unlink(tmp); /* ours from an earlier run with the same pid, or a planted link: never followed */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "wb");
	if (!f) {
		int e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
	}
	return f;
}

int file_commit(FILE *f, const char *tmp, const char *path)
{
	int rc = fclose(f) != 0 ? -EIO : 0;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

int writer_open(struct rec_writer *w, const char *path, uint32_t kind)
{
	memset(w, 0, sizeof *w);
	w->path = path;
	w->f = file_create(path, w->tmp, sizeof w->tmp);
	if (!w->f)
		return -errno;
	struct sonde_file_hdr h;
	memcpy(h.magic, SONDE_DATA_MAGIC, 8);
	h.version = SONDE_DATA_VERSION;
	h.kind = kind;
	if (fwrite(&h, sizeof h, 1, w->f) != 1)
		w->failed = 1;
	w->bytes = sizeof h;
	return 0;
}

int writer_reopen(struct rec_writer *w, const char *path, const char *tmp, uint64_t valid_end)
{
	memset(w, 0, sizeof *w);
	w->path = path;
	if ((size_t)snprintf(w->tmp, sizeof w->tmp, "%s", tmp) >= sizeof w->tmp)
		return -ENAMETOOLONG;
	int fd = open(tmp, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) ||
	    (uint64_t)st.st_size < valid_end || ftruncate(fd, (off_t)valid_end) != 0 ||
	    lseek(fd, 0, SEEK_END) != (off_t)valid_end) {
		close(fd);
		return -EPERM;
	}
	w->f = fdopen(fd, "r+b");
	if (!w->f) {
		int e = errno;
		close(fd);
		return -e;
	}
	fseeko(w->f, 0, SEEK_END);
	w->bytes = valid_end;
	return 0;
}

int writer_put(struct rec_writer *w, uint32_t type, const void *a, uint64_t alen, const void *b, uint64_t blen)
{
	struct sonde_rec_hdr h = { type, 0, alen + blen };
	h.crc = crc32_ieee(crc32_ieee(0, a, alen), b, blen);
	if (fwrite(&h, sizeof h, 1, w->f) != 1 || (alen && fwrite(a, alen, 1, w->f) != 1) ||
	    (blen && fwrite(b, blen, 1, w->f) != 1)) {
		w->failed = 1;
		return -EIO;
	}
	w->bytes += sizeof h + alen + blen;
	return 0;
}

int writer_close(struct rec_writer *w)
{
	if (!w->f)
		return 0;
	writer_put(w, REC_END, NULL, 0, NULL, 0);
	int failed = w->failed;
	int rc = file_commit(w->f, w->tmp, w->path);
	w->f = NULL;
	return rc ? rc : failed ? -EIO : 0;
}

void meta_add(struct meta_buf *m, const char *key, const char *val)
{
	size_t need = strlen(key) + strlen(val) + 2;
	if (m->len + need > m->cap) {
		size_t c = (m->cap + need) * 2;
		char *v = realloc(m->p, c);
		if (!v)
			return; /* the line is dropped; the reader reports what is missing */
		m->p = v;
		m->cap = c;
	}
	for (const char *q = key; *q; q++)
		m->p[m->len++] = *q;
	m->p[m->len++] = '=';
	for (const char *q = val; *q; q++)
		m->p[m->len++] = *q == '\n' ? ' ' : *q;
	m->p[m->len++] = '\n';
}

void meta_add_clock(struct meta_buf *m, const struct clock_point *c0, const struct clock_point *c1)
{
	char num[64];
	snprintf(num, sizeof num, "%.9f", clock_ticks_per_ns(c0, c1));
	meta_add(m, "ticks_per_ns", num);
	snprintf(num, sizeof num, "%llu", (unsigned long long)c0->ticks);
	meta_add(m, "start_ticks", num);
	snprintf(num, sizeof num, "%llu", (unsigned long long)c0->mono_ns);
	meta_add(m, "start_mono_ns", num);
	snprintf(num, sizeof num, "%llu", (unsigned long long)c1->ticks);
	meta_add(m, "end_ticks", num);
	snprintf(num, sizeof num, "%llu", (unsigned long long)c1->mono_ns);
	meta_add(m, "end_mono_ns", num);
}

int meta_write(struct rec_writer *w, struct meta_buf *m)
{
	int rc = writer_put(w, REC_META, m->p, m->len, NULL, 0);
	free(m->p);
	m->p = NULL;
	m->len = m->cap = 0;
	return rc;
}

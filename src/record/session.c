/* session.c — the session memory owned by `sonde record`: a sparse file of
 * the recording directory (session.shm, private to this user, created fresh
 * as every file of a recording), inherited by the program through its
 * descriptor number in SONDE_SESSION_FD.  A file and not a memfd so that
 * what the program records outlives a recorder that is killed
 * (record/recover.c); a normal end of the recorder removes it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/record.h"

uint64_t proc_start_time(int pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
	if (!p)
		return 0;
	/* after ")": field 3 (state) ... field 22 (starttime) */
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

int session_create(struct session *s, const struct record_config *cfg, double tpn, const char *dir)
{
	memset(s, 0, sizeof *s);
	s->fd = -1;
	/* Made under a temporary name and renamed once its header is written:
	 * a reader never sees a session.shm without one. */
	char tmp[sizeof s->path];
	if ((size_t)snprintf(tmp, sizeof tmp, "%s/%s.%d.tmp", dir, SONDE_FILE_SESSION, (int)getpid()) >= sizeof tmp)
		return -ENAMETOOLONG;
	unlink(tmp); /* a planted link: never followed */
	/* No O_CLOEXEC: the program inherits it. */
	s->fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (s->fd < 0) {
		s->path[0] = 0;
		return -errno;
	}
	memcpy(s->path, tmp, sizeof tmp); /* removed by session_destroy on error */
	s->size = cfg->session_size;
	s->thread_region = cfg->thread_region;
	s->ring_size = cfg->ring_size;
	void *p = MAP_FAILED;
	if (ftruncate(s->fd, (off_t)s->size) == 0)
		p = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		session_destroy(s);
		return -e;
	}
	struct sonde_session_hdr *h = p;
	h->magic = SONDE_SESSION_MAGIC;
	h->collector_pid = (int32_t)getpid();
	h->recorder.start_time = proc_start_time(getpid());
	h->recorder.min_time_ns = cfg->min_time_ns;
	h->version = SONDE_SESSION_VERSION;
	h->mode = cfg->mode;
	h->size = s->size;
	h->thread_region_size = cfg->thread_region;
	h->ring_size = cfg->ring_size;
	h->trace_max_depth = cfg->max_depth;
	h->trace_min_ticks = (uint64_t)((double)cfg->min_time_ns * tpn);
	atomic_store(&h->alloc, (sizeof *h + 4095) & ~(uint64_t)4095);
	/* Filter patterns, NUL-separated, for the runtime to compile per module. */
	uint64_t len = 0;
	for (int i = 0; i < cfg->nfilters; i++)
		len += strlen(cfg->filters[i]) + 1;
	if (len) {
		uint64_t off = sess_alloc(h, len);
		char *d = sess_ptr(h, off);
		for (int i = 0; i < cfg->nfilters; i++) {
			size_t n = strlen(cfg->filters[i]) + 1;
			memcpy(d, cfg->filters[i], n);
			d += n;
			if (cfg->filters[i][0] == '+')
				h->filter_has_only = 1;
		}
		h->filter_spec_off = off;
		h->filter_spec_len = len;
	}
	s->hdr = h;
	snprintf(s->path, sizeof s->path, "%s/%s", dir, SONDE_FILE_SESSION);
	if (rename(tmp, s->path) != 0) {
		int e = errno;
		memcpy(s->path, tmp, sizeof tmp);
		session_destroy(s);
		return -e;
	}
	return 0;
}

void session_note_recorder(struct session *s, const struct clock_point *c0, int events, int attached)
{
	struct sonde_recorder_note *n = &s->hdr->recorder;
	n->c0_ticks = c0->ticks;
	n->c0_mono_ns = c0->mono_ns;
	n->events = events != 0;
	n->attached = attached != 0;
}

int session_open(struct session *s, const char *path, char *err, size_t n)
{
	memset(s, 0, sizeof *s);
	s->fd = -1;
	snprintf(s->path, sizeof s->path, "%s", path);
	s->fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (s->fd < 0 || fstat(s->fd, &st) != 0) {
		snprintf(err, n, "%s: cannot open the session of a killed recorder (%s)", path,
		         errno == ELOOP ? "a symbolic link: refused" : strerror(errno));
		s->path[0] = 0;
		session_destroy(s);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		snprintf(err, n, "%s: refused (not a private file of this user: uid %u, mode %03o)", path,
		         (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
		s->path[0] = 0;
		session_destroy(s);
		return -1;
	}
	struct sonde_session_hdr h;
	ssize_t got = pread(s->fd, &h, sizeof h, 0);
	if (got != (ssize_t)sizeof h || h.magic != SONDE_SESSION_MAGIC) {
		snprintf(err, n, "%s: damaged session (%s)", path, got != (ssize_t)sizeof h ? "truncated header" : "bad magic");
		s->path[0] = 0;
		session_destroy(s);
		return -1;
	}
	if (h.version != SONDE_SESSION_VERSION) {
		snprintf(err, n, "%s: session of another sonde version (%u, this sonde reads %u)", path, h.version,
		         SONDE_SESSION_VERSION);
		s->path[0] = 0;
		session_destroy(s);
		return -1;
	}
	/* Mapped at the file's size only: the header's own size must agree (a
	 * truncated file would fault in the middle of the reading). */
	if (h.size != (uint64_t)st.st_size || h.thread_region_size < 4096 || h.thread_region_size > h.size ||
	    h.ring_size > h.size) {
		snprintf(err, n, "%s: damaged session (size %llu, the file holds %llu bytes)", path,
		         (unsigned long long)h.size, (unsigned long long)st.st_size);
		s->path[0] = 0;
		session_destroy(s);
		return -1;
	}
	s->size = h.size;
	s->thread_region = h.thread_region_size;
	s->ring_size = h.ring_size;
	void *p = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (p == MAP_FAILED) {
		snprintf(err, n, "%s: cannot map the session (%s)", path, strerror(errno));
		s->path[0] = 0;
		session_destroy(s);
		return -1;
	}
	s->hdr = p;
	return 0;
}

void session_destroy(struct session *s)
{
	if (s->hdr)
		munmap(s->hdr, s->size);
	if (s->fd >= 0)
		close(s->fd);
	if (s->path[0])
		unlink(s->path);
	s->hdr = NULL;
	s->fd = -1;
	s->path[0] = 0;
}

void session_keep(struct session *s)
{
	if (s->hdr)
		munmap(s->hdr, s->size);
	if (s->fd >= 0)
		close(s->fd);
	s->hdr = NULL;
	s->fd = -1;
	s->path[0] = 0;
}

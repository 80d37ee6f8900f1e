/* session.c — creation of the session memory owned by `sonde record`: a
 * memfd (private to this user, never on a file system), sparse, inherited by
 * the program through its descriptor number in SONDE_SESSION_FD. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "record/record.h"

int session_create(struct session *s, const struct record_config *cfg, double tpn)
{
	s->fd = memfd_create("sonde-session", 0); /* no CLOEXEC: the program inherits it */
	if (s->fd < 0)
		return -errno;
	s->size = cfg->session_size;
	s->thread_region = cfg->thread_region;
	s->ring_size = cfg->ring_size;
	if (ftruncate(s->fd, (off_t)s->size) != 0) {
		int e = errno;
		close(s->fd);
		return -e;
	}
	void *p = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		close(s->fd);
		return -e;
	}
	struct sonde_session_hdr *h = p;
	h->magic = SONDE_SESSION_MAGIC;
	h->collector_pid = (int32_t)getpid();
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
	return 0;
}

void session_destroy(struct session *s)
{
	if (s->hdr)
		munmap(s->hdr, s->size);
	if (s->fd >= 0)
		close(s->fd);
	s->hdr = NULL;
	s->fd = -1;
}

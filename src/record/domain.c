/* domain.c — --domain and domain.txt (see domain.h). */
#include "record/domain.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>


int domain_apply(struct session *s, const char *dir, const char *arg, char *msg, size_t len)
{
	char path[4096];
	if (!strcmp(arg, "auto"))
		snprintf(path, sizeof path, "%s/%s", dir, SONDE_FILE_DOMAIN);
	else
		snprintf(path, sizeof path, "%s", arg);
	/* The recording's own domain.txt is never read through a link (or a FIFO). */
	int auto_file = !strcmp(arg, "auto");
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (auto_file ? O_NOFOLLOW : 0));
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
		errno = EINVAL;
		snprintf(msg, len, "the domain file %s is not a regular file", path);
		return -1;
	}
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		if (errno == ELOOP) {
			snprintf(msg, len, "%s is a symbolic link: not read (sonde reads only the domain file it wrote)", path);
			return -1;
		}
		snprintf(msg, len, "cannot read the domain file %s (%s%s)", path, strerror(errno),
		         strcmp(arg, "auto") ? "" : "; record once with --trace into this directory first");
		return -1;
	}
	struct sonde_session_hdr *h = s->hdr;
	/* New spec = old patterns + "=name" per line. */
	size_t cap = h->filter_spec_len + 4096, n = h->filter_spec_len;
	char *spec = malloc(cap);
	if (n)
		memcpy(spec, sess_ptr(h, h->filter_spec_off), n);
	char line[4096];
	int count = 0;
	while (fgets(line, sizeof line, f)) {
		size_t l = strcspn(line, "\r\n");
		line[l] = 0;
		if (!l || line[0] == '#')
			continue;
		if (n + l + 2 > cap) {
			cap = (n + l + 2) * 2;
			spec = realloc(spec, cap);
		}
		spec[n++] = '=';
		memcpy(spec + n, line, l + 1);
		n += l + 1;
		count++;
	}
	fclose(f);
	if (!count) {
		free(spec);
		snprintf(msg, len, "the domain file %s names no function", path);
		return -1;
	}
	uint64_t off = sess_alloc(h, n);
	if (!off) {
		free(spec);
		snprintf(msg, len, "session memory exhausted by the domain of %d functions", count);
		return -1;
	}
	memcpy(sess_ptr(h, off), spec, n);
	free(spec);
	h->filter_spec_off = off;
	h->filter_spec_len = n;
	return count;
}

void domain_stats(struct session *s, struct domain_stats *out)
{
	struct sonde_session_hdr *h = s->hdr;
	uint64_t funcs = 0, filtered = 0, dormant = 0;
	uint32_t nm = atomic_load(&h->nmodules), nt = atomic_load(&h->nthreads);
	for (uint32_t i = 0; i < nm && i < SONDE_MAX_MODULES; i++) {
		funcs += h->modules[i].nfuncs;
		dormant += h->modules[i].dormant <= h->modules[i].nfuncs ? h->modules[i].dormant : 0;
	}
	for (uint32_t i = 0; i < nt && i < SONDE_MAX_THREADS; i++) {
		struct sonde_thread *t = sess_thread(h, i);
		if (t)
			filtered += t->trace_filtered;
	}
	*out = (struct domain_stats){ funcs, dormant, filtered };
}

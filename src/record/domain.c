/* domain.c — --domain and domain.txt (see domain.h). */
#include "record/domain.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/functions.h"
#include "data/events.h"

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

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void mark(uint32_t *seen, const struct fn_table *ft, const struct recording *r, uint32_t func)
{
	if (rd_func_valid(r, func))
		seen[fn_of(ft, r, func)] = 1;
}

/* The functions that left records: marked by the runtime in each thread's
 * records[number] arrays (trace.h, trace_mark), plus the frames still open
 * at the end (their entry records are in the trace).  No trace decoding. */
int domain_write(struct session *s, const char *dir, char *msg, size_t len)
{
	struct recording *r = rd_open(dir, msg, len);
	if (!r)
		return -1;
	struct fn_table ft;
	fn_table_build(r, &ft);
	uint32_t *seen = calloc(ft.n + 1, sizeof *seen);
	struct sonde_session_hdr *h = s->hdr;
	uint32_t nthreads = sess_nthreads(h);
	for (uint32_t i = 0; i < nthreads; i++) {
		struct sonde_thread *t = sess_thread(h, i);
		if (!t)
			continue;
		for (uint32_t slot = 0; slot < SONDE_MAX_MODS_PER_THREAD && slot < r->nmodule_slots; slot++) {
			if (!t->recs_off[slot] || !r->modules[slot])
				continue;
			uint32_t nf = r->modules[slot]->r.nfuncs;
			if (!sess_inside(s->size, t->recs_off[slot], (uint64_t)(nf + 1) * 4))
				continue;
			const uint32_t *recs = sess_ptr(h, t->recs_off[slot]);
			for (uint32_t k = 0; k <= nf; k++)
				if (recs[k])
					mark(seen, &ft, r, SONDE_FUNC(slot, k == nf ? SONDE_UNNUMBERED : k));
		}
		uint32_t depth = t->depth < SONDE_STACK_MAX ? t->depth : SONDE_STACK_MAX;
		for (uint32_t k = 0; k < depth; k++)
			if (t->stack[k].flags & SONDE_FRAME_TRACED)
				mark(seen, &ft, r, t->stack[k].func);
	}
	int rc = 0;
	const char **names = malloc(sizeof *names * (ft.n + 1));
	int n = 0;
	for (uint32_t i = 1; i < ft.n; i++)
		/* The runtime matches symbol names as the ELF file spells them (mangled for C++). */
		if (seen[i] && ft.fns[i].name && ft.fns[i].name[0] && !strchr(ft.fns[i].name, '\n'))
			names[n++] = ft.fns[i].mangled ? ft.fns[i].mangled : ft.fns[i].name;
	qsort(names, (size_t)n, sizeof *names, by_name);
	char path[4096], tmp[4200];
	snprintf(path, sizeof path, "%s/%s", dir, SONDE_FILE_DOMAIN);
	FILE *o = rc == 0 ? file_create(path, tmp, sizeof tmp) : NULL;
	if (o) {
		const char *cmd = rd_meta(r, "command");
		fprintf(o, "# sonde domain: the functions that left records in the trace of: %s\n"
		           "# 'sonde record --trace --domain auto' traces only these (one name a line)\n",
		        cmd ? cmd : "?");
		for (int i = 0; i < n; i++)
			if (i == 0 || strcmp(names[i], names[i - 1]))
				fprintf(o, "%s\n", names[i]);
		int e = file_commit(o, tmp, path);
		if (e)
			rc = -1, snprintf(msg, len, "writing %s failed (%s)", path, strerror(-e));
	} else if (rc == 0) {
		rc = -1;
		snprintf(msg, len, "cannot write %s (%s)", path, strerror(errno));
	}
	free(names);
	free(seen);
	fn_table_free(&ft);
	rd_close(r);
	return rc ? -1 : n;
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

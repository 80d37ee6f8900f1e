/* domain_out.c — domain.txt after a --trace recording (see domain_out.h). */
#include "analysis/domain_out.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/functions.h"
#include "data/events.h"

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

/* callgrind.c — the profile as a callgrind file (callgrind_annotate,
 * KCachegrind).  Self cost = exclusive time; each call line carries the time
 * attributed to that callee in the caller's callees view, so a function's
 * inclusive cost (self + calls) is exactly its inclusive time, recursion
 * included.  Cost unit: nanoseconds. */
#include <inttypes.h>
#include <stdlib.h>

#include "export/export.h"

static void name_line(FILE *f, const char *key, uint32_t id, const struct fn_info *fi, char *seen)
{
	if (seen[id]) {
		fprintf(f, "%s=(%u)\n", key, id);
	} else {
		fprintf(f, "%s=(%u) %s\n", key, id, fi->name);
		seen[id] = 1;
	}
}

static void file_line(FILE *f, const char *key, uint32_t id, const struct fn_info *fi, char *seen)
{
	if (seen[id]) {
		fprintf(f, "%s=(%u)\n", key, id);
	} else {
		fprintf(f, "%s=(%u) %s\n", key, id, fi->file ? fi->file : fi->module);
		seen[id] = 1;
	}
}

static int write_callgrind(struct export_ctx *x)
{
	struct profile p;
	profile_init(&p, x->ft);
	for (int i = 0; i < x->r->nthreads; i++)
		if (rd_thread_selected(x->r, &x->sel, &x->r->threads[i]))
			profile_add_thread(&p, x->r, x->ft, &x->r->threads[i]);
	FILE *f = x->out;
	fprintf(f, "# callgrind format\nversion: 1\ncreator: sonde\ncmd: %s\npositions: line\nevents: ns\n",
	        rd_meta(x->r, "command") ? rd_meta(x->r, "command") : "?");
	fprintf(f, "summary: %" PRId64 "\n\n", (int64_t)rd_ns(x->r, p.total));
	char *seen_fn = calloc(x->ft->n, 1), *seen_fl = calloc(x->ft->n, 1);
	/* File ids: the function index of the first function naming that file is reused as its id. */
	for (uint32_t fn = 1; fn < p.nfn; fn++) {
		const struct fn_metrics *m = &p.fn[fn];
		if (!m->calls && !m->incl)
			continue;
		const struct fn_info *fi = &x->ft->fns[fn];
		file_line(f, "fl", fn, fi, seen_fl);
		name_line(f, "fn", fn, fi, seen_fn);
		fprintf(f, "%d %" PRId64 "\n", fi->line, (int64_t)(rd_ns(x->r, m->excl) + 0.5));
		for (uint32_t k = 0; k < p.npairs; k++) {
			const struct pair_metrics *pm = &p.pairs[k];
			if (pm->caller != fn)
				continue;
			const struct fn_info *ci = &x->ft->fns[pm->callee];
			file_line(f, "cfl", pm->callee, ci, seen_fl);
			name_line(f, "cfn", pm->callee, ci, seen_fn);
			fprintf(f, "calls=%" PRIu64 " %d\n%d %" PRId64 "\n", pm->calls, ci->line, fi->line,
			        (int64_t)(rd_ns(x->r, pm->attr_out) + 0.5));
		}
		fputc('\n', f);
	}
	free(seen_fn);
	free(seen_fl);
	profile_free(&p);
	return 0;
}

const struct export_ops export_callgrind = {
	"callgrind", "callgrind profile (callgrind_annotate, KCachegrind)", 0, write_callgrind,
};

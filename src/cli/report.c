/* report.c — `sonde report`: the flat profile. */
#include <stdlib.h>
#include <string.h>

#include "cli/load.h"
#include "common/json.h"

static const struct profile *sort_p;
static int sort_key;  /* 0 excl, 1 incl, 2 calls, 3 name */
static const struct fn_table *sort_ft;

static int cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct fn_metrics *mx = &sort_p->fn[x], *my = &sort_p->fn[y];
	switch (sort_key) {
	case 1: if (mx->incl != my->incl) return mx->incl < my->incl ? 1 : -1; break;
	case 2: if (mx->calls != my->calls) return mx->calls < my->calls ? 1 : -1; break;
	case 3: return strcmp(sort_ft->fns[x].name, sort_ft->fns[y].name);
	default: break;
	}
	if (mx->excl != my->excl)
		return mx->excl < my->excl ? 1 : -1;
	return strcmp(sort_ft->fns[x].name, sort_ft->fns[y].name);
}

static uint32_t sorted(const struct profile *p, const struct fn_table *ft, uint32_t **out)
{
	uint32_t *idx = malloc(sizeof *idx * p->nfn), n = 0;
	for (uint32_t i = 1; i < p->nfn; i++)
		if (p->fn[i].calls || p->fn[i].incl)
			idx[n++] = i;
	sort_p = p;
	sort_ft = ft;
	qsort(idx, n, sizeof *idx, cmp);
	*out = idx;
	return n;
}

static void emit_json(struct json *j, struct loaded *l, const struct profile *p, int limit)
{
	uint32_t *idx, n = sorted(p, &l->ft, &idx);
	json_double(j, "total_ns", rd_ns(l->r, p->total));
	json_arr_begin(j, "functions");
	for (uint32_t k = 0; k < n && (!limit || k < (uint32_t)limit); k++) {
		const struct fn_info *f = &l->ft.fns[idx[k]];
		const struct fn_metrics *m = &p->fn[idx[k]];
		json_obj_begin(j, NULL);
		json_str(j, "name", f->name);
		json_fn_identity(j, f);
		json_uint(j, "calls", m->calls);
		json_int(j, "exclusive_ns", (int64_t)(rd_ns(l->r, m->excl) + 0.5));
		json_int(j, "inclusive_ns", (int64_t)(rd_ns(l->r, m->incl) + 0.5));
		json_obj_end(j);
	}
	json_arr_end(j);
	free(idx);
}

static void emit_table(struct loaded *l, const struct profile *p, int limit)
{
	uint32_t *idx, n = sorted(p, &l->ft, &idx);
	int w = term_width();
	int namew = w - 78;
	if (namew < 20)
		namew = 20;
	double total = rd_ns(l->r, p->total);
	printf("%12s %11s %6s %11s %6s %11s  %-*s %s\n", "calls", "exclusive", "%", "inclusive", "%", "avg incl",
	       namew, "function", "location");
	for (uint32_t k = 0; k < n && (!limit || k < (uint32_t)limit); k++) {
		const struct fn_info *f = &l->ft.fns[idx[k]];
		const struct fn_metrics *m = &p->fn[idx[k]];
		char a[32], b[32], c[32], where[300];
		double ex = rd_ns(l->r, m->excl), in = rd_ns(l->r, m->incl);
		printf("%12llu %11s %5.1f%% %11s %5.1f%% %11s  %-*.*s %s\n", (unsigned long long)m->calls,
		       fmt_ns(ex, a, sizeof a), total > 0 ? 100 * ex / total : 0, fmt_ns(in, b, sizeof b),
		       total > 0 ? 100 * in / total : 0, fmt_ns(m->calls ? in / (double)m->calls : 0, c, sizeof c),
		       namew, namew, f->name, fn_where(f, where, sizeof where));
	}
	if (limit && n > (uint32_t)limit)
		printf("(%u more functions; --limit to show more)\n", n - limit);
	free(idx);
}

int cmd_report(struct cli_opts *o)
{
	int json = cli_want_json(o, "table json");
	if (o->argc)
		cli_die(EXIT_USAGE, "unexpected argument '%s' (see 'sonde report --help')", o->argv[0]);
	if (o->sort) {
		if (!strcmp(o->sort, "excl")) sort_key = 0;
		else if (!strcmp(o->sort, "incl")) sort_key = 1;
		else if (!strcmp(o->sort, "calls")) sort_key = 2;
		else if (!strcmp(o->sort, "name")) sort_key = 3;
		else cli_die(EXIT_USAGE, "invalid --sort '%s' (expected excl, incl, calls or name)", o->sort);
	}
	struct loaded l;
	struct profile p;
	load_profile(o, &l, &p);
	struct json j;
	if (json) {
		json_init(&j, stdout, 1);
		json_obj_begin(&j, NULL);
		emit_json(&j, &l, &p, o->limit);
		json_uint(&j, "lost_events", rd_lost_total(l.r, 0));
		json_uint(&j, "unnumbered_calls", rd_lost_total(l.r, 1) - rd_lost_total(l.r, 0));
	} else {
		emit_table(&l, &p, o->limit);
		uint64_t lost = rd_lost_total(l.r, 0);
		if (lost)
			printf("\nwarning: %llu events were lost (see 'sonde info')\n", (unsigned long long)lost);
	}
	if (o->threads) {
		if (json)
			json_arr_begin(&j, "threads");
		for (int i = 0; i < l.r->nthreads; i++) {
			const struct rd_thread *t = &l.r->threads[i];
			if (!t->nodes || (o->tid && t->r.tid != o->tid))
				continue;
			struct profile tp;
			profile_init(&tp, &l.ft);
			profile_add_thread(&tp, l.r, &l.ft, t);
			if (json) {
				json_obj_begin(&j, NULL);
				json_int(&j, "tid", t->r.tid);
				json_str(&j, "name", t->r.comm);
				emit_json(&j, &l, &tp, o->limit);
				json_obj_end(&j);
			} else {
				printf("\n== thread %d (%s) ==\n", t->r.tid, t->r.comm);
				emit_table(&l, &tp, o->limit);
			}
			profile_free(&tp);
		}
		if (json)
			json_arr_end(&j);
	}
	if (json) {
		json_obj_end(&j);
		json_end(&j);
	}
	profile_free(&p);
	load_free(&l);
	return 0;
}

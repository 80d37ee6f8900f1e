/* tree.c — `sonde tree`: the calling-context tree of each thread, indented. */
#include <stdlib.h>
#include <string.h>

#include "cli/load.h"
#include "common/json.h"

struct tctx {
	struct loaded *l;
	const struct rd_thread *t;
	struct cli_opts *o;
	double total;
	struct json *j;
	int64_t *cpu;   /* the thread's nodes' CPU ticks (NULL: not known) */
	int cpu_cols;   /* the table shows them (every selected thread has them) */
	int untimed;    /* a function counted only was shown (the note after the trees) */
	char indent[4200];
};

static int by_ticks(const void *a, const void *b, void *arg)
{
	const struct rec_node *n = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return n[x].ticks < n[y].ticks ? 1 : n[x].ticks > n[y].ticks ? -1 : 0;
}

static uint32_t children(const struct rd_thread *t, uint32_t v, uint32_t **out)
{
	uint32_t n = 0;
	for (uint32_t c = t->nodes[v].first_child; c; c = t->nodes[c].next_sibling)
		n++;
	uint32_t *k = malloc(sizeof *k * (n + 1));
	n = 0;
	for (uint32_t c = t->nodes[v].first_child; c; c = t->nodes[c].next_sibling)
		k[n++] = c;
	qsort_r(k, n, sizeof *k, by_ticks, (void *)t->nodes);
	*out = k;
	return n;
}

static void walk(struct tctx *x, uint32_t v, int depth)
{
	const struct rec_node *nd = &x->t->nodes[v];
	double incl = rd_ns(x->l->r, nd->ticks);
	uint64_t kids_ticks = 0;
	for (uint32_t c = nd->first_child; c; c = x->t->nodes[c].next_sibling)
		kids_ticks += x->t->nodes[c].ticks;
	const struct fn_info *f = &x->l->ft.fns[fn_of(&x->l->ft, x->l->r, nd->func)];
	if (x->j) {
		json_obj_begin(x->j, NULL);
		json_str(x->j, "name", f->name);
		json_uint(x->j, "calls", nd->calls);
		json_int(x->j, "inclusive_ns", (int64_t)(incl + 0.5));
		json_int(x->j, "exclusive_ns", (int64_t)(rd_ns(x->l->r, nd->ticks - kids_ticks) + 0.5));
		int64_t kids_cpu = 0;
		for (uint32_t c = nd->first_child; x->cpu && c; c = x->t->nodes[c].next_sibling)
			kids_cpu += x->cpu[c];
		json_cpu_ns(x->j, "inclusive_cpu_ns", x->cpu != NULL, x->cpu ? rd_ns(x->l->r, x->cpu[v]) : 0);
		json_cpu_ns(x->j, "exclusive_cpu_ns", x->cpu != NULL, x->cpu ? rd_ns(x->l->r, x->cpu[v] - kids_cpu) : 0);
		json_bool(x->j, "timed", !profile_node_counted(f, nd));
	} else if (profile_node_counted(f, nd)) { /* counted only (record --timing): its time is its caller's */
		x->untimed = 1;
		printf("%11s %6s %10llu  %s%s%s\n", "untimed", "-", (unsigned long long)nd->calls, x->cpu_cols ? "          -  " : "",
		       x->indent, f->name);
	} else {
		char a[32], c[32];
		printf("%11s %5.1f%% %10llu  ", fmt_ns(incl, a, sizeof a), x->total > 0 ? 100 * incl / x->total : 0,
		       (unsigned long long)nd->calls);
		if (x->cpu_cols)
			printf("%11s  ", x->cpu ? fmt_ns(rd_ns(x->l->r, x->cpu[v]), c, sizeof c) : "?");
		printf("%s%s\n", x->indent, f->name);
	}
	uint32_t *k;
	uint32_t n = children(x->t, v, &k);
	int shown = 0;
	if (!x->o->depth || depth < x->o->depth) {
		size_t il = strlen(x->indent);
		if (il + 2 < sizeof x->indent)
			strcat(x->indent, "  ");
		for (uint32_t i = 0; i < n; i++) {
			double ci = rd_ns(x->l->r, x->t->nodes[k[i]].ticks);
			if (x->total > 0 && 100 * ci / x->total < x->o->min_percent)
				continue;
			if (x->j && !shown++)
				json_arr_begin(x->j, "children");
			walk(x, k[i], depth + 1);
		}
		x->indent[il] = 0;
	}
	if (x->j) {
		if (shown)
			json_arr_end(x->j);
		json_obj_end(x->j);
	}
	free(k);
}

int cmd_tree(struct cli_opts *o)
{
	int json = cli_want_json(o, "table json");
	if (o->argc)
		cli_die(EXIT_USAGE, "unexpected argument '%s' (see 'sonde tree --help')", o->argv[0]);
	struct loaded l;
	struct profile p;
	load_profile(o, &l, &p);
	struct rd_select sel = load_select(o);
	struct json j;
	struct tctx x;
	memset(&x, 0, sizeof x);
	x.l = &l;
	x.o = o;
	x.cpu_cols = profile_cpu_known(&p);
	if (json) {
		json_init(&j, stdout, 1);
		json_obj_begin(&j, NULL);
		json_arr_begin(&j, "threads");
		x.j = &j;
	}
	for (int i = 0; i < l.r->nthreads; i++) {
		const struct rd_thread *t = &l.r->threads[i];
		if (!t->nodes || !rd_thread_selected(l.r, &sel, t))
			continue;
		x.t = t;
		x.cpu = profile_node_cpu(l.r, t);
		uint64_t tt = 0;
		for (uint32_t c = t->nodes[0].first_child; c; c = t->nodes[c].next_sibling)
			tt += t->nodes[c].ticks;
		x.total = rd_ns(l.r, tt);
		if (json) {
			json_obj_begin(&j, NULL);
			json_int(&j, "tid", t->r.tid);
			json_str(&j, "name", t->r.comm);
			json_arr_begin(&j, "roots");
		} else {
			char a[32];
			printf("== thread %d (%s), %s ==\n%11s %6s %10s  ", t->r.tid, t->r.comm, fmt_ns(x.total, a, sizeof a),
			       "inclusive", "%", "calls");
			if (x.cpu_cols)
				printf("%11s  ", "on cpu");
			printf("function\n");
		}
		uint32_t *k;
		uint32_t n = children(t, 0, &k);
		for (uint32_t c = 0; c < n; c++)
			walk(&x, k[c], 1);
		free(k);
		free(x.cpu);
		x.cpu = NULL;
		if (json) {
			json_arr_end(&j);
			json_obj_end(&j);
		} else {
			printf("\n");
		}
	}
	if (!json && x.untimed)
		printf("untimed: counted, not timed (record --timing): its time is in its callers' exclusive time; it is\n"
		       "counted in its stub or sled by number, without its calling context, so it is shown under the root\n");
	if (!json && !x.cpu_cols) {
		char why[256];
		printf("on-CPU / off-CPU time: %s\n", profile_cpu_why(&p, why, sizeof why));
	}
	if (json) {
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
	}
	profile_free(&p);
	load_free(&l);
	return 0;
}

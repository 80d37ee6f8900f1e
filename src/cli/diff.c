/* diff.c — `sonde diff BASE NEW`: what changed between two recordings, per
 * function (calls, exclusive and inclusive time) and per call path (calls
 * and inclusive time of each calling context), sorted by impact, with the
 * parts of those times on a CPU when both recordings split them (issue
 * 38).  Functions are matched as fnrows.h says; a call path is the list of
 * their keys from the outermost call. */
#include <stdlib.h>
#include <string.h>

#include "cli/fnrows.h"
#include "common/json.h"

#define DIFF_MAX_PATH_DEPTH 256 /* deeper contexts are compared at this depth */

static void die_oom(void)
{
	cli_die(EXIT_DATA, "out of memory");
}

/* Every calling context of the selected threads (those of the profile:
 * --tid, --pid, --comm), as a path of keys, with its inclusive time and the
 * part of it on a CPU (issue 38: the node's CPU ticks as the profile counts
 * them; 0 for a thread without the split, whose column is then not shown). */
static void paths_of(const struct fn_input *in, int k, struct fn_rows *s)
{
	const struct recording *r = in->l.r;
	struct rd_select sel = load_select(&in->o);
	for (int t = 0; t < r->nthreads; t++) {
		const struct rd_thread *th = &r->threads[t];
		if (!th->nodes || !rd_thread_selected(r, &sel, th))
			continue;
		uint32_t n = th->nnodes;
		uint32_t *depth = calloc(n ? n : 1, sizeof *depth);
		if (!depth)
			die_oom();
		int64_t *cpu = profile_node_cpu(r, th);
		/* Parents come before their children in a thread's node array
		 * (the reader checks every node is reached from the root). */
		for (uint32_t i = 1; i < n; i++) {
			const struct rec_node *nd = &th->nodes[i];
			depth[i] = nd->parent < i ? depth[nd->parent] + 1 : 1;
			if (depth[i] > DIFF_MAX_PATH_DEPTH || (!nd->calls && !nd->ticks))
				continue;
			uint32_t chain[DIFF_MAX_PATH_DEPTH], d = 0;
			size_t len = 1;
			for (uint32_t v = i; v && v < n && d < DIFF_MAX_PATH_DEPTH; v = th->nodes[v].parent) {
				uint32_t f = fn_of(&in->l.ft, r, th->nodes[v].func);
				chain[d++] = f;
				len += strlen(in->keys[f] ? in->keys[f] : "?") + 1;
				if (th->nodes[v].parent >= v)
					break;
			}
			char *key = malloc(len), *q = key;
			if (!key)
				die_oom();
			for (uint32_t j = d; j-- > 0;) {
				const char *kk = in->keys[chain[j]] ? in->keys[chain[j]] : "?";
				size_t l = strlen(kk);
				memcpy(q, kk, l);
				q += l;
				*q++ = j ? '\n' : 0;
			}
			struct fn_row *row = fnrows_add(s, key, &in->l.ft.fns[chain[0]]);
			row->calls[k] = nd->calls;
			row->incl[k] = rd_ns(r, (int64_t)(nd->ticks > (uint64_t)INT64_MAX ? INT64_MAX : nd->ticks));
			row->incl_cpu[k] = cpu ? rd_ns(r, cpu[i]) : 0;
		}
		free(cpu);
		free(depth);
	}
}

/* Join the sorted, folded sides into `out`: a row per key of either. */
static void join(struct fn_rows *a, struct fn_rows *b, struct fn_rows *out)
{
	size_t i = 0, j = 0;
	while (i < a->n || j < b->n) {
		int c = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->v[i].key, b->v[j].key);
		struct fn_row r;
		if (c < 0) {
			r = a->v[i++];
		} else if (c > 0) {
			r = b->v[j++];
		} else {
			r = a->v[i];
			r.calls[1] = b->v[j].calls[1];
			r.excl[1] = b->v[j].excl[1];
			r.incl[1] = b->v[j].incl[1];
			r.excl_cpu[1] = b->v[j].excl_cpu[1];
			r.incl_cpu[1] = b->v[j].incl_cpu[1];
			free(b->v[j].key);
			i++, j++;
		}
		*fnrows_add(out, r.key, r.fn) = r;
	}
	free(a->v);
	free(b->v);
}

static int by_excl_impact;

static double impact(const struct fn_row *r)
{
	double d = by_excl_impact ? r->excl[1] - r->excl[0] : r->incl[1] - r->incl[0];
	return d < 0 ? -d : d;
}

static int by_impact(const void *a, const void *b)
{
	const struct fn_row *x = a, *y = b;
	double ix = impact(x), iy = impact(y);
	if (ix != iy)
		return ix < iy ? 1 : -1;
	int64_t cx = (int64_t)(x->calls[1] - x->calls[0]), cy = (int64_t)(y->calls[1] - y->calls[0]);
	cx = cx < 0 ? -cx : cx;
	cy = cy < 0 ? -cy : cy;
	if (cx != cy)
		return cx < cy ? 1 : -1;
	return strcmp(x->key, y->key);
}

static int64_t ns(double v)
{
	return (int64_t)(v + (v < 0 ? -0.5 : 0.5));
}

/* Both recordings split their time into CPU and off-CPU (issue 38): the
 * functions' rows have their CPU columns. */
static int diff_cpu;

static void json_cpu3(struct json *j, const char *what, const double v[2])
{
	char k[64];
	snprintf(k, sizeof k, "%s_cpu_ns_base", what);
	json_cpu_ns(j, k, diff_cpu, v[0]);
	snprintf(k, sizeof k, "%s_cpu_ns_new", what);
	json_cpu_ns(j, k, diff_cpu, v[1]);
	snprintf(k, sizeof k, "%s_cpu_ns_delta", what);
	if (diff_cpu)
		json_int(j, k, ns(v[1]) - ns(v[0]));
	else
		json_null(j, k);
}

static void json_rows(struct json *j, const char *name, const struct fn_rows *s, int paths, int limit)
{
	json_arr_begin(j, name);
	for (size_t i = 0; i < s->n && (!limit || i < (size_t)limit); i++) {
		const struct fn_row *r = &s->v[i];
		json_obj_begin(j, NULL);
		if (paths) {
			json_arr_begin(j, "path");
			for (const char *p = r->key; p;) {
				const char *e = strchr(p, '\n'), *tab = strchr(p, '\t');
				char buf[1024];
				size_t l = (size_t)((tab && (!e || tab < e) ? tab : e ? e : p + strlen(p)) - p);
				snprintf(buf, sizeof buf, "%.*s", (int)(l < sizeof buf ? l : sizeof buf - 1), p);
				json_str(j, NULL, buf);
				p = e ? e + 1 : NULL;
			}
			json_arr_end(j);
		} else {
			json_str(j, "name", r->fn->name);
			const char *tab = strchr(r->key, '\t');
			json_str(j, "file", tab ? tab + 1 : NULL);
		}
		json_uint(j, "calls_base", r->calls[0]);
		json_uint(j, "calls_new", r->calls[1]);
		json_int(j, "calls_delta", (int64_t)(r->calls[1] - r->calls[0]));
		if (!paths) {
			json_int(j, "exclusive_ns_base", ns(r->excl[0]));
			json_int(j, "exclusive_ns_new", ns(r->excl[1]));
			json_int(j, "exclusive_ns_delta", ns(r->excl[1]) - ns(r->excl[0]));
		}
		json_int(j, "inclusive_ns_base", ns(r->incl[0]));
		json_int(j, "inclusive_ns_new", ns(r->incl[1]));
		json_int(j, "inclusive_ns_delta", ns(r->incl[1]) - ns(r->incl[0]));
		if (!paths)
			json_cpu3(j, "exclusive", r->excl_cpu);
		json_cpu3(j, "inclusive", r->incl_cpu);
		json_obj_end(j);
	}
	json_arr_end(j);
}

static const char *pct(double base, double now, char *buf, size_t n)
{
	if (base <= 0)
		snprintf(buf, n, now > 0 ? "new" : "");
	else
		snprintf(buf, n, "%+.1f%%", 100 * (now - base) / base);
	return buf;
}

/* The table's CPU column (both recordings split their time): the change
 * of the CPU time v, and its relative change. */
static void table_cpu_head(void)
{
	if (diff_cpu)
		printf("%11s %8s  ", "cpu delta", "");
}

static void table_cpu(const double v[2])
{
	char d[32], p[32];
	if (diff_cpu)
		printf("%11s %8s  ", fmt_ns_signed(v[1] - v[0], d, sizeof d), pct(v[0], v[1], p, sizeof p));
}

static void table_functions(const struct fn_rows *s, int limit)
{
	int namew = term_width() - (diff_cpu ? 112 : 92);
	if (namew < 20)
		namew = 20;
	printf("%12s %12s %11s %11s %11s %8s %11s %8s  ", "calls base", "calls new", "excl base", "excl new",
	       "excl delta", "", "incl delta", "");
	table_cpu_head();
	printf("%s\n", "function");
	for (size_t i = 0; i < s->n && (!limit || i < (size_t)limit); i++) {
		const struct fn_row *r = &s->v[i];
		char a[32], b[32], c[32], d[32], p1[32], p2[32];
		printf("%12llu %12llu %11s %11s %11s %8s %11s %8s  ", (unsigned long long)r->calls[0],
		       (unsigned long long)r->calls[1], fmt_ns(r->excl[0], a, sizeof a), fmt_ns(r->excl[1], b, sizeof b),
		       fmt_ns_signed(r->excl[1] - r->excl[0], c, sizeof c), pct(r->excl[0], r->excl[1], p1, sizeof p1),
		       fmt_ns_signed(r->incl[1] - r->incl[0], d, sizeof d), pct(r->incl[0], r->incl[1], p2, sizeof p2));
		table_cpu(r->excl_cpu); /* exclusive CPU time: what the function itself ran */
		printf("%.*s\n", namew, r->fn->name);
	}
	if (limit && s->n > (size_t)limit)
		printf("(%zu more functions; --limit to show more)\n", s->n - (size_t)limit);
}

static void table_paths(const struct fn_rows *s, int limit)
{
	printf("\n%12s %12s %11s %8s  ", "calls base", "calls new", "incl delta", "");
	table_cpu_head();
	printf("%s\n", "call path");
	for (size_t i = 0; i < s->n && (!limit || i < (size_t)limit); i++) {
		const struct fn_row *r = &s->v[i];
		char a[32], p[32];
		printf("%12llu %12llu %11s %8s  ", (unsigned long long)r->calls[0], (unsigned long long)r->calls[1],
		       fmt_ns_signed(r->incl[1] - r->incl[0], a, sizeof a), pct(r->incl[0], r->incl[1], p, sizeof p));
		table_cpu(r->incl_cpu); /* inclusive CPU time: the context's, its callees' included */
		for (const char *q = r->key; q;) {
			const char *e = strchr(q, '\n'), *tab = strchr(q, '\t');
			int l = (int)((tab && (!e || tab < e) ? tab : e ? e : q + strlen(q)) - q);
			printf("%s%.*s", q == r->key ? "" : " > ", l, q);
			q = e ? e + 1 : NULL;
		}
		putchar('\n');
	}
	if (limit && s->n > (size_t)limit)
		printf("(%zu more call paths; --limit to show more)\n", s->n - (size_t)limit);
}

int cmd_diff(struct cli_opts *o)
{
	int json = cli_want_json(o, "table json");
	if (o->argc != 2)
		cli_die(EXIT_USAGE, "expected two recordings: sonde diff BASE NEW (see 'sonde diff --help')");
	static struct fn_input in[2];
	for (int k = 0; k < 2; k++)
		fnrows_load(o, o->argv[k], &in[k]);
	struct fn_rows f[2] = { { 0 } }, p[2] = { { 0 } }, funcs = { 0 }, paths = { 0 };
	for (int k = 0; k < 2; k++) {
		fnrows_functions(&in[k], k, &f[k]);
		fnrows_fold(&f[k]);
		paths_of(&in[k], k, &p[k]);
		fnrows_fold(&p[k]);
	}
	diff_cpu = profile_cpu_known(&in[0].p) && profile_cpu_known(&in[1].p);
	join(&f[0], &f[1], &funcs);
	join(&p[0], &p[1], &paths);
	by_excl_impact = 1;
	qsort(funcs.v, funcs.n, sizeof *funcs.v, by_impact);
	by_excl_impact = 0;
	qsort(paths.v, paths.n, sizeof *paths.v, by_impact);
	int limit = o->limit ? o->limit : json ? 0 : 25;
	if (json) {
		struct json j;
		json_init(&j, stdout, 1);
		json_obj_begin(&j, NULL);
		json_str(&j, "base", o->argv[0]);
		json_str(&j, "new", o->argv[1]);
		json_double(&j, "total_ns_base", rd_ns(in[0].l.r, in[0].p.total));
		json_double(&j, "total_ns_new", rd_ns(in[1].l.r, in[1].p.total));
		char why[256];
		json_str(&j, "cpu_split_base", profile_cpu_why(&in[0].p, why, sizeof why));
		json_str(&j, "cpu_split_new", profile_cpu_why(&in[1].p, why, sizeof why));
		json_rows(&j, "functions", &funcs, 0, limit);
		json_rows(&j, "paths", &paths, 1, limit);
		json_obj_end(&j);
		json_end(&j);
	} else {
		char a[32], b[32];
		printf("base: %s (%s recorded)\nnew:  %s (%s recorded)\n\n", o->argv[0],
		       fmt_ns(rd_ns(in[0].l.r, in[0].p.total), a, sizeof a), o->argv[1],
		       fmt_ns(rd_ns(in[1].l.r, in[1].p.total), b, sizeof b));
		table_functions(&funcs, limit);
		table_paths(&paths, limit);
		if (!diff_cpu) {
			char w0[256], w1[256];
			printf("\non-CPU / off-CPU time: base %s; new %s\n", profile_cpu_why(&in[0].p, w0, sizeof w0),
			       profile_cpu_why(&in[1].p, w1, sizeof w1));
		}
	}
	fnrows_free(&funcs);
	fnrows_free(&paths);
	for (int k = 0; k < 2; k++)
		fnrows_free_input(&in[k]);
	return 0;
}

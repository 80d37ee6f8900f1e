/* report.c — `sonde report`: the flat profile, of one recording or added
 * up over several (-i A -i B ..., functions matched as fnrows.h says). */
#include <stdlib.h>
#include <string.h>

#include "cli/fnrows.h"
#include "cli/load.h"
#include "common/json.h"

static const struct profile *sort_p;
static int sort_key;  /* 0 excl, 1 incl, 2 calls, 3 name, 4 excl-cpu, 5 incl-cpu */
static const struct fn_table *sort_ft;

static int cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct fn_metrics *mx = &sort_p->fn[x], *my = &sort_p->fn[y];
	switch (sort_key) {
	case 1: if (mx->incl != my->incl) return mx->incl < my->incl ? 1 : -1; break;
	case 2: if (mx->calls != my->calls) return mx->calls < my->calls ? 1 : -1; break;
	case 3: return strcmp(sort_ft->fns[x].name, sort_ft->fns[y].name);
	case 4: if (mx->excl_cpu != my->excl_cpu) return mx->excl_cpu < my->excl_cpu ? 1 : -1; break;
	case 5: if (mx->incl_cpu != my->incl_cpu) return mx->incl_cpu < my->incl_cpu ? 1 : -1; break;
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

/* A row's times (ns): wall, and on a CPU when known (issue 38). */
struct row_times {
	double excl, incl, excl_cpu, incl_cpu;
	int cpu;
	double excl_run, incl_run; /* of the off-CPU time, runnable (preempted), when run */
	int run;
	uint64_t timed_calls;      /* the calls the times are of (fewer: a switched function, --timing=auto) */
};

static void times_json(struct json *j, const struct row_times *t)
{
	json_int(j, "exclusive_ns", (int64_t)(t->excl + 0.5));
	json_int(j, "inclusive_ns", (int64_t)(t->incl + 0.5));
	json_cpu_ns(j, "exclusive_cpu_ns", t->cpu, t->excl_cpu);
	json_cpu_ns(j, "inclusive_cpu_ns", t->cpu, t->incl_cpu);
	json_cpu_ns(j, "exclusive_runnable_ns", t->run, t->excl_run);
	json_cpu_ns(j, "inclusive_runnable_ns", t->run, t->incl_run);
}

/* One function's fields, of one recording or added up. */
static void row_fields(struct json *j, const struct fn_info *f, uint64_t calls, const struct row_times *t)
{
	json_str(j, "name", f->name);
	json_fn_identity(j, f);
	json_uint(j, "calls", calls);
	if (f->switched) /* --timing=auto timed it for part of the recording: its times are those calls' */
		json_uint(j, "timed_calls", t->timed_calls);
	times_json(j, t);
}

/* One function's row. */
static void row_json(struct json *j, const struct fn_info *f, uint64_t calls, const struct row_times *t)
{
	json_obj_begin(j, NULL);
	row_fields(j, f, calls, t);
	json_obj_end(j);
}

static struct row_times metric_times(const struct recording *r, const struct profile *p, const struct fn_metrics *m)
{
	return (struct row_times){ rd_ns(r, m->excl), rd_ns(r, m->incl), rd_ns(r, m->excl_cpu), rd_ns(r, m->incl_cpu),
	                           profile_cpu_known(p), rd_ns(r, m->excl_run), rd_ns(r, m->incl_run),
	                           profile_run_known(p), m->timed_calls };
}

/* The profile's CPU split at the top of a JSON report. */
static void split_json(struct json *j, const struct recording *r, const struct profile *p)
{
	char why[256];
	if (profile_cpu_known(p))
		json_double(j, "total_cpu_ns", rd_ns(r, p->total_cpu));
	else
		json_null(j, "total_cpu_ns");
	if (profile_run_known(p))
		json_double(j, "total_runnable_ns", rd_ns(r, p->total_run));
	else
		json_null(j, "total_runnable_ns");
	json_str(j, "cpu_split", profile_cpu_why(p, why, sizeof why));
}

/* cpu: the table has the CPU columns (every thread split its time); run:
 * and the runnable one (inclusive: how long the function's calls waited
 * for a CPU while they could run). */
static int table_header(int cpu, int run)
{
	int namew = term_width() - (cpu ? run ? 114 : 102 : 78);
	if (namew < 20)
		namew = 20;
	printf("%12s %11s %6s %11s %6s %11s  ", "calls", "exclusive", "%", "inclusive", "%", "avg incl");
	if (cpu)
		printf("%11s %11s  ", "excl cpu", "incl cpu");
	if (cpu && run)
		printf("%11s  ", "runnable");
	printf("%-*s %s\n", namew, "function", "location");
	return namew;
}

/* Whether a table showed a function counted, not timed, or one timed for
 * part of the recording (their note, untimed_note). */
static int shown_untimed, shown_switched;

static void row_table(const struct fn_info *f, uint64_t calls, const struct row_times *t, double total, int namew)
{
	char a[32], b[32], c[32], d[32], e[32], where[300];
	if (f->untimed || (f->switched && !t->timed_calls)) { /* counted only: no time of its own to show */
		shown_untimed = 1;
		printf("%12llu %11s %6s %11s %6s %11s  ", (unsigned long long)calls, "untimed", "-", "untimed", "-", "-");
		if (t->cpu)
			printf("%11s %11s  ", "-", "-");
		if (t->cpu && t->run)
			printf("%11s  ", "-");
		printf("%-*.*s %s\n", namew, namew, f->name, fn_where(f, where, sizeof where));
		return;
	}
	/* the average of the calls timed (--timing=auto: a switched function's, marked *) */
	int part = f->switched && t->timed_calls < calls;
	uint64_t per = part ? t->timed_calls : calls;
	shown_switched |= part;
	printf("%12llu %11s %5.1f%% %11s %5.1f%% %10s%s  ", (unsigned long long)calls, fmt_ns(t->excl, a, sizeof a),
	       total > 0 ? 100 * t->excl / total : 0, fmt_ns(t->incl, b, sizeof b), total > 0 ? 100 * t->incl / total : 0,
	       fmt_ns(per ? t->incl / (double)per : 0, c, sizeof c), part ? "*" : " ");
	if (t->cpu)
		printf("%11s %11s  ", fmt_ns(t->excl_cpu, d, sizeof d), fmt_ns(t->incl_cpu, e, sizeof e));
	if (t->cpu && t->run)
		printf("%11s  ", fmt_ns(t->incl_run, d, sizeof d));
	printf("%-*.*s %s\n", namew, namew, f->name, fn_where(f, where, sizeof where));
}

/* Under a table: the split said when it is not shown. */
static void split_note(const struct profile *p)
{
	char why[256];
	if (!profile_cpu_known(p))
		printf("on-CPU / off-CPU time: %s\n", profile_cpu_why(p, why, sizeof why));
}

static void untimed_note(void)
{
	if (shown_untimed)
		printf("untimed: counted, not timed (record --timing): its time is in its callers' exclusive time;\n"
		       "its callers are not recorded (it is counted in its stub or sled by number, without its context)\n");
	if (shown_switched)
		printf("*: timed for part of the recording (record --timing=auto switched it, sonde info lists when):\n"
		       "its times and average are those of its timed calls; the others' time is in their callers'\n");
}

/* Which processes called each function: (function, process) pairs sorted
 * by function, from one profile per process image of the selected threads. */
struct fn_proc {
	uint32_t fn;
	int proc; /* index into r->procs */
};

static int cmp_fn_proc(const void *a, const void *b)
{
	const struct fn_proc *x = a, *y = b;
	return x->fn != y->fn ? (x->fn < y->fn ? -1 : 1) : x->proc - y->proc;
}

static struct fn_proc *fn_procs(struct loaded *l, const struct rd_select *sel, const struct profile *whole, size_t *np)
{
	struct fn_proc *v = NULL;
	size_t n = 0, cap = 0;
	if (l->r->nprocs == 1) { /* one process: the whole profile is its (no second pass) */
		v = malloc(((size_t)whole->nfn + 1) * sizeof *v);
		if (!v)
			cli_die(EXIT_DATA, "out of memory");
		for (uint32_t f = 0; f < whole->nfn; f++)
			if (whole->fn[f].calls)
				v[n++] = (struct fn_proc){ f, 0 };
		*np = n;
		return v;
	}
	for (int i = 0; i < l->r->nprocs; i++) {
		struct profile pp;
		profile_init(&pp, &l->ft);
		for (int k = 0; k < l->r->nthreads; k++) {
			const struct rd_thread *t = &l->r->threads[k];
			if (t->nodes && t->r.proc == l->r->procs[i].index && rd_thread_selected(l->r, sel, t))
				profile_add_thread(&pp, l->r, &l->ft, t);
		}
		for (uint32_t f = 0; f < pp.nfn; f++) {
			if (!pp.fn[f].calls)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 1024;
				struct fn_proc *w = realloc(v, cap * sizeof *v);
				if (!w)
					cli_die(EXIT_DATA, "out of memory");
				v = w;
			}
			v[n++] = (struct fn_proc){ f, i };
		}
		profile_free(&pp);
	}
	if (n)
		qsort(v, n, sizeof *v, cmp_fn_proc);
	*np = n;
	return v;
}

/* The function's processes (their count) and programs (distinct), from fp. */
static void procs_json(struct json *j, const struct recording *r, const struct fn_proc *fp, size_t n, uint32_t fn)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (fp[mid].fn < fn)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t e = lo;
	while (e < n && fp[e].fn == fn)
		e++;
	json_uint(j, "processes", e - lo);
	json_arr_begin(j, "programs");
	for (size_t k = lo; k < e; k++) {
		const struct rec_process *p = &r->procs[fp[k].proc];
		int seen = 0;
		for (size_t q = lo; q < k && !seen; q++)
			seen = !strncmp(r->procs[fp[q].proc].exe, p->exe, sizeof p->exe);
		if (!seen) {
			char exe[sizeof p->exe];
			memcpy(exe, p->exe, sizeof exe);
			exe[sizeof exe - 1] = 0;
			json_str(j, NULL, exe);
		}
	}
	json_arr_end(j);
}

/* fp (NULL: none): the whole report's functions also say their processes and programs. */
static void emit_json_with(struct json *j, struct loaded *l, const struct profile *p, int limit,
                           const struct fn_proc *fp, size_t nfp)
{
	uint32_t *idx, n = sorted(p, &l->ft, &idx);
	json_double(j, "total_ns", rd_ns(l->r, p->total));
	split_json(j, l->r, p);
	json_arr_begin(j, "functions");
	for (uint32_t k = 0; k < n && (!limit || k < (uint32_t)limit); k++) {
		const struct fn_metrics *m = &p->fn[idx[k]];
		const struct fn_info *f = &l->ft.fns[idx[k]];
		struct row_times t = metric_times(l->r, p, m);
		if (!fp) {
			row_json(j, f, m->calls, &t);
			continue;
		}
		json_obj_begin(j, NULL);
		row_fields(j, f, m->calls, &t);
		procs_json(j, l->r, fp, nfp, idx[k]);
		json_obj_end(j);
	}
	json_arr_end(j);
	free(idx);
}

static void emit_json(struct json *j, struct loaded *l, const struct profile *p, int limit)
{
	emit_json_with(j, l, p, limit, NULL, 0);
}

static void emit_table(struct loaded *l, const struct profile *p, int limit)
{
	uint32_t *idx, n = sorted(p, &l->ft, &idx);
	int namew = table_header(profile_cpu_known(p), profile_run_known(p));
	double total = rd_ns(l->r, p->total);
	for (uint32_t k = 0; k < n && (!limit || k < (uint32_t)limit); k++) {
		const struct fn_metrics *m = &p->fn[idx[k]];
		struct row_times t = metric_times(l->r, p, m);
		row_table(&l->ft.fns[idx[k]], m->calls, &t, total, namew);
	}
	if (limit && n > (uint32_t)limit)
		printf("(%u more functions; --limit to show more)\n", n - limit);
	untimed_note();
	split_note(p);
	free(idx);
}

static int cmp_rows(const void *a, const void *b)
{
	const struct fn_row *x = a, *y = b;
	switch (sort_key) {
	case 1: if (x->incl[0] != y->incl[0]) return x->incl[0] < y->incl[0] ? 1 : -1; break;
	case 2: if (x->calls[0] != y->calls[0]) return x->calls[0] < y->calls[0] ? 1 : -1; break;
	case 3: return strcmp(x->key, y->key);
	case 4: if (x->excl_cpu[0] != y->excl_cpu[0]) return x->excl_cpu[0] < y->excl_cpu[0] ? 1 : -1; break;
	case 5: if (x->incl_cpu[0] != y->incl_cpu[0]) return x->incl_cpu[0] < y->incl_cpu[0] ? 1 : -1; break;
	default: break;
	}
	if (x->excl[0] != y->excl[0])
		return x->excl[0] < y->excl[0] ? 1 : -1;
	return strcmp(x->key, y->key);
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p ? p : "";
}

/* --processes: one section per process image (slot) with selected threads
 * that have a profile: its pid, parent and program, then its functions. */
static void emit_processes(const struct cli_opts *o, struct json *j, struct loaded *l,
                           const struct rd_select *sel)
{
	if (j)
		json_arr_begin(j, "processes");
	for (int i = 0; i < l->r->nprocs; i++) {
		const struct rec_process *pr = &l->r->procs[i];
		struct profile pp;
		profile_init(&pp, &l->ft);
		int any = 0;
		for (int k = 0; k < l->r->nthreads; k++) {
			const struct rd_thread *t = &l->r->threads[k];
			if (!t->nodes || t->r.proc != pr->index || !rd_thread_selected(l->r, sel, t))
				continue;
			profile_add_thread(&pp, l->r, &l->ft, t);
			any = 1;
		}
		if (any) {
			char exe[sizeof pr->exe];
			memcpy(exe, pr->exe, sizeof exe);
			exe[sizeof exe - 1] = 0;
			if (j) {
				json_obj_begin(j, NULL);
				json_int(j, "pid", pr->pid);
				json_int(j, "ppid", pr->ppid);
				json_uint(j, "exec_seq", pr->exec_seq);
				json_str(j, "program", exe);
				emit_json(j, l, &pp, o->limit);
				json_obj_end(j);
			} else {
				printf("\n== process %d (%s) ==\n", pr->pid, exe);
				emit_table(l, &pp, o->limit);
			}
		}
		profile_free(&pp);
	}
	if (j)
		json_arr_end(j);
}

/* `sonde report -i A -i B ...`: the recordings of one program added up. */
static int report_sum(struct cli_opts *o, int json)
{
	if (o->threads || o->processes || o->tid || o->sel_pid)
		cli_die(EXIT_USAGE, "--threads, --processes, --tid and --pid read one recording (thread and process ids differ between runs)");
	int n = o->ninputs;
	struct fn_input *in = calloc((size_t)n, sizeof *in);
	struct fn_rows rows = { 0 };
	if (!in)
		cli_die(EXIT_DATA, "out of memory");
	double total = 0, total_cpu = 0;
	uint64_t lost = 0, unnumbered = 0;
	int cpu = 1;
	for (int k = 0; k < n; k++) {
		fnrows_load(o, o->inputs[k], &in[k]);
		const char *p0 = rd_meta(in[0].l.r, "program"), *pk = rd_meta(in[k].l.r, "program");
		if (strcmp(base_name(p0), base_name(pk)))
			cli_die(EXIT_DATA, "%s records %s and %s records %s: report adds up recordings of one program "
			        "(to compare two, see 'sonde diff BASE NEW')", o->inputs[0], p0 ? p0 : "?", o->inputs[k],
			        pk ? pk : "?");
		fnrows_functions(&in[k], 0, &rows);
		total += rd_ns(in[k].l.r, in[k].p.total);
		total_cpu += rd_ns(in[k].l.r, in[k].p.total_cpu);
		cpu = cpu && profile_cpu_known(&in[k].p);
		lost += rd_lost_total(in[k].l.r, 0);
		unnumbered += rd_lost_total(in[k].l.r, 1) - rd_lost_total(in[k].l.r, 0);
	}
	fnrows_fold(&rows);
	if (rows.n)
		qsort(rows.v, rows.n, sizeof *rows.v, cmp_rows);
	size_t limit = o->limit ? (size_t)o->limit : rows.n;
	if (json) {
		struct json j;
		json_init(&j, stdout, 1);
		json_obj_begin(&j, NULL);
		json_arr_begin(&j, "inputs");
		for (int k = 0; k < n; k++)
			json_str(&j, NULL, o->inputs[k]);
		json_arr_end(&j);
		json_double(&j, "total_ns", total);
		if (cpu)
			json_double(&j, "total_cpu_ns", total_cpu);
		else
			json_null(&j, "total_cpu_ns");
		json_arr_begin(&j, "functions");
		for (size_t i = 0; i < rows.n && i < limit; i++) {
			const struct fn_row *r = &rows.v[i];
			struct row_times t = { r->excl[0], r->incl[0], r->excl_cpu[0], r->incl_cpu[0], cpu, 0, 0, 0, r->timed_calls[0] };
			row_json(&j, r->fn, r->calls[0], &t);
		}
		json_arr_end(&j);
		json_uint(&j, "lost_events", lost);
		json_uint(&j, "unnumbered_calls", unnumbered);
		json_obj_end(&j);
		json_end(&j);
	} else {
		char t[32];
		printf("%d recordings of %s added up (%s recorded)\n\n", n, base_name(rd_meta(in[0].l.r, "program")),
		       fmt_ns(total, t, sizeof t));
		int namew = table_header(cpu, 0);
		for (size_t i = 0; i < rows.n && i < limit; i++) {
			const struct fn_row *r = &rows.v[i];
			struct row_times t = { r->excl[0], r->incl[0], r->excl_cpu[0], r->incl_cpu[0], cpu, 0, 0, 0, r->timed_calls[0] };
			row_table(r->fn, r->calls[0], &t, total, namew);
		}
		if (limit < rows.n)
			printf("(%zu more functions; --limit to show more)\n", rows.n - limit);
		untimed_note();
		if (lost)
			printf("\nwarning: %llu events were lost (see 'sonde info' of each recording)\n",
			       (unsigned long long)lost);
	}
	fnrows_free(&rows);
	for (int k = 0; k < n; k++)
		fnrows_free_input(&in[k]);
	free(in);
	return 0;
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
		else if (!strcmp(o->sort, "excl-cpu")) sort_key = 4;
		else if (!strcmp(o->sort, "incl-cpu")) sort_key = 5;
		else cli_die(EXIT_USAGE, "invalid --sort '%s' (expected excl, incl, calls, name, excl-cpu or incl-cpu)", o->sort);
	}
	if (o->syscalls)
		return report_syscalls(o, json);
	if (o->ninputs > 1)
		return report_sum(o, json);
	struct loaded l;
	struct profile p;
	load_profile(o, &l, &p);
	struct rd_select sel = load_select(o);
	struct json j;
	if (json) {
		json_init(&j, stdout, 1);
		json_obj_begin(&j, NULL);
		size_t nfp = 0;
		struct fn_proc *fp = fn_procs(&l, &sel, &p, &nfp);
		emit_json_with(&j, &l, &p, o->limit, fp ? fp : (struct fn_proc[1]){ { 0, 0 } }, nfp);
		free(fp);
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
			if (!t->nodes || !rd_thread_selected(l.r, &sel, t))
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
	if (o->processes)
		emit_processes(o, json ? &j : NULL, &l, &sel);
	if (json) {
		json_obj_end(&j);
		json_end(&j);
	}
	profile_free(&p);
	load_free(&l);
	return 0;
}

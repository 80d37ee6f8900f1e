/* callers.c — `sonde callers-callees FUNC`: the Oracle-style attributed view. */
#include <stdlib.h>
#include <string.h>

#include "cli/load.h"
#include "common/json.h"

struct row { uint32_t fn; uint64_t calls; int64_t attr, attr_cpu; };

static int by_attr(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->attr != y->attr)
		return x->attr < y->attr ? 1 : -1;
	return x->fn < y->fn ? -1 : x->fn > y->fn;
}

static int collect(const struct profile *p, uint32_t f, int callers, struct row **out)
{
	struct row *rows = malloc(sizeof *rows * (p->npairs + 1));
	int n = 0;
	for (uint32_t i = 0; i < p->npairs; i++) {
		const struct pair_metrics *pm = &p->pairs[i];
		if (callers && pm->callee == f)
			rows[n++] = (struct row){ pm->caller, pm->calls, pm->attr_in, pm->attr_in_cpu };
		else if (!callers && pm->caller == f)
			rows[n++] = (struct row){ pm->callee, pm->calls, pm->attr_out, pm->attr_out_cpu };
	}
	qsort(rows, n, sizeof *rows, by_attr);
	*out = rows;
	return n;
}

int cmd_callers(struct cli_opts *o)
{
	int json = cli_want_json(o, "table json");
	if (o->argc != 1)
		cli_die(EXIT_USAGE, "expected one function name (usage: sonde callers-callees [options] FUNC)");
	struct loaded l;
	struct profile p;
	load_profile(o, &l, &p);
	uint32_t f = load_function(&l, o->argv[0]);
	struct row *callers, *callees;
	int nc = collect(&p, f, 1, &callers), ne = collect(&p, f, 0, &callees);
	if (o->limit) {
		if (nc > o->limit) nc = o->limit;
		if (ne > o->limit) ne = o->limit;
	}
	const struct fn_metrics *m = &p.fn[f];
	const struct fn_info *fi = &l.ft.fns[f];
	int cpu = profile_cpu_known(&p);
	if (json) {
		struct json j;
		json_init(&j, stdout, 1);
		json_obj_begin(&j, NULL);
		json_obj_begin(&j, "function");
		json_str(&j, "name", fi->name);
		json_fn_identity(&j, fi);
		json_uint(&j, "calls", m->calls);
		json_int(&j, "exclusive_ns", (int64_t)(rd_ns(l.r, m->excl) + 0.5));
		json_int(&j, "inclusive_ns", (int64_t)(rd_ns(l.r, m->incl) + 0.5));
		json_cpu_ns(&j, "exclusive_cpu_ns", cpu, rd_ns(l.r, m->excl_cpu));
		json_cpu_ns(&j, "inclusive_cpu_ns", cpu, rd_ns(l.r, m->incl_cpu));
		json_obj_end(&j);
		char why[256];
		json_str(&j, "cpu_split", profile_cpu_why(&p, why, sizeof why));
		/* false: counted only (record --timing), in its stub without its context: "callers" is <root> */
		json_bool(&j, "callers_recorded", !fi->untimed);
		if (fi->switched) /* timed for part of the recording: the callers are those of its timed calls */
			json_uint(&j, "callers_recorded_calls", m->timed_calls);
		for (int pass = 0; pass < 2; pass++) {
			struct row *rows = pass ? callees : callers;
			json_arr_begin(&j, pass ? "callees" : "callers");
			for (int i = 0; i < (pass ? ne : nc); i++) {
				json_obj_begin(&j, NULL);
				json_str(&j, "name", l.ft.fns[rows[i].fn].name);
				json_fn_identity(&j, &l.ft.fns[rows[i].fn]);
				json_uint(&j, "calls", rows[i].calls);
				json_int(&j, "attributed_ns", (int64_t)(rd_ns(l.r, rows[i].attr) + 0.5));
				json_cpu_ns(&j, "attributed_cpu_ns", cpu, rd_ns(l.r, rows[i].attr_cpu));
				json_obj_end(&j);
			}
			json_arr_end(&j);
		}
		json_obj_end(&j);
		json_end(&j);
	} else {
		double incl = rd_ns(l.r, m->incl);
		char a[32], c[32], w[300], why[256];
		/* cpu: the attributed time's part on a CPU beside it */
#define CPU_COL(v) (cpu ? fmt_ns(rd_ns(l.r, v), c, sizeof c) : "")
		printf("%12s %11s %6s %11s  %s\n", "calls", "attributed", "%", cpu ? "on cpu" : "", "function");
		for (int i = 0; i < nc; i++) {
			double v = rd_ns(l.r, callers[i].attr);
			printf("%12llu %11s %5.1f%% %11s    %s\n", (unsigned long long)callers[i].calls, fmt_ns(v, a, sizeof a),
			       incl > 0 ? 100 * v / incl : 0, CPU_COL(callers[i].attr_cpu), l.ft.fns[callers[i].fn].name);
		}
		printf("%12llu %11s %5.1f%% %11s  * %s  (%s)   [inclusive %s]\n", (unsigned long long)m->calls,
		       fmt_ns(rd_ns(l.r, m->excl), a, sizeof a),
		       incl > 0 ? 100 * rd_ns(l.r, m->excl) / incl : 0, CPU_COL(m->excl_cpu), fi->name,
		       fn_where(fi, w, sizeof w), fmt_ns(incl, (char[32]){ 0 }, 32));
		for (int i = 0; i < ne; i++) {
			double v = rd_ns(l.r, callees[i].attr);
			printf("%12llu %11s %5.1f%% %11s    %s\n", (unsigned long long)callees[i].calls, fmt_ns(v, a, sizeof a),
			       incl > 0 ? 100 * v / incl : 0, CPU_COL(callees[i].attr_cpu), l.ft.fns[callees[i].fn].name);
		}
#undef CPU_COL
		printf("\n(callers above the * line, callees below; the * line is the function's exclusive time;\n"
		       " attributed times follow the innermost-activation rule: callers sum to the inclusive time,\n"
		       " exclusive + callees sum to the inclusive time%s)\n",
		       cpu ? "; \"on cpu\": the part of each\n that the thread ran on a CPU, the rest it waited" : "");
		if (!cpu)
			printf("on-CPU / off-CPU time: %s\n", profile_cpu_why(&p, why, sizeof why));
		if (fi->untimed)
			printf("%s is counted, not timed (record --timing): counted in its stub or sled by number, without its\n"
			       "calling context, so its callers are not recorded (<root>); --timed %s records them\n",
			       fi->name, fi->name);
		else if (fi->switched && m->timed_calls < m->calls)
			printf("%s was timed for part of the recording (record --timing=auto switched it): the callers\n"
			       "above are its %llu timed calls' own; its %llu counted calls are under <root>\n", fi->name,
			       (unsigned long long)m->timed_calls, (unsigned long long)(m->calls - m->timed_calls));
	}
	free(callers);
	free(callees);
	profile_free(&p);
	load_free(&l);
	return 0;
}

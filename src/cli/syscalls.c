/* syscalls.c (cli) — `sonde report --syscalls`: the system calls of a
 * `record --syscalls` recording, per calling function and per process. */
#include <stdio.h>

#include "analysis/syscalls.h"
#include "cli/cli.h"
#include "cli/load.h"
#include "common/json.h"

static void row_json(struct json *j, const struct sca_row *r)
{
	json_str(j, "syscall", sca_call_name(r->call));
	json_uint(j, "count", r->count);
	json_int(j, "ns", (int64_t)(r->ns + 0.5));
	json_uint(j, "bytes", r->bytes);
	json_uint(j, "errors", r->errors);
}

int report_syscalls(struct cli_opts *o, int json)
{
	if (o->ninputs > 1 || o->threads || o->processes || o->tid || o->sel_pid)
		cli_die(EXIT_USAGE, "report --syscalls reads one recording, all its threads");
	struct loaded l;
	load_or_die(o, &l);
	struct sca a;
	char err[512];
	if (sca_load(l.r, &l.ft, &a, err, sizeof err) != 0)
		cli_die(EXIT_DATA, "%s", err);
	if (!a.present)
		cli_die(EXIT_DATA, "%s was recorded without --syscalls (sonde record --syscalls -- PROGRAM)", l.r->dir);
	size_t limit = o->limit ? (size_t)o->limit : a.nfn;
	if (json) {
		struct json j;
		json_init(&j, stdout, 1);
		json_obj_begin(&j, NULL);
		json_arr_begin(&j, "functions");
		for (size_t i = 0; i < a.nfn && i < limit; i++) {
			const struct sca_row *r = &a.by_fn[i];
			json_obj_begin(&j, NULL);
			if (r->fn == FN_ROOT)
				json_null(&j, "name");
			else
				json_str(&j, "name", l.ft.fns[r->fn].name);
			if (r->fn != FN_ROOT)
				json_fn_identity(&j, &l.ft.fns[r->fn]);
			row_json(&j, r);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_arr_begin(&j, "processes");
		for (uint32_t i = 0; i < a.nproc; i++) {
			json_obj_begin(&j, NULL);
			json_int(&j, "pid", a.by_proc[i].pid);
			row_json(&j, &a.by_proc[i]);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_uint(&j, "lost_syscalls", a.lost);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("%10s %11s %11s %12s %7s  %-16s %s\n", "calls", "time", "avg", "bytes", "errors", "syscall", "function");
		for (size_t i = 0; i < a.nfn && i < limit; i++) {
			const struct sca_row *r = &a.by_fn[i];
			char t[32], v[32];
			printf("%10llu %11s %11s %12llu %7llu  %-16s %s\n", (unsigned long long)r->count,
			       fmt_ns(r->ns, t, sizeof t), fmt_ns(r->count ? r->ns / (double)r->count : 0, v, sizeof v),
			       (unsigned long long)r->bytes, (unsigned long long)r->errors, sca_call_name(r->call),
			       r->fn == FN_ROOT ? "(no recorded function)" : l.ft.fns[r->fn].name);
		}
		if (limit < a.nfn)
			printf("(%zu more rows; --limit to show more)\n", a.nfn - limit);
		if (a.lost)
			printf("\nwarning: %llu system calls were not counted (the runtime's table was full)\n",
			       (unsigned long long)a.lost);
	}
	sca_free(&a);
	load_free(&l);
	return 0;
}

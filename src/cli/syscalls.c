/* syscalls.c (cli) — `sonde report --syscalls`: the system calls of a
 * `record --syscalls` recording, per calling function and per process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/syscalls.h"
#include "cli/cli.h"
#include "cli/load.h"
#include "common/json.h"
#include "common/sys_session.h"

static void row_json(struct json *j, const struct sca_row *r)
{
	json_str(j, "syscall", sca_call_name(r->call));
	json_uint(j, "count", r->count);
	if (sys_call_timed(r->call))
		json_int(j, "ns", (int64_t)(r->ns + 0.5));
	else /* futex: counted from the kernel's exit events, not timed */
		json_null(j, "ns");
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
		/* futex: "counted", or why not (an older recording: absent) */
		const char *fx = rd_meta(l.r, "syscalls_futex");
		if (fx)
			json_str(&j, "futex", fx);
		else
			json_null(&j, "futex");
		const char *fl = rd_meta(l.r, "syscalls_futex_lost");
		json_uint(&j, "lost_futex", fl ? strtoull(fl, NULL, 10) : 0);
		json_obj_end(&j);
		json_end(&j);
	} else {
		printf("%10s %11s %11s %12s %7s  %-16s %s\n", "calls", "time", "avg", "bytes", "errors", "syscall", "function");
		for (size_t i = 0; i < a.nfn && i < limit; i++) {
			const struct sca_row *r = &a.by_fn[i];
			char t[32], v[32];
			int timed = sys_call_timed(r->call);
			printf("%10llu %11s %11s %12llu %7llu  %-16s %s\n", (unsigned long long)r->count,
			       timed ? fmt_ns(r->ns, t, sizeof t) : "-",
			       timed ? fmt_ns(r->count ? r->ns / (double)r->count : 0, v, sizeof v) : "-",
			       (unsigned long long)r->bytes, (unsigned long long)r->errors, sca_call_name(r->call),
			       r->fn == FN_ROOT ? "(no recorded function)" : l.ft.fns[r->fn].name);
		}
		if (limit < a.nfn)
			printf("(%zu more rows; --limit to show more)\n", a.nfn - limit);
		if (a.lost)
			printf("\nwarning: %llu system calls were not counted (the runtime's table was full)\n",
			       (unsigned long long)a.lost);
		const char *fx = rd_meta(l.r, "syscalls_futex"), *fl = rd_meta(l.r, "syscalls_futex_lost"),
		           *fr = rd_meta(l.r, "syscalls_futex_refused");
		if (fx && strcmp(fx, "counted") != 0)
			printf("\nfutex calls were not counted: %s\n", fx);
		else if (fx)
			printf("\nfutex: counted from the kernel's exit events (not timed: a waiting futex is its function's "
			       "off-CPU time)\n");
		if (fl && strcmp(fl, "0") != 0)
			printf("warning: %s futex calls were lost (the thread's event ring was full)\n", fl);
		if (fr && strcmp(fr, "0") != 0)
			printf("warning: the kernel refused the futex event of %s threads: their futex calls are not counted\n",
			       fr);
	}
	sca_free(&a);
	load_free(&l);
	return 0;
}

/* load.c — shared loading steps of the reporting commands. */
#include "cli/load.h"

#include "common/json.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/trace_cct.h"
#include "cli/progress.h"
#include "record/record.h"

struct recording *load_open_or_die(const char *dir)
{
	char err[8192];
	int rc = recover_recording(dir, err, sizeof err);
	if (rc < 0 || rc == RECOVER_BUSY)
		cli_die(EXIT_DATA, "%s", err);
	if (rc == RECOVER_DONE)
		cli_warn("%s", err);
	struct recording *r = rd_open(dir, err, sizeof err);
	if (!r)
		cli_die(EXIT_DATA, "%s", err);
	return r;
}

void load_or_die(struct cli_opts *o, struct loaded *l)
{
	l->r = load_open_or_die(o->input);
	progress_attach(l->r, o->input);
	fn_table_build(l->r, &l->ft);
}

void load_trees(struct loaded *l)
{
	if (!(l->r->mode & REC_MODE_PROFILE) && (l->r->mode & REC_MODE_TRACE) && l->r->has_events) {
		/* A --trace recording: its calling-context trees come from the timeline. */
		char err[1024];
		struct tr_stats st;
		if (trace_cct_build(l->r, NULL, &st, err, sizeof err) != 0)
			cli_warn("%s (the profile holds what could be read)", err);
	}
}

void load_trees_in_range(struct cli_opts *o, struct loaded *l)
{
	if (!l->r->has_events || !(l->r->mode & REC_MODE_TRACE))
		cli_die(EXIT_USAGE, "--time-range needs a recording made with --trace (a profile holds no times)");
	/* a trace with its trees (--timing=auto): the range's come from the timeline */
	rd_drop_trees(l->r);
	struct tr_filter f;
	tr_filter_init(&f, l->r, NULL, 1, o->time_from, o->time_to);
	struct tr_stats st;
	char err[1024];
	if (trace_cct_build(l->r, &f, &st, err, sizeof err) != 0)
		cli_warn("%s (the output holds what could be read)", err);
	for (int i = 0; i < l->r->nthreads; i++)
		if (l->r->threads[i].ncounted) {
			cli_warn("the calls of the functions counted, not timed (record --timing) have no times: "
			         "--time-range leaves them out");
			break;
		}
}

struct rd_select load_select(const struct cli_opts *o)
{
	return (struct rd_select){ o->tid, o->sel_pid, o->sel_comm };
}

void load_require_profile(struct cli_opts *o, struct loaded *l)
{
	int any = 0, matched = 0;
	struct rd_select sel = load_select(o);
	for (int i = 0; i < l->r->nthreads; i++) {
		const struct rd_thread *t = &l->r->threads[i];
		if (!rd_thread_selected(l->r, &sel, t))
			continue;
		matched = 1;
		if (t->nodes)
			any = 1;
	}
	if (o->tid && !matched && !o->sel_pid && !o->sel_comm)
		cli_die(EXIT_USAGE, "no thread %d in %s (see 'sonde info --threads')", o->tid, o->input);
	if (!matched && o->sel_comm)
		cli_die(EXIT_USAGE, "no thread of a process running '%s'%s in %s (see 'sonde info')", o->sel_comm,
		        o->sel_pid || o->tid ? " with that --pid/--tid" : "", o->input);
	if (!matched && o->sel_pid)
		cli_die(EXIT_USAGE, "no process %d%s in %s (see 'sonde info')", o->sel_pid, o->tid ? " with that --tid" : "",
		        o->input);
	if (!any && (l->r->mode & REC_MODE_PROBES))
		cli_die(EXIT_DATA, "%s holds dynamic-probe hits (sonde probe --record), not a function profile; "
		        "see them with 'sonde info -i %s' and 'sonde export -i %s --format=perfetto' (or chrome)",
		        o->input, o->input, o->input);
	if (!any && !(l->r->mode & REC_MODE_PROFILE))
		cli_die(EXIT_DATA, "%s holds no function profile (it was recorded with --trace or --locks only; "
		        "use 'sonde replay' / 'sonde locks')", o->input);
}

void load_profile(struct cli_opts *o, struct loaded *l, struct profile *p)
{
	load_or_die(o, l);
	load_trees(l);
	load_require_profile(o, l);
	profile_init(p, &l->ft);
	struct rd_select sel = load_select(o);
	for (int i = 0; i < l->r->nthreads; i++) {
		const struct rd_thread *t = &l->r->threads[i];
		if (rd_thread_selected(l->r, &sel, t))
			profile_add_thread(p, l->r, &l->ft, t);
	}
}

void load_free(struct loaded *l)
{
	fn_table_free(&l->ft);
	rd_close(l->r);
}

void json_cpu_ns(struct json *j, const char *key, int known, double ns)
{
	if (known)
		json_int(j, key, (int64_t)(ns + 0.5));
	else
		json_null(j, key);
}

const char *fn_where(const struct fn_info *f, char *buf, int len)
{
	if (f->file && f->line) {
		const char *b = strrchr(f->file, '/');
		snprintf(buf, len, "%s:%d", b ? b + 1 : f->file, f->line);
	} else {
		snprintf(buf, len, "%s", fn_module_base(f));
	}
	return buf;
}

uint32_t load_function(struct loaded *l, const char *name)
{
	uint32_t idx[16];
	int n = fn_find(&l->ft, name, idx, 16);
	if (n == 1)
		return idx[0];
	if (n == 0)
		cli_die(EXIT_USAGE, "no function '%s' in this recording (see 'sonde report' for the functions)", name);
	fprintf(stderr, "sonde: error: '%s' is ambiguous (%d functions match); name one as NAME@FILE or by "
	        "address; candidates:\n", name, n);
	for (int i = 0; i < n && i < 16; i++) {
		char w[256];
		const struct fn_info *f = &l->ft.fns[idx[i]];
		const char *b = f->file ? strrchr(f->file, '/') : NULL;
		fprintf(stderr, "  %s@%s  (%s, %s, 0x%llx)\n", f->name, b ? b + 1 : f->file ? f->file : fn_module_base(f),
		        fn_where(f, w, sizeof w), fn_module_base(f), (unsigned long long)f->vaddr);
	}
	if (n > 16)
		fprintf(stderr, "  ... and %d more\n", n - 16);
	exit(EXIT_USAGE);
}

void json_fn_identity(struct json *j, const struct fn_info *f)
{
	char a[32];
	snprintf(a, sizeof a, "0x%llx", (unsigned long long)f->vaddr);
	json_str(j, "module", f->module);
	json_str(j, "file", f->file);
	json_int(j, "line", f->line);
	json_str(j, "address", f->vaddr ? a : NULL);
	json_bool(j, "timed", !f->untimed); /* false: counted only (record --timing), its time in its callers' */
	if (f->switched) /* timed for part of the recording (--timing=auto switched it) */
		json_bool(j, "switched", 1);
}

/* output.c — the results of a probe session: a human summary table and the
 * JSON document {"probes": [{"id", "spec", "kind", "hits", ...}]}. */
#include "probe/output.h"

#include "common/json.h"
#include "probe/engine.h"
#include "probe/kind.h"
#include "probe/probe.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

const char *fmt_time(uint64_t ns, char *buf, int len)
{
	double v = (double)ns;
	if (v < 1e3)
		snprintf(buf, (size_t)len, "%.0f ns", v);
	else if (v < 1e6)
		snprintf(buf, (size_t)len, "%.2f us", v / 1e3);
	else if (v < 1e9)
		snprintf(buf, (size_t)len, "%.2f ms", v / 1e6);
	else
		snprintf(buf, (size_t)len, "%.3f s", v / 1e9);
	return buf;
}

static void target_state(struct engine *e, char *buf, size_t n)
{
	if (!e->t.gone)
		snprintf(buf, n, e->detached ? "detached (still running)" : "running");
	else if (e->t.status_unknown)
		snprintf(buf, n, "ended (its exit status went to its parent, not to sonde)");
	else if (WIFEXITED(e->t.status))
		snprintf(buf, n, "exited with status %d", WEXITSTATUS(e->t.status));
	else if (WIFSIGNALED(e->t.status))
		snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(e->t.status), strsignal(WTERMSIG(e->t.status)));
	else
		snprintf(buf, n, "gone");
}

void output_table(struct engine *e, FILE *f)
{
	char st[128], d[32];
	target_state(e, st, sizeof st);
	uint64_t end = e->end_ns ? e->end_ns : now_ns();
	if (e->scope && e->t.pid <= 0)
		fprintf(f, "sonde probe: %s, probed for %s\n", e->scope, fmt_time(end - e->start_ns, d, sizeof d));
	else
		fprintf(f, "sonde probe: %s%sprocess %d, %s, probed for %s\n", e->scope ? e->scope : "",
		        e->scope ? "; " : "", (int)e->t.pid, st, fmt_time(end - e->start_ns, d, sizeof d));
	fprintf(f, "%4s  %-6s  %10s  %-30s  %s\n", "id", "kind", "hits", "spec", "details");
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		fprintf(f, "%4d  %-6s  %10llu  %-30s  ", p->id, p->ops->name, (unsigned long long)p->hits, p->spec);
		if (p->ops->table)
			p->ops->table(p, f);
		if (p->where)
			fprintf(f, "%s[%s]", p->ops->table ? "  " : "", p->where);
		if (p->error)
			fprintf(f, "  REMOVED: %s", p->error);
		else if (p->ended)
			fprintf(f, "  (until %s)", !strcmp(p->ended, "exec") ? "the program's exec" : "its library was unloaded");
		else if (p->removed)
			fprintf(f, "  (deleted)");
		else if (p->disabled)
			fprintf(f, "  (disabled)");
		fputc('\n', f);
		if (p->ops->table_after)
			p->ops->table_after(p, f);
	}
}

void output_json(struct engine *e, FILE *f)
{
	struct json j;
	char st[128];
	json_init(&j, f, 1);
	json_obj_begin(&j, NULL);
	json_obj_begin(&j, "target");
	json_int(&j, "pid", e->t.pid);
	json_bool(&j, "launched", e->t.launched);
	json_str(&j, "engine", e->engine_name ? e->engine_name : "ptrace");
	if (e->scope)
		json_str(&j, "scope", e->scope);
	target_state(e, st, sizeof st);
	json_str(&j, "state", st);
	if (e->t.gone && e->t.status_unknown)
		; /* said by state */
	else if (e->t.gone && WIFEXITED(e->t.status))
		json_int(&j, "exit_status", WEXITSTATUS(e->t.status));
	else if (e->t.gone && WIFSIGNALED(e->t.status))
		json_int(&j, "signal", WTERMSIG(e->t.status));
	uint64_t end = e->end_ns ? e->end_ns : now_ns();
	json_uint(&j, "probed_ns", end - e->start_ns);
	if (e->engine_name && !strcmp(e->engine_name, "remote")) {
		json_uint(&j, "emulated_hits", e->emulated_hits);
		json_uint(&j, "stepped_hits", e->stepped_hits);
	}
	json_obj_end(&j);
	json_arr_begin(&j, "probes");
	for (int i = 0; i < e->nprobes; i++) {
		struct probe *p = e->probes[i];
		json_obj_begin(&j, NULL);
		json_int(&j, "id", p->id);
		json_str(&j, "spec", p->spec);
		json_str(&j, "kind", p->ops->name);
		json_uint(&j, "hits", p->hits);
		json_str(&j, "where", p->where);
		json_str(&j, "state", p->error ? "failed" : p->ended ? p->ended : p->removed ? "deleted" : p->pending ? "pending"
		                      : p->disabled ? "disabled" : "active");
		if (p->error)
			json_str(&j, "error", p->error);
		if (p->in_target) {
			json_int(&j, "counted_in_target", p->in_target);
			json_bool(&j, "counts_complete", !p->in_target_incomplete);
		}
		if (p->ops->json)
			p->ops->json(p, &j);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	json_end(&j);
}

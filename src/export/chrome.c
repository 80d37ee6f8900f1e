/* chrome.c — Chrome trace-event JSON ("X" complete events, one per call),
 * opened by chrome://tracing, ui.perfetto.dev and speedscope.  Streams: one
 * event is written as each slice ends; memory does not grow with the trace.
 * Every thread is its own track (pid, tid) named after its thread name;
 * forked children are their own processes. */
#include <inttypes.h>
#include <string.h>

#include "data/trace.h"
#include "export/export.h"
#include "common/json.h"

struct chrome {
	struct export_ctx *x;
	int first;
};

static int64_t pid_of(const struct recording *r, const struct rd_thread *t)
{
	const struct rec_process *p = rd_proc(r, t->r.proc);
	return p ? p->pid : 0;
}

static double us(const struct recording *r, uint64_t ticks)
{
	return ticks >= r->start_ticks ? rd_ns(r, ticks - r->start_ticks) / 1e3 : -rd_ns(r, r->start_ticks - ticks) / 1e3;
}

static void sep(struct chrome *c)
{
	fputs(c->first ? "\n" : ",\n", c->x->out);
	c->first = 0;
}

static void on_end(void *arg, const struct tr_slice *s)
{
	struct chrome *c = arg;
	struct export_ctx *x = c->x;
	const struct rd_thread *t = &x->r->threads[s->thread];
	sep(c);
	fputs("{\"ph\":\"X\",\"name\":", x->out);
	json_write_string(x->out, x->ft->fns[fn_of(x->ft, x->r, s->func)].name);
	double b = us(x->r, s->start), e = us(x->r, s->end);
	fprintf(x->out, ",\"cat\":\"func\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%" PRId64 ",\"tid\":%d", b, e - b,
	        pid_of(x->r, t), t->r.tid);
	if (s->flags)
		fprintf(x->out, ",\"args\":{\"end\":\"%s\"}",
		        s->flags & TRS_ABNORMAL ? "non-local exit" : s->flags & TRS_AT_END ? "closed at thread end"
		                                                                              : "closed at lost events");
	fputc('}', x->out);
}

static int write_chrome(struct export_ctx *x)
{
	const struct recording *r = x->r;
	struct chrome c = { x, 1 };
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", x->out);
	/* Process and thread names. */
	for (int i = 0; i < r->nprocs; i++) {
		const struct rec_process *p = &r->procs[i];
		const char *b = strrchr(p->exe, '/');
		sep(&c);
		fprintf(x->out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":", p->pid);
		json_write_string(x->out, b ? b + 1 : p->exe);
		fputs("}}", x->out);
	}
	for (int i = 0; i < r->nthreads; i++) {
		const struct rd_thread *t = &r->threads[i];
		if (x->tid && t->r.tid != x->tid)
			continue;
		sep(&c);
		fprintf(x->out, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId64 ",\"tid\":%d,\"args\":{\"name\":",
		        pid_of(r, t), t->r.tid);
		json_write_string(x->out, t->r.comm[0] ? t->r.comm : "thread");
		fputs("}}", x->out);
		sep(&c);
		fprintf(x->out,
		        "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%" PRId64 ",\"tid\":%d,\"args\":{\"sort_index\":%d}}",
		        pid_of(r, t), t->r.tid, i);
	}
	struct tr_filter f;
	tr_filter_init(&f, r, x->tid, x->has_range, x->from_s, x->to_s);
	struct tr_ops ops = { NULL, on_end, NULL };
	struct tr_stats st;
	int rc = tr_decode(r, &f, &ops, &c, &st, x->err, sizeof x->err);
	fprintf(x->out, "\n],\"otherData\":{\"calls\":%" PRIu64 ",\"lost_events\":%" PRIu64 ",\"sequence_gaps\":%" PRIu64
	        ",\"closed_at_end\":%" PRIu64 "}}\n",
	        st.calls, st.lost, st.gaps, st.closed_at_end);
	if (ferror(x->out)) {
		snprintf(x->err, sizeof x->err, "write error");
		return -1;
	}
	return rc;
}

const struct export_ops export_chrome = {
	"chrome", "Chrome trace-event JSON, one slice per call (chrome://tracing, Perfetto, speedscope)", 1,
	write_chrome,
};

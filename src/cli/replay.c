/* replay.c — `sonde replay`: the timeline as indented text, like uftrace
 * replay: a call with no recorded child on one line with its duration, a
 * call with children as "name() {" ... "} + comment naming it".  Streams the events
 * file (bounded memory).  Lines of one thread are in time order; threads
 * are interleaved in the order their events were collected, each line
 * tagged with its thread id.  --format=json: one object per call. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/load.h"
#include "common/json.h"
#include "data/events.h"
#include "sym/sym.h"

struct pend {
	int has;
	struct tr_slice s;
};

struct rp {
	struct loaded *l;
	struct pend *pend;   /* per thread: a begin not printed yet */
	int json;
	struct json j;
};

static const char *name_of(struct rp *p, uint32_t func)
{
	return p->l->ft.fns[fn_of(&p->l->ft, p->l->r, func)].name;
}

static double ms_at(struct rp *p, uint64_t t)
{
	const struct recording *r = p->l->r;
	return t > r->start_ticks ? rd_ns(r, t - r->start_ticks) / 1e6 : 0;
}

static void line(struct rp *p, uint64_t at, const char *dur, uint32_t th, uint32_t depth, const char *fmt,
                 const char *name, const char *note)
{
	printf("%12.6f %10s [%7d] | %*s", ms_at(p, at), dur, p->l->r->threads[th].r.tid, (int)(depth - 1) * 2, "");
	printf(fmt, name);
	if (note)
		printf(" /* %s */", note);
	putchar('\n');
}

static void flush_pending(struct rp *p, uint32_t th)
{
	struct pend *q = &p->pend[th];
	if (!q->has)
		return;
	q->has = 0;
	const char *name = name_of(p, q->s.func);
	line(p, q->s.start, "", th, q->s.depth, sym_param_list(name) ? "%s {" : "%s() {", name, NULL);
}

static void on_begin(void *arg, const struct tr_slice *s)
{
	struct rp *p = arg;
	if (p->json)
		return;
	flush_pending(p, s->thread);
	p->pend[s->thread].has = 1;
	p->pend[s->thread].s = *s;
}

static const char *note_of(uint32_t flags)
{
	return !flags ? NULL : flags & TRS_ABNORMAL ? "non-local exit" : flags & TRS_AT_END ? "closed at thread end"
	                                                                                   : "closed at lost events";
}

static void on_end(void *arg, const struct tr_slice *s)
{
	struct rp *p = arg;
	const char *name = name_of(p, s->func);
	double ns = rd_ns(p->l->r, s->end - s->start);
	if (p->json) {
		json_obj_begin(&p->j, NULL);
		json_int(&p->j, "tid", p->l->r->threads[s->thread].r.tid);
		json_str(&p->j, "name", name);
		json_uint(&p->j, "depth", s->depth);
		json_double(&p->j, "start_ns", ms_at(p, s->start) * 1e6);
		json_double(&p->j, "duration_ns", ns);
		if (s->flags)
			json_str(&p->j, "end", note_of(s->flags));
		json_obj_end(&p->j);
		return;
	}
	char d[32];
	fmt_ns(ns, d, sizeof d);
	struct pend *q = &p->pend[s->thread];
	if (q->has && q->s.start == s->start && q->s.depth == s->depth) {
		q->has = 0;
		line(p, s->start, d, s->thread, s->depth, sym_param_list(name) ? "%s;" : "%s();", name,
		     note_of(s->flags));
		return;
	}
	flush_pending(p, s->thread);
	char note[300];
	snprintf(note, sizeof note, "%s%s%s", name, s->flags ? ": " : "", s->flags ? note_of(s->flags) : "");
	line(p, s->end, d, s->thread, s->depth, "}%s", "", note);
}

int cmd_replay(struct cli_opts *o)
{
	if (o->argc)
		cli_die(EXIT_USAGE, "unexpected argument '%s' (see 'sonde replay --help')", o->argv[0]);
	int json = cli_want_json(o, "table json");
	struct loaded l;
	load_or_die(o, &l);
	if (!l.r->has_events)
		cli_die(EXIT_DATA, "%s holds no timeline (record it with 'sonde record --trace')", o->input);
	if (o->tid) {
		int found = 0;
		for (int i = 0; i < l.r->nthreads; i++)
			found |= l.r->threads[i].r.tid == o->tid;
		if (!found)
			cli_die(EXIT_USAGE, "no thread %d in %s (see 'sonde info --threads')", o->tid, o->input);
	}
	struct rp p = { &l, calloc(l.r->nthreads + 1, sizeof(struct pend)), json, { 0 } };
	if (json) {
		json_init(&p.j, stdout, 0);
		json_obj_begin(&p.j, NULL);
		json_arr_begin(&p.j, "calls");
	} else {
		printf("# %10s %10s [%7s] | %s\n", "TIME(ms)", "DURATION", "TID", "FUNCTION");
	}
	struct tr_filter f;
	tr_filter_init(&f, l.r, o->tid, o->has_time_range, o->time_from, o->time_to);
	const struct rd_event_ops ops = { .call = on_begin, .ret = on_end };
	struct tr_stats st;
	char err[1024];
	int rc = rd_each_event(l.r, &f, &ops, &p, &st, err, sizeof err);
	if (json) {
		json_arr_end(&p.j);
		json_uint(&p.j, "lost_events", st.lost);
		json_uint(&p.j, "sequence_gaps", st.gaps);
		json_obj_end(&p.j);
		json_end(&p.j);
	} else if (st.lost || st.gaps || st.closed_at_end) {
		printf("# %" PRIu64 " calls; %" PRIu64 " closed at their thread's end; %" PRIu64 " events lost; %" PRIu64
		       " chunks missing\n", st.calls, st.closed_at_end, st.lost, st.gaps);
	}
	free(p.pend);
	load_free(&l);
	if (rc)
		cli_die(EXIT_DATA, "%s", err);
	return 0;
}

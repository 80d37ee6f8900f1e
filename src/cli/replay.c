/* replay.c — `sonde replay`: the timeline as indented text, like uftrace
 * replay: a call with no recorded child on one line with its duration, a
 * call with children as "name() {" ... "} + comment naming it".  Streams the events
 * file (bounded memory).  Lines of one thread are in time order; threads
 * are interleaved in the order their events were collected, each line
 * tagged with its thread id.  Lock operations (--locks=events, --locks
 * --trace) and probe hits (sonde probe --record) are lines of their
 * thread's timeline too, at their time, indented under the call they
 * happened in.  --format=json: one object per call in "calls", then the
 * lock operations in "locks" and the probe hits in "probes" (a second pass
 * over the events, made only when the first one met any). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/locks.h"
#include "cli/load.h"
#include "common/json.h"
#include "common/lock_enc.h"
#include "common/trace_enc.h"
#include "data/events.h"
#include "sym/sym.h"

struct pend {
	int has;
	struct tr_slice s;
};

struct rp {
	struct loaded *l;
	struct pend *pend;   /* per thread: a begin not printed yet */
	uint32_t *depth;     /* per thread: calls open */
	int json;
	struct json j;
	struct lka locks;    /* lock names, when the recording has locks */
	int locks_loaded;    /* lka_load succeeded: lka_free at the end */
	int have_locks;      /* ... and lock_by_id is there */
	uint32_t *lock_by_id; /* indices into locks.locks, sorted by id */
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
	p->depth[s->thread] = s->depth;
	if (p->json)
		return;
	flush_pending(p, s->thread);
	p->pend[s->thread].has = 1;
	p->pend[s->thread].s = *s;
}

/* How a slice ended, if not by its return; a resumed frame (TRS_RESUMED:
 * begun before this recording or this process, or a coroutine's frame
 * resumed) says so too. */
static const char *note_of(uint32_t flags)
{
	if (flags & TRS_RESUMED)
		return flags & TRS_AT_END ? "begun before this slice, closed at thread end"
		                          : "begun before this slice";
	return !flags ? NULL : flags & TRS_ABNORMAL ? "non-local exit" : flags & TRS_AT_END ? "closed at thread end"
	                                                                                   : "closed at lost events";
}

static void on_end(void *arg, const struct tr_slice *s)
{
	struct rp *p = arg;
	p->depth[s->thread] = s->depth - 1;
	const char *name = name_of(p, s->func);
	double ns = rd_ns(p->l->r, s->end - s->start);
	if (p->json) {
		json_obj_begin(&p->j, NULL);
		json_int(&p->j, "tid", p->l->r->threads[s->thread].r.tid);
		json_str(&p->j, "name", name);
		json_uint(&p->j, "depth", s->depth);
		json_double(&p->j, "start_ns", ms_at(p, s->start) * 1e6);
		json_double(&p->j, "duration_ns", ns);
		if (s->flags & ~(uint32_t)TRS_RESUMED)
			json_str(&p->j, "end", note_of(s->flags & ~(uint32_t)TRS_RESUMED));
		if (s->flags & TRS_RESUMED)
			json_bool(&p->j, "resumed", 1);
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

static const struct rp *sort_rp;

static int by_lock_id(const void *a, const void *b)
{
	uint32_t x = sort_rp->locks.locks[*(const uint32_t *)a].rec.id, y = sort_rp->locks.locks[*(const uint32_t *)b].rec.id;
	return x < y ? -1 : x > y;
}

static const char *lock_name(struct rp *p, uint32_t id, const char **kind, char *buf, size_t n)
{
	*kind = "lock";
	size_t lo = 0, hi = p->have_locks ? (size_t)p->locks.nlocks : 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct lka_lock *k = &p->locks.locks[p->lock_by_id[mid]];
		if (k->rec.id == id) {
			*kind = k->kind;
			return k->name;
		}
		if (k->rec.id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	snprintf(buf, n, "lock %u", id);
	return buf;
}

/* The operation of a lock event, and what its aux ticks are ("waited", "held" or NULL). */
static const char *lock_op(uint32_t op, const char **aux)
{
	*aux = NULL;
	switch (op & LK_EV_OP_MASK) {
	case LK_EV_ACQ: return op & LK_EVF_READ ? "acquire_read" : "acquire";
	case LK_EV_ACQ_WAIT: *aux = "waited"; return op & LK_EVF_READ ? "acquire_read" : "acquire";
	case LK_EV_REL: *aux = "held"; return "release";
	case LK_EV_TRYFAIL: return "trylock_failed";
	case LK_EV_TIMEOUT: *aux = "waited"; return "timeout";
	case LK_EV_COND: *aux = "waited"; return op & LK_EVF_TIMEOUT ? "cond_wait_timeout" : "cond_wait";
	case LK_EV_ERROR: return "error";
	default: return "unknown";
	}
}

static void on_lock(void *arg, const struct rd_lock_event *e)
{
	struct rp *p = arg;
	char buf[32], text[600], a[32];
	const char *kind, *aux, *name = lock_name(p, e->lock, &kind, buf, sizeof buf), *op = lock_op(e->op, &aux);
	double ns = rd_ns(p->l->r, (int64_t)(e->aux > (uint64_t)INT64_MAX ? INT64_MAX : e->aux));
	if (p->json) {
		json_obj_begin(&p->j, NULL);
		json_int(&p->j, "tid", p->l->r->threads[e->thread].r.tid);
		json_str(&p->j, "lock", name);
		json_str(&p->j, "kind", kind);
		json_str(&p->j, "op", op);
		json_double(&p->j, "time_ns", ms_at(p, e->time) * 1e6);
		if (aux && !strcmp(aux, "held"))
			json_double(&p->j, "held_ns", ns);
		else if (aux)
			json_double(&p->j, "waited_ns", ns);
		json_obj_end(&p->j);
		return;
	}
	flush_pending(p, e->thread);
	if (aux && ((e->op & LK_EV_OP_MASK) != LK_EV_REL || !(e->op & (LK_EVF_NESTED | LK_EVF_UNMATCHED))))
		snprintf(text, sizeof text, "[%s] %s %s (%s %s)", kind, op, name, aux, fmt_ns(ns, a, sizeof a));
	else
		snprintf(text, sizeof text, "[%s] %s %s", kind, op, name);
	line(p, e->time, "", e->thread, p->depth[e->thread] + 1, "%s", text, NULL);
}

static void on_probe(void *arg, const struct tr_probe *h)
{
	struct rp *p = arg;
	char nb[32], val[96] = "", text[700], d[32];
	const char *name = tr_probe_name(p->l->r, h->probe, nb, sizeof nb);
	const char *ev = h->event == TRP_BEGIN ? "begin" : h->event == TRP_END ? "end" : "hit";
	switch (h->vkind) {
	case TRV_INT: snprintf(val, sizeof val, "%" PRId64, h->i); break;
	case TRV_FLOAT: snprintf(val, sizeof val, "%.17g", h->f); break;
	case TRV_STR: snprintf(val, sizeof val, "%.*s", (int)(h->slen < 80 ? h->slen : 80), h->s); break;
	default: break;
	}
	double dur = h->event == TRP_END ? rd_ns(p->l->r, (int64_t)(h->time - h->start)) : 0;
	if (p->json) {
		json_obj_begin(&p->j, NULL);
		json_int(&p->j, "tid", p->l->r->threads[h->thread].r.tid);
		json_str(&p->j, "probe", name);
		json_str(&p->j, "event", ev);
		json_double(&p->j, "time_ns", ms_at(p, h->time) * 1e6);
		if (h->event == TRP_END)
			json_double(&p->j, "duration_ns", dur);
		if (h->vkind == TRV_INT)
			json_int(&p->j, "value", h->i);
		else if (h->vkind == TRV_FLOAT)
			json_double(&p->j, "value", h->f);
		else if (h->vkind == TRV_STR)
			json_str(&p->j, "value", val);
		json_obj_end(&p->j);
		return;
	}
	flush_pending(p, h->thread);
	snprintf(text, sizeof text, "[probe] %s%s%s%s%s", name, h->event == TRP_HIT ? "" : " ",
	         h->event == TRP_HIT ? "" : ev, *val ? " = " : "", val);
	line(p, h->time, h->event == TRP_END ? fmt_ns(dur, d, sizeof d) : "", h->thread, p->depth[h->thread] + 1, "%s",
	     text, NULL);
}

/* The functions counted, not timed (record --timing), which have no
 * calls in the timeline: per selected thread, their calls over the whole
 * recording ("counted" in the JSON; a "# counted" line each in the table),
 * none within a --time-range (their calls have no times). */
static void counted(struct rp *p, const struct rd_select *sel, int range)
{
	const struct recording *r = p->l->r;
	for (int i = 0; !range && i < r->nthreads; i++) {
		const struct rd_thread *t = &r->threads[i];
		if (!t->ncounted || !rd_thread_selected(r, sel, t))
			continue;
		for (uint32_t k = 0; k < t->ncounted; k++) {
			const char *name = name_of(p, t->counted[k].func);
			if (p->json) {
				json_obj_begin(&p->j, NULL);
				json_int(&p->j, "tid", t->r.tid);
				json_str(&p->j, "name", name);
				json_uint(&p->j, "calls", t->counted[k].calls);
				json_obj_end(&p->j);
			} else {
				printf("# [%7d] %s: %" PRIu64 " calls counted, not timed (record --timing: no slices)\n", t->r.tid,
				       name, t->counted[k].calls);
			}
		}
	}
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
	struct rp p;
	memset(&p, 0, sizeof p);
	p.l = &l;
	p.pend = calloc(l.r->nthreads + 1, sizeof(struct pend));
	p.depth = calloc(l.r->nthreads + 1, sizeof *p.depth);
	p.json = json;
	if (!p.pend || !p.depth)
		cli_die(EXIT_DATA, "out of memory");
	if (l.r->mode & (REC_MODE_LOCKS | REC_MODE_LOCK_EVENTS)) {
		char lerr[1024];
		if (lka_load(l.r, &p.locks, lerr, sizeof lerr) != 0)
			cli_warn("%s (locks are shown by id)", lerr);
		else if ((p.locks_loaded = 1) && (p.lock_by_id = malloc(sizeof *p.lock_by_id * ((size_t)p.locks.nlocks + 1)))) {
			p.have_locks = 1;
			for (int i = 0; i < p.locks.nlocks; i++)
				p.lock_by_id[i] = (uint32_t)i;
			sort_rp = &p;
			qsort(p.lock_by_id, (size_t)p.locks.nlocks, sizeof *p.lock_by_id, by_lock_id);
		}
	}
	if (json) {
		json_init(&p.j, stdout, 0);
		json_obj_begin(&p.j, NULL);
		json_arr_begin(&p.j, "calls");
	} else {
		printf("# %10s %10s [%7s] | %s\n", "TIME(ms)", "DURATION", "TID", "FUNCTION");
	}
	struct tr_filter f;
	struct rd_select sel = { o->tid, 0, NULL };
	tr_filter_init(&f, l.r, &sel, o->has_time_range, o->time_from, o->time_to);
	/* The table has everything in one pass; the JSON has the calls first. */
	const struct rd_event_ops ops = { .call = on_begin, .ret = on_end, .lock = json ? NULL : on_lock,
	                                   .probe = json ? NULL : on_probe };
	struct tr_stats st;
	char err[1024];
	int rc = rd_each_event(l.r, &f, &ops, &p, &st, err, sizeof err);
	if (json) {
		json_arr_end(&p.j);
		struct tr_stats st2;
		char err2[1024];
		const struct rd_event_ops lops = { .lock = on_lock }, pops = { .probe = on_probe };
		json_arr_begin(&p.j, "locks");
		if (!rc && st.lock_events)
			rd_each_event(l.r, &f, &lops, &p, &st2, err2, sizeof err2);
		json_arr_end(&p.j);
		json_arr_begin(&p.j, "probes");
		if (!rc && st.probe_hits)
			rd_each_event(l.r, &f, &pops, &p, &st2, err2, sizeof err2);
		json_arr_end(&p.j);
		json_arr_begin(&p.j, "counted");
		counted(&p, &sel, o->has_time_range);
		json_arr_end(&p.j);
		json_uint(&p.j, "lost_events", st.lost);
		json_uint(&p.j, "sequence_gaps", st.gaps);
		json_obj_end(&p.j);
		json_end(&p.j);
	} else {
		if (st.lost || st.gaps || st.closed_at_end)
			printf("# %" PRIu64 " calls; %" PRIu64 " closed at their thread's end; %" PRIu64 " events lost; %" PRIu64
			       " chunks missing\n", st.calls, st.closed_at_end, st.lost, st.gaps);
		counted(&p, &sel, o->has_time_range);
	}
	free(p.pend);
	free(p.depth);
	free(p.lock_by_id);
	if (p.locks_loaded)
		lka_free(&p.locks);
	load_free(&l);
	if (rc)
		cli_die(EXIT_DATA, "%s", err);
	return 0;
}

/* chrome.c — Chrome trace-event JSON ("X" complete events, one per call),
 * opened by chrome://tracing, ui.perfetto.dev and speedscope.  Streams: one
 * event is written as each slice ends; memory does not grow with the trace.
 * Every thread is its own track (pid, tid) named after its thread name;
 * forked children are their own processes.
 *
 * Lock waits and holds (--locks --trace, see lock_slices.h) are "X" slices
 * too (cat "lock"), on "TID locks" tracks placed right after their thread's
 * track (thread_sort_index).  The JSON format has no child tracks, so a lock
 * lane is a track of its own with a synthetic tid: the real tid + (lane + 1)
 * * 2^22, above every Linux tid (PID_MAX_LIMIT is 2^22), so it never
 * collides with a real thread; its args carry the real tid.
 *
 * Thread states (a trace with the threads' waits, thread_states.h): "X"
 * slices "running", "runnable", "blocked" (cat "sched", args: cpu, tid) on
 * a "TID state" track right after the thread's, of synthetic tid the real
 * tid + (LKS_MAX_LANES + 1) * 2^22.  System calls (record --syscalls
 * --trace): "X" slices "sys_NAME" (cat "syscall", args: result) on the
 * thread's own track, inside the call that made them. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/syscalls.h"
#include "data/events.h"
#include "export/bulk_out.h"
#include "export/export.h"
#include "export/lock_slices.h"
#include "export/thread_states.h"
#include "export/tick_ns.h"
#include "common/json.h"
#include "common/trace_enc.h"

#define CH_NAME_MAX 8192 /* longer names are written through stdio */
#define CH_PAD 64        /* slice heads up to this long are copied with one fixed-size memcpy */

struct chrome {
	struct export_ctx *x;
	int first;
	struct lks *lks;
	struct tstates *tst;
	/* The call slices, the bulk of the file, are built in place in the
	 * output's buffer (bulk_out.h); everything else is printed to f, which
	 * appends to the same buffer.  With a slice's head (its name JSON-
	 * escaped) made once per function and the ,"pid":P,"tid":T of each
	 * thread made once, a slice is two fixed-size memcpys and two numbers. */
	struct bulk_out *bo;
	FILE *f;
	char **names;         /* by function index: its slice head (slice_head), made at its first slice (NULL: not yet) */
	uint32_t *nlen;
	char (*ids)[48];      /* by thread index */
	uint8_t *idlen;
	struct tick_ns tn;
};

#define LOCK_TID_STEP 4194304 /* PID_MAX_LIMIT: no Linux tid reaches it */
#define SORT_STEP (LKS_MAX_LANES + 2) /* a thread's track, its state track, then its lock lanes */
#define STATE_LANE LKS_MAX_LANES        /* the state track's synthetic tid: as a lock lane's, past them */

static int64_t pid_of(const struct recording *r, const struct rd_thread *t)
{
	const struct rec_process *p = rd_proc(r, t->r.proc);
	return p ? p->pid : 0;
}

static double us(const struct recording *r, uint64_t ticks)
{
	return ticks >= r->start_ticks ? rd_ns(r, ticks - r->start_ticks) / 1e3 : -rd_ns(r, r->start_ticks - ticks) / 1e3;
}

/* ns of d ticks; larger than NS_MAX (damaged times): 0, as put_us did. */
static uint64_t tick_ns(const struct tick_ns *t, uint64_t d)
{
	uint64_t v = tick_ns_of(t, d);
	return v != UINT64_MAX ? v : 0;
}

/* Copy a string literal to p; the end. */
#define PUT_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                     "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                     "8081828384858687888990919293949596979899";

static const uint64_t pow10_u64[20] = {
	1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull, 1000000000ull,
	10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull, 100000000000000ull,
	1000000000000000ull, 10000000000000000ull, 100000000000000000ull, 1000000000000000000ull,
	10000000000000000000ull,
};

/* v in decimal, written in place from its last digit, two digits per
 * step (a multiplication each: the hot part of the export). */
static char *put_u64(char *p, uint64_t v)
{
	uint64_t w = v | 1; /* as many digits as v, and 1 for 0 */
	unsigned t = (unsigned)(64 - __builtin_clzll(w)) * 1233 >> 12; /* ~log10 */
	unsigned n = t + (w >= pow10_u64[t]);                          /* digits */
	char *e = p + n;
	while (v >= 100) {
		uint64_t q = v / 100;
		e -= 2;
		memcpy(e, digit_pairs + 2 * (v - q * 100), 2);
		v = q;
	}
	if (v >= 10)
		memcpy(e - 2, digit_pairs + 2 * v, 2);
	else
		e[-1] = (char)('0' + v);
	return p + n;
}

/* ns as microseconds with 3 decimals ("%.3f" of ns / 1e3), without printf:
 * printf's float formatting took 60% of the export. */
static inline __attribute__((always_inline)) char *put_us(char *p, uint64_t ns)
{
	uint64_t q = ns / 1000;
	unsigned f = (unsigned)(ns - q * 1000), h = f * 41 >> 12; /* f / 100 for f < 1000 */
	p = put_u64(p, q);
	p[0] = '.';
	p[1] = (char)('0' + h);
	memcpy(p + 2, digit_pairs + 2 * (f - h * 100), 2);
	return p + 4;
}

/* The ns from ticks a to ticks b as put_us (negative when b < a). */
static inline __attribute__((always_inline)) char *put_span_us(char *p, const struct tick_ns *t, uint64_t a, uint64_t b)
{
	if (__builtin_expect(b >= a, 1))
		return put_us(p, tick_ns(t, b - a));
	uint64_t ns = tick_ns(t, a - b);
	if (ns)
		*p++ = '-';
	return put_us(p, ns);
}

static void sep(struct chrome *c)
{
	fputs(c->first ? "\n" : ",\n", c->f);
	c->first = 0;
}

/* The start of function fn's slices, ,\n{"ph":"X","name":NAME,"cat":"func","ts":
 * with NAME JSON-escaped, made once, followed by CH_PAD bytes of slack so
 * that a short one is copied with one fixed-size memcpy; NULL if it cannot
 * be (out of memory, or longer than CH_NAME_MAX). */
static const char *slice_head(struct chrome *c, uint32_t fn, uint32_t *len)
{
	if (c->names[fn]) {
		*len = c->nlen[fn];
		return c->names[fn];
	}
	const char *name = c->x->ft->fns[fn].name;
	if (strlen(name) > CH_NAME_MAX / 8)
		return NULL;
	char *buf = NULL, *padded;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	if (!m)
		return NULL;
	fputs(",\n{\"ph\":\"X\",\"name\":", m);
	json_write_string(m, name);
	fputs(",\"cat\":\"func\",\"ts\":", m);
	if (fclose(m) || !buf || n > CH_NAME_MAX || !(padded = realloc(buf, n + CH_PAD))) {
		free(buf);
		return NULL;
	}
	c->names[fn] = padded;
	c->nlen[fn] = (uint32_t)n;
	*len = (uint32_t)n;
	return padded;
}

static void on_end(void *arg, const struct tr_slice *s)
{
	struct chrome *c = arg;
	struct export_ctx *x = c->x;
	uint32_t fn = fn_of(x->ft, x->r, s->func), hlen;
	const char *head = slice_head(c, fn, &hlen);
	char *p = bo_room(c->bo); /* BO_ROOM_MAX: more than CH_NAME_MAX + 512 */
	if (__builtin_expect(c->first || !head, 0)) {
		if (head) {
			memcpy(p, head + 1, hlen - 1);
			p += hlen - 1;
		} else { /* a name too long to keep */
			p = c->first ? PUT_LIT(p, "\n{\"ph\":\"X\",\"name\":") : PUT_LIT(p, ",\n{\"ph\":\"X\",\"name\":");
			bo_put(c->bo, p);
			json_write_string(c->f, x->ft->fns[fn].name);
			p = PUT_LIT(bo_room(c->bo), ",\"cat\":\"func\",\"ts\":");
		}
		c->first = 0;
	} else if (hlen <= CH_PAD) { /* fixed sizes: no call, no rep movs */
		memcpy(p, head, CH_PAD);
		p += hlen;
	} else {
		memcpy(p, head, hlen);
		p += hlen;
	}
	p = put_span_us(p, &c->tn, x->r->start_ticks, s->start);
	p = put_span_us(PUT_LIT(p, ",\"dur\":"), &c->tn, s->start, s->end);
	memcpy(p, c->ids[s->thread], sizeof c->ids[0]);
	p += c->idlen[s->thread];
	uint32_t f = s->flags & ~(uint32_t)TRS_RESUMED;
	if (s->flags) {
		p = PUT_LIT(p, ",\"args\":{");
		if (f)
			p += snprintf(p, 64, "\"end\":\"%s\"%s", f & TRS_ABNORMAL ? "non-local exit" : f & TRS_AT_END
			              ? "closed at thread end" : "closed at lost events", f != s->flags ? "," : "");
		if (f != s->flags) /* a frame open before its slice: fork, attach, a coroutine resumed */
			p = PUT_LIT(p, "\"begun\":\"before this slice\"");
		*p++ = '}';
	}
	*p++ = '}';
	bo_put(c->bo, p);
}

/* Probe hits (sonde probe --record): thread-scoped instants ("i"), func
 * probes' calls "X" slices, cat "probe", named by the probe's spec, the
 * value in args.value. */
static void on_probe(void *arg, const struct tr_probe *h)
{
	struct chrome *c = arg;
	struct export_ctx *x = c->x;
	if (h->event == TRP_BEGIN)
		return; /* written as an "X" slice at its end */
	const struct rd_thread *t = &x->r->threads[h->thread];
	char nb[32];
	sep(c);
	fputs(h->event == TRP_END ? "{\"ph\":\"X\",\"name\":" : "{\"ph\":\"i\",\"s\":\"t\",\"name\":", c->f);
	json_write_string(c->f, tr_probe_name(x->r, h->probe, nb, sizeof nb));
	if (h->event == TRP_END) {
		double b = us(x->r, h->start), e = us(x->r, h->time);
		fprintf(c->f, ",\"cat\":\"probe\",\"ts\":%.3f,\"dur\":%.3f", b, e - b);
	} else {
		fprintf(c->f, ",\"cat\":\"probe\",\"ts\":%.3f", us(x->r, h->time));
	}
	fprintf(c->f, ",\"pid\":%" PRId64 ",\"tid\":%d,\"args\":{\"probe\":%u", pid_of(x->r, t), t->r.tid, h->probe);
	if (h->vkind == TRV_INT) {
		fprintf(c->f, ",\"value\":%" PRId64, h->i);
	} else if (h->vkind == TRV_FLOAT) {
		fputs(",\"value\":", c->f);
		if (h->f == h->f && h->f - h->f == 0)
			fprintf(c->f, "%.17g", h->f);
		else
			json_write_string(c->f, h->f != h->f ? "nan" : h->f > 0 ? "inf" : "-inf");
	} else if (h->vkind == TRV_STR) {
		char v[256];
		uint32_t n = h->slen < sizeof v - 1 ? h->slen : (uint32_t)sizeof v - 1;
		memcpy(v, h->s, n);
		v[n] = 0;
		fputs(",\"value\":", c->f);
		json_write_string(c->f, v);
	}
	if (h->flags)
		fprintf(c->f, ",\"end\":\"%s\"",
		        h->flags & TRS_ABNORMAL ? "non-local exit" : h->flags & TRS_AT_END ? "closed at thread end"
		                                                                          : "closed at lost events");
	fputs("}}", c->f);
}

static void on_lock(void *arg, const struct rd_lock_event *e)
{
	struct chrome *c = arg;
	lks_lock(c->lks, e);
}

static void on_loss(void *arg, const struct rd_loss *e)
{
	struct chrome *c = arg;
	lks_loss(c->lks, e);
}

static int64_t lock_tid(const struct rd_thread *t, uint32_t lane)
{
	return (int64_t)t->r.tid + (int64_t)(lane + 1) * LOCK_TID_STEP;
}

static void on_lane(void *arg, uint32_t thread, uint32_t lane)
{
	struct chrome *c = arg;
	struct export_ctx *x = c->x;
	const struct rd_thread *t = &x->r->threads[thread];
	char name[64];
	lks_lane_name(x->r, thread, lane, name, sizeof name);
	sep(c);
	fprintf(c->f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
	        ",\"args\":{\"name\":",
	        pid_of(x->r, t), lock_tid(t, lane));
	json_write_string(c->f, name);
	fputs("}}", c->f);
	sep(c);
	fprintf(c->f,
	        "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
	        ",\"args\":{\"sort_index\":%u}}",
	        pid_of(x->r, t), lock_tid(t, lane), thread * SORT_STEP + 2 + lane);
}

static void on_switch(void *arg, uint32_t thread, uint64_t time, uint64_t out, uint64_t len, int runnable, int32_t cpu)
{
	(void)time;
	struct chrome *c = arg;
	ts_switch(c->tst, thread, out, len, runnable, cpu);
}

/* A system call (record --syscalls --trace): an "X" slice "sys_NAME" (cat
 * "syscall", args: result) on the thread's track, inside the call that made it. */
static void on_syscall(void *arg, uint32_t thread, uint64_t time, uint32_t call, uint64_t ticks, int64_t result)
{
	struct chrome *c = arg;
	const struct recording *r = c->x->r;
	const struct rd_thread *t = &r->threads[thread];
	double b = us(r, time - ticks), e = us(r, time);
	sep(c);
	fprintf(c->f, "{\"ph\":\"X\",\"name\":\"sys_%s\",\"cat\":\"syscall\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%" PRId64
	        ",\"tid\":%d,\"args\":{\"result\":%" PRId64 "}}",
	        sca_call_name(call), b, e - b, pid_of(r, t), t->r.tid, result);
}

static void on_state_track(void *arg, uint32_t thread)
{
	struct chrome *c = arg;
	const struct rd_thread *t = &c->x->r->threads[thread];
	sep(c);
	fprintf(c->f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
	        ",\"args\":{\"name\":\"%d state\"}}",
	        pid_of(c->x->r, t), lock_tid(t, STATE_LANE), (int)t->r.tid);
	sep(c);
	fprintf(c->f,
	        "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
	        ",\"args\":{\"sort_index\":%u}}",
	        pid_of(c->x->r, t), lock_tid(t, STATE_LANE), thread * SORT_STEP + 1);
}

static void on_state(void *arg, const struct ts_slice *s)
{
	struct chrome *c = arg;
	const struct recording *r = c->x->r;
	const struct rd_thread *t = &r->threads[s->thread];
	double b = us(r, s->start), e = us(r, s->end);
	sep(c);
	fprintf(c->f, "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"sched\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%" PRId64
	        ",\"tid\":%" PRId64 ",\"args\":{\"tid\":%d",
	        ts_kind_name(s->kind), b, e - b, pid_of(r, t), lock_tid(t, STATE_LANE), t->r.tid);
	if (s->cpu >= 0)
		fprintf(c->f, ",\"cpu\":%d", (int)s->cpu);
	fputs("}}", c->f);
}

static void on_lock_slice(void *arg, const struct lks_slice *s)
{
	struct chrome *c = arg;
	struct export_ctx *x = c->x;
	const struct rd_thread *t = &x->r->threads[s->thread];
	sep(c);
	fputs("{\"ph\":\"X\",\"name\":", c->f);
	json_write_string(c->f, s->name);
	double b = us(x->r, s->start), e = us(x->r, s->end);
	fprintf(c->f, ",\"cat\":\"lock\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%" PRId64 ",\"tid\":%" PRId64, b, e - b,
	        pid_of(x->r, t), lock_tid(t, s->lane));
	fputs(",\"args\":{\"lock\":", c->f);
	json_write_string(c->f, s->lock);
	fputs(",\"kind\":", c->f);
	json_write_string(c->f, s->kind);
	fprintf(c->f, ",\"tid\":%d", t->r.tid);
	if (s->flags & LKS_READ)
		fputs(",\"mode\":\"read\"", c->f);
	if (s->flags & LKS_TIMEOUT)
		fputs(",\"result\":\"timeout\"", c->f);
	if (s->flags & LKS_COND)
		fputs(",\"wait\":\"condition\"", c->f);
	if (s->flags & LKS_CROSS)
		fputs(",\"released_by\":\"another thread\"", c->f);
	if (s->flags & LKS_FORKED)
		fputs(",\"start\":\"held across fork\"", c->f);
	if (s->flags & LKS_AT_END)
		fputs(",\"end\":\"closed at thread end\"", c->f);
	if (s->flags & LKS_LOST)
		fputs(",\"end\":\"closed at lost events\"", c->f);
	fputs("}}", c->f);
}

/* otherData's "counted": the calls of the functions counted, not timed
 * (record --timing), which have no slices, by thread (REC_COUNTED); not
 * in a time range (their calls have no times). */
static void write_counted(struct chrome *c)
{
	const struct export_ctx *x = c->x;
	const struct recording *r = x->r;
	int first = 1;
	for (int i = 0; !x->has_range && i < r->nthreads; i++) {
		const struct rd_thread *t = &r->threads[i];
		if (!rd_thread_selected(r, &x->sel, t))
			continue;
		for (uint32_t k = 0; k < t->ncounted; k++) {
			fputs(first ? ",\"counted\":[" : ",", c->f);
			first = 0;
			fprintf(c->f, "{\"pid\":%" PRId64 ",\"tid\":%d,\"name\":", pid_of(r, t), t->r.tid);
			json_write_string(c->f, x->ft->fns[fn_of(x->ft, r, t->counted[k].func)].name);
			fprintf(c->f, ",\"calls\":%" PRIu64 "}", t->counted[k].calls);
		}
	}
	if (!first)
		fputs("]", c->f);
}

static int write_chrome(struct export_ctx *x)
{
	const struct recording *r = x->r;
	struct chrome c = { .x = x, .first = 1, .bo = bo_open(x->out), .names = calloc(x->ft->n + 1, sizeof(char *)),
	                    .nlen = calloc(x->ft->n + 1, sizeof(uint32_t)), .ids = calloc(r->nthreads + 1, sizeof *c.ids),
	                    .idlen = calloc(r->nthreads + 1, 1) };
	if (!c.bo || !c.names || !c.nlen || !c.ids || !c.idlen) {
		if (c.bo)
			bo_close(c.bo);
		free(c.names);
		free(c.nlen);
		free(c.ids);
		free(c.idlen);
		snprintf(x->err, sizeof x->err, "out of memory");
		return -1;
	}
	c.f = bo_stream(c.bo);
	tick_ns_init(&c.tn, r->ticks_per_ns);
	for (int i = 0; i < r->nthreads; i++) {
		const struct rd_thread *t = &r->threads[i];
		int64_t pid = pid_of(r, t);
		c.idlen[i] = (uint8_t)snprintf(c.ids[i], sizeof c.ids[i], ",\"pid\":%" PRId64 ",\"tid\":%d", pid, t->r.tid);
	}
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", c.f);
	/* Process and thread names. */
	for (int i = 0; i < r->nprocs; i++) {
		const struct rec_process *p = &r->procs[i];
		const char *b = strrchr(p->exe, '/');
		sep(&c);
		fprintf(c.f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":", p->pid);
		json_write_string(c.f, b ? b + 1 : p->exe);
		fputs("}}", c.f);
	}
	for (int i = 0; i < r->nthreads; i++) {
		const struct rd_thread *t = &r->threads[i];
		if (!rd_thread_selected(r, &x->sel, t))
			continue;
		sep(&c);
		fprintf(c.f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId64 ",\"tid\":%d,\"args\":{\"name\":",
		        pid_of(r, t), t->r.tid);
		json_write_string(c.f, t->r.comm[0] ? t->r.comm : "thread");
		fputs("}}", c.f);
		sep(&c);
		fprintf(c.f,
		        "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%" PRId64 ",\"tid\":%d,\"args\":{\"sort_index\":%d}}",
		        pid_of(r, t), t->r.tid, i * (int)SORT_STEP);
	}
	struct tr_filter f;
	tr_filter_init(&f, r, &x->sel, x->has_range, x->from_s, x->to_s);
	static const struct lks_ops lops = { on_lane, on_lock_slice };
	c.lks = lks_open(r, &f, &lops, &c);
	static const struct ts_ops tops = { on_state_track, on_state };
	c.tst = ts_open(r, &tops, &c);
	const struct rd_event_ops ops = { .ret = on_end, .lock = c.lks ? on_lock : NULL, .probe = on_probe,
	                                   .loss = c.lks ? on_loss : NULL, .sw = on_switch, .syscall = on_syscall };
	struct tr_stats st;
	int rc = rd_each_event(r, &f, &ops, &c, &st, x->err, sizeof x->err);
	struct lks_stats ls;
	lks_close(c.lks, &ls);
	ts_close(c.tst);
	for (uint32_t i = 0; i <= x->ft->n; i++)
		free(c.names[i]);
	free(c.names);
	free(c.nlen);
	free(c.ids);
	free(c.idlen);
	fprintf(c.f, "\n],\"otherData\":{\"calls\":%" PRIu64 ",\"lost_events\":%" PRIu64 ",\"sequence_gaps\":%" PRIu64
	        ",\"closed_at_end\":%" PRIu64 ",\"lock_waits\":%" PRIu64 ",\"lock_holds\":%" PRIu64
	        ",\"probe_records\":%" PRIu64,
	        st.calls, st.lost, st.gaps, st.closed_at_end, ls.waits, ls.holds, st.probe_hits);
	write_counted(&c);
	fputs("}}\n", c.f);
	if (bo_close(c.bo)) {
		snprintf(x->err, sizeof x->err, "write error (%s)", strerror(errno));
		return -1;
	}
	return rc;
}

const struct export_ops export_chrome = {
	"chrome", "Chrome trace-event JSON, one slice per call (chrome://tracing, Perfetto, speedscope)", 1,
	write_chrome,
};

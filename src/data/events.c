/* events.c — the one event iterator of a recording (see events.h). */
#include "data/events.h"

#include <stdlib.h>
#include <string.h>

#include "common/trace_enc.h"
#include "common/sys_session.h"
#include "data/events_dec.h"

#define TR_MAX_PROBE_DEPTH 4096 /* open probe slices per thread (deeper: counted as bad) */

/* Ticks as a u64: 0 below zero (or NaN), UINT64_MAX beyond its range. */
static uint64_t to_ticks(double t)
{
	return t >= 0x1p64 ? UINT64_MAX : t > 0 ? (uint64_t)t : 0;
}

void tr_filter_init(struct tr_filter *f, const struct recording *r, const struct rd_select *sel, int has_range,
                    double from_s, double to_s)
{
	memset(f, 0, sizeof *f);
	if (sel)
		f->sel = *sel;
	double tpn = r->ticks_per_ns > 0 ? r->ticks_per_ns : 1.0;
	if (has_range) {
		f->has_range = 1;
		f->from = rd_sat_add(r->start_ticks, to_ticks(from_s * 1e9 * tpn));
		f->to = rd_sat_add(r->start_ticks, to_ticks(to_s * 1e9 * tpn));
	}
	const char *m = rd_meta(r, "trace_min_time_ns");
	if (m)
		f->min_ticks = to_ticks((double)strtoull(m, NULL, 10) * tpn);
}

int rd_dec_grow(struct rd_dthread *ts)
{
	uint32_t cap = ts->cap ? ts->cap * 2 : 64;
	struct rd_frame *stk = realloc(ts->stk, sizeof *ts->stk * cap);
	if (!stk)
		return -1;
	ts->stk = stk;
	ts->cap = cap;
	return 0;
}

static int in_range(const struct tr_filter *f, uint64_t t)
{
	return !f->has_range || (t >= f->from && t <= f->to);
}

static void probe_leave(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, uint64_t t, uint32_t flags)
{
	struct rd_pframe *fr = &ts->pstk[--ts->pn];
	if (!fr->emitted)
		return;
	if (t < fr->start)
		t = fr->start;
	d->st->probe_slices++;
	if (d->ops->probe) {
		struct tr_probe h = { .thread = th, .probe = fr->probe, .event = TRP_END, .flags = flags,
		                      .time = t, .start = fr->start };
		d->ops->probe(d->arg, &h);
	}
}

static void close_all(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, uint64_t t, uint32_t flags)
{
	ts->deep = 0;
	while (ts->n)
		rd_dec_leave(d, d->ops, th, ts, t, flags);
	while (ts->pn)
		probe_leave(d, th, ts, t, flags);
}

/* Decode a TRX_PROBE record (p, len: after the type byte, from its
 * varint(len)): 0 ok, -1 malformed.  Sets probe, event, vkind and the value. */
static int probe_parse(const uint8_t *p, int len, struct tr_probe *out)
{
	const uint8_t *end = p + len;
	uint64_t id, ev, vk, v, flen;
	int n;
	/* The sized form's varint(len) first: the fields end there. */
	if (!(n = tr_get_varint(p, end, &flen)) || flen != (uint64_t)(end - p - n))
		return -1;
	p += n;
	if (!(n = tr_get_varint(p, end, &id)) || id > 0xffffffffu)
		return -1;
	p += n;
	if (!(n = tr_get_varint(p, end, &ev)) || ev > TRP_END)
		return -1;
	p += n;
	if (!(n = tr_get_varint(p, end, &vk)))
		return -1;
	p += n;
	out->probe = (uint32_t)id;
	out->event = (int)ev;
	out->vkind = TRV_NONE;
	out->s = NULL;
	out->slen = 0;
	switch (vk) {
	case TRV_NONE:
		break;
	case TRV_INT:
		if (!tr_get_varint(p, end, &v))
			return -1;
		out->i = tr_unzigzag(v);
		break;
	case TRV_FLOAT:
		if (end - p < 8)
			return -1;
		memcpy(&out->f, p, 8);
		break;
	case TRV_STR:
		if (!(n = tr_get_varint(p, end, &v)) || v > (uint64_t)(end - p - n))
			return -1;
		out->s = (const char *)p + n;
		out->slen = (uint32_t)v;
		break;
	default:
		return 0; /* a value kind of a later version: the hit without its value */
	}
	out->vkind = (int)vk;
	return 0;
}

const char *tr_probe_name(const struct recording *r, uint32_t id, char *buf, size_t n)
{
	char key[32];
	snprintf(key, sizeof key, "probe.%u", id);
	const char *s = rd_meta(r, key);
	if (s && *s)
		return s;
	snprintf(buf, n, "probe %u", id);
	return buf;
}

/* One TRX_PROBE record of thread th at time t.  -1 if malformed. */
static int probe_event(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, uint64_t t, const uint8_t *p, int len)
{
	struct tr_probe h;
	memset(&h, 0, sizeof h);
	if (probe_parse(p, len, &h))
		return -1;
	d->st->probe_hits++;
	h.thread = th;
	h.time = t;
	switch (h.event) {
	case TRP_HIT:
		if (d->ops->probe && in_range(d->f, t))
			d->ops->probe(d->arg, &h);
		return 0;
	case TRP_BEGIN:
		if (ts->pn == TR_MAX_PROBE_DEPTH) {
			d->st->bad++;
			return 0;
		}
		if (ts->pn == ts->pcap) {
			uint32_t cap = ts->pcap ? ts->pcap * 2 : 16;
			struct rd_pframe *pstk = realloc(ts->pstk, sizeof *ts->pstk * cap);
			if (!pstk) {
				d->st->bad++;
				return 0;
			}
			ts->pstk = pstk;
			ts->pcap = cap;
		}
		int pass = in_range(d->f, t);
		ts->pstk[ts->pn++] = (struct rd_pframe){ h.probe, (uint32_t)pass, t };
		if (pass && d->ops->probe)
			d->ops->probe(d->arg, &h);
		return 0;
	default: { /* TRP_END: the innermost open begin of the same probe */
		uint32_t i = ts->pn;
		while (i > 0 && ts->pstk[i - 1].probe != h.probe)
			i--;
		if (!i) {
			d->st->unmatched++;
			return 0;
		}
		while (ts->pn > i)
			probe_leave(d, th, ts, t, TRS_ABNORMAL);
		probe_leave(d, th, ts, t, 0);
		return 0;
	}
	}
}

static void loss(struct rd_dec *d, uint32_t th, int cause, uint64_t t, uint64_t count)
{
	if (d->ops->loss) {
		struct rd_loss l = { th, cause, t, count };
		d->ops->loss(d->arg, &l);
	}
}

/* Index of the process of thread th in r->procs, or -1. */
static int proc_of(const struct recording *r, uint32_t th)
{
	const struct rec_process *p = rd_proc(r, r->threads[th].r.proc);
	return p ? (int)(p - r->procs) : -1;
}

/* Before the first event of thread th (at time t): its process's start, if
 * this is the first thread of it seen, then its own. */
static void start_thread(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, uint64_t t)
{
	int pi = proc_of(d->r, th);
	if (pi >= 0 && !d->pstarted[pi]) {
		d->pstarted[pi] = 1;
		const struct rec_process *p = &d->r->procs[pi];
		if (d->ops->process_start)
			d->ops->process_start(d->arg, p->index, p->start_tsc && p->start_tsc <= t ? p->start_tsc : t);
	}
	ts->started = 1;
	uint64_t st = d->r->threads[th].r.start_tsc;
	if (d->ops->thread_start)
		d->ops->thread_start(d->arg, th, st && st <= t ? st : t);
}

int rd_dec_ext(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, uint64_t t, uint8_t type, const uint8_t *p,
               int len)
{
	const uint8_t *end = p + len;
	switch (type) {
	case TRX_PROBE:
		return probe_event(d, th, ts, t, p, len);
	case TRX_LOCK: { /* varint(lock id), byte(op), varint(aux) */
		struct rd_lock_event e = { .thread = th, .time = t };
		uint64_t id;
		int n = tr_get_varint(p, end, &id);
		if (!n || id > 0xffffffffu || p + n + 1 > end)
			return -1;
		p += n;
		e.lock = (uint32_t)id;
		e.op = *p++;
		if (!tr_get_varint(p, end, &e.aux))
			return -1;
		d->st->lock_events++;
		if (d->ops->lock)
			d->ops->lock(d->arg, &e);
		return 0;
	}
	case TRX_RESUME: { /* varint(len), then varint(func) */
		uint64_t flen, func;
		int n = tr_get_varint(p, end, &flen);
		if (!n || !tr_get_varint(p + n, end, &func) || func > 0xffffffffu)
			return -1;
		if (!rd_func_valid(d->r, (uint32_t)func))
			d->st->bad++;
		rd_dec_enter(d, d->ops, th, ts, (uint32_t)func, t, 1);
		return 0;
	}
	case TRX_OFFCPU: { /* varint(len), then varint(ns)[, varint(run)] */
		uint64_t flen, ns, run = UINT64_MAX;
		int n = tr_get_varint(p, end, &flen), m = n ? tr_get_varint(p + n, end, &ns) : 0;
		if (!n || !m || flen < (uint64_t)m)
			return -1;
		if (flen > (uint64_t)m && (!tr_get_varint(p + n + m, end, &run) || run > ns))
			return -1; /* a runnable part larger than the wait: not sonde's */
		if (d->ops->offcpu && in_range(d->f, t))
			d->ops->offcpu(d->arg, th, t, ns, run);
		return 0;
	}
	case TRX_SWITCH: { /* varint(len), then varint(out), varint(len), varint(how), varint(cpu) */
		uint64_t flen, v[4];
		int n = tr_get_varint(p, end, &flen), m = n;
		for (int i = 0; i < 4 && m; i++) {
			int k = tr_get_varint(p + m, end, &v[i]);
			m = k ? m + k : 0;
		}
		if (!m || flen < (uint64_t)(m - n) || v[1] > v[0] || v[2] > 1 || v[3] > 0x10000)
			return -1; /* a wait longer than the clock's time, or fields not sonde's */
		if (d->ops->sw && in_range(d->f, t))
			d->ops->sw(d->arg, th, t, v[0], v[1], (int)v[2], (int32_t)v[3] - 1);
		return 0;
	}
	case TRX_SYSCALL: { /* varint(len), then varint(call), varint(ticks), varint(result) */
		uint64_t flen, v[3];
		int n = tr_get_varint(p, end, &flen), m = n;
		for (int i = 0; i < 3 && m; i++) {
			int k = tr_get_varint(p + m, end, &v[i]);
			m = k ? m + k : 0;
		}
		/* a call sonde knows, which began after the thread's first event */
		if (!m || flen < (uint64_t)(m - n) || v[0] >= SYS_NCALLS || v[1] > t - ts->t0 || v[2] > INT64_MAX)
			return -1;
		if (d->ops->syscall && in_range(d->f, t))
			d->ops->syscall(d->arg, th, t, (uint32_t)v[0], v[1], v[2] ? (int64_t)(v[2] - 1) : -1);
		return 0;
	}
	case TRX_NAME: /* byte(len), bytes */
		if (d->ops->name)
			d->ops->name(d->arg, th, t, (const char *)p + 1, p[0]);
		return 0;
	default: /* a later version's event: skipped */
		return 0;
	}
}

int rd_dec_chunk_start(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, const struct rec_chunk *c, uint64_t *tp)
{
	uint64_t t = c->base_tsc;
	if (!ts->seen) {
		ts->t0 = t;
		start_thread(d, th, ts, t);
	}
	if (ts->seen && c->seq != ts->next_seq) {
		uint64_t n = c->seq > ts->next_seq ? c->seq - ts->next_seq : 1;
		d->st->gaps += n;
		close_all(d, th, ts, ts->last, TRS_LOST);
		loss(d, th, RDL_GAP, ts->last, n);
	} else if (!ts->seen && c->seq != 0) {
		d->st->gaps += c->seq;
		loss(d, th, RDL_GAP, t, c->seq);
	}
	if (c->lost) {
		d->st->lost += c->lost;
		close_all(d, th, ts, ts->last, TRS_LOST);
		loss(d, th, RDL_DROPPED, ts->seen ? ts->last : t, c->lost);
	}
	ts->seen = 1;
	ts->next_seq = c->seq + 1;
	if (t < ts->last) /* clocks are per CPU; never let a thread go backwards */
		t = ts->last;
	if (t - ts->t0 > d->maxt) { /* a time base no recording has: damaged */
		rd_dec_chunk_bad(d, th, ts, ts->last);
		return -1;
	}
	*tp = t;
	return 0;
}

void rd_dec_chunk_bad(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, uint64_t t)
{
	d->st->bad++;
	ts->last = t;
	close_all(d, th, ts, t, TRS_LOST);
	loss(d, th, RDL_DAMAGED, t, 1);
}

/* The generic chunk decoder: the callbacks read from d->ops. */
static int do_chunk(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, const struct rec_chunk *c, const uint8_t *p)
{
	return rd_dec_chunk(d, d->ops, NULL, NULL, th, ts, c, p);
}

/* The end of thread th: what is still open is closed at the end of the
 * thread (or its process), or before the damage when the file ended in it. */
static void end_thread(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, int damaged)
{
	const struct recording *r = d->r;
	uint64_t end = r->threads[th].r.end_tsc;
	const struct rec_process *p = rd_proc(r, r->threads[th].r.proc);
	if (!end && p)
		end = p->end_tsc;
	if (end < ts->last)
		end = ts->last;
	if (end - ts->t0 > d->maxt) /* an end no recording has: the last time in bounds */
		end = ts->t0 + d->maxt;
	close_all(d, th, ts, end, damaged ? TRS_LOST : TRS_AT_END);
	if (d->ops->thread_end)
		d->ops->thread_end(d->arg, th, end);
	ts->last = end;
}

int rd_each_event(const struct recording *r, const struct tr_filter *flt, const struct rd_event_ops *ops,
                  void *arg, struct tr_stats *st, char *err, size_t errlen)
{
	return rd_each_event_with(r, flt, ops, arg, st, err, errlen, do_chunk);
}

int rd_each_event_with(const struct recording *r, const struct tr_filter *flt, const struct rd_event_ops *ops,
                       void *arg, struct tr_stats *st, char *err, size_t errlen, rd_chunk_fn chunk)
{
	static const struct tr_filter all;
	static const struct rd_event_ops none;
	if (!flt)
		flt = &all;
	if (!ops)
		ops = &none;
	memset(st, 0, sizeof *st);
	struct rd_events ev;
	if (rd_events_open(r, &ev, err, errlen) != 0)
		return -1;
	struct rd_dec d = { r, flt, ops, arg, st, rd_max_ticks(r), NULL, !flt->min_ticks && !flt->has_range, NULL };
	int nt = r->nthreads;
	struct rd_dthread *ts = calloc(nt ? nt : 1, sizeof *ts);
	int32_t *by_slot = malloc(sizeof *by_slot * REC_MAX_THREADS);
	d.pstarted = calloc(r->nprocs ? r->nprocs : 1, 1);
	uint32_t *nfuncs = calloc(SONDE_FUNC_MOD(UINT32_MAX) + 1, sizeof *nfuncs);
	d.nfuncs = nfuncs;
	for (uint32_t m = 0; nfuncs && m < r->nmodule_slots && m <= SONDE_FUNC_MOD(UINT32_MAX); m++)
		if (r->modules[m]) /* rd_func_valid's numbered functions: num < nfuncs */
			nfuncs[m] = r->modules[m]->r.nfuncs;
	if (!ts || !by_slot || !d.pstarted || !nfuncs) {
		free(nfuncs);
		free(ts);
		free(by_slot);
		free(d.pstarted);
		rd_events_close(&ev);
		snprintf(err, errlen, "%s: out of memory", ev.path);
		return -1;
	}
	for (uint32_t i = 0; i < REC_MAX_THREADS; i++)
		by_slot[i] = -1;
	for (int i = 0; i < nt; i++) {
		if (r->threads[i].r.index < REC_MAX_THREADS)
			by_slot[r->threads[i].r.index] = i;
		ts[i].selected = rd_thread_selected(r, &flt->sel, &r->threads[i]);
	}
	int rc;
	while ((rc = rd_events_next(&ev, err, errlen)) == 1) {
		st->chunks++;
		st->bytes += ev.chunk.used;
		uint32_t slot = ev.chunk.thread;
		int th = slot < REC_MAX_THREADS ? by_slot[slot] : -1;
		if (th < 0) {
			st->bad++;
			loss(&d, UINT32_MAX, RDL_UNKNOWN_THREAD, ev.chunk.base_tsc, 1);
			continue;
		}
		if (!ts[th].selected)
			continue;
		chunk(&d, (uint32_t)th, &ts[th], &ev.chunk, ev.data);
		if (r->progress)
			r->progress(r->progress_arg, ev.off, ev.size);
	}
	if (r->progress)
		r->progress(r->progress_arg, ev.size, ev.size);
	/* Each process's threads end, then the process. */
	for (int pi = -1; pi < r->nprocs; pi++) {
		uint64_t pend = 0;
		for (int i = 0; i < nt; i++) {
			if (!ts[i].started || proc_of(r, (uint32_t)i) != pi)
				continue;
			end_thread(&d, (uint32_t)i, &ts[i], rc < 0);
			if (ts[i].last > pend)
				pend = ts[i].last;
		}
		if (pi >= 0 && d.pstarted[pi] && ops->process_end) {
			uint64_t e = r->procs[pi].end_tsc; /* bounded like the threads' ends */
			ops->process_end(arg, r->procs[pi].index, e > pend && e - pend <= d.maxt ? e : pend);
		}
	}
	for (int i = 0; i < nt; i++) {
		free(ts[i].stk);
		free(ts[i].pstk);
	}
	free(ts);
	free(by_slot);
	free(d.pstarted);
	free(nfuncs);
	rd_events_close(&ev);
	return rc < 0 ? -1 : 0;
}

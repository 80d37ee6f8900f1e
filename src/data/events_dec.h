/* events_dec.h — the record loop of the event decoder (events.c), in a
 * header so that an export on a hot path can have its callbacks compiled
 * into it.  There is one decoder: rd_each_event() runs this loop with the
 * callbacks read from its ops at run time; RD_DECODER(name, ops) makes the
 * same loop with ops a compile-time constant (a `static const struct
 * rd_event_ops`), so that the calls of ops->call and ops->ret are direct
 * (and inlined) instead of an indirect call and a struct tr_slice in memory
 * per event; rd_each_event_with() walks the recording with it.
 * RD_DECODER_HOT(name, ops, hot_ops, type) goes one step further: the
 * common begins and ends go to hot_ops->call/ret with a local `type` (the
 * consumer's per-chunk state: its output pointer, the thread's last time,
 * ...) that hot_ops->load fills and hot_ops->save writes back around every
 * cold path, so that it stays in registers across the output's byte
 * stores (the Perfetto export).  The same
 * checks either way (every varint bounded by the chunk's end, every time
 * by the thread's bound, every function id checked, the depth bounded);
 * the cold paths (a chunk's start, EXT records, damage) are events.c's
 * functions, shared.
 *
 * Only for consumers that measured the difference (the Perfetto export:
 * about a third of its instructions were the call per event); everyone
 * else calls rd_each_event().
 *
 * Part of events.c's unit (its loop, written out for the includer): it
 * includes nothing of data/ itself, so data/events.h comes first in the file
 * that includes it (events.c and the export), and the layer check sees no
 * cycle between the two halves of one decoder. */
#ifndef SONDE_DATA_EVENTS_DEC_H
#define SONDE_DATA_EVENTS_DEC_H

#include "common/trace_enc.h"

struct rd_frame {
	uint32_t func;
	uint16_t emitted;
	uint16_t resumed;     /* TRX_RESUME: not a call */
	uint64_t start;
};

struct rd_pframe {
	uint32_t probe;
	uint32_t emitted;     /* its begin was passed on */
	uint64_t start;
};

struct rd_dthread {
	struct rd_pframe *pstk; /* open probe slices (func probes) */
	uint32_t pn, pcap;
	int selected;
	int seen;
	uint64_t next_seq;
	uint64_t t0;          /* time of the thread's first chunk: its records lie in [t0, t0 + rd_max_ticks] */
	uint64_t last;        /* time of the last record decoded (at the end of each chunk) */
	struct rd_frame *stk;
	uint32_t n, cap;
	uint32_t deep;        /* open calls beyond RD_MAX_DEPTH: not slices, only matched with their exits */
	int started;          /* thread_start() was called */
};

struct rd_dec {
	const struct recording *r;
	const struct tr_filter *f;
	const struct rd_event_ops *ops; /* the run-time ops (the cold paths call these) */
	void *arg;
	struct tr_stats *st;
	uint64_t maxt;        /* rd_max_ticks(r) */
	uint8_t *pstarted;    /* per r->procs entry: process_start() was called */
	int plain;            /* no filter on slices: every call's begin is passed on when it is read */
	const uint32_t *nfuncs; /* by module slot, all 2^12 of them: its functions (0: no module) */
};

/* A chunk decoder: rd_dec_chunk() with some ops (RD_DECODER). */
typedef int (*rd_chunk_fn)(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, const struct rec_chunk *c,
                           const uint8_t *p);

/* A consumer's state for one chunk, kept in registers (RD_DECODER_HOT):
 * `load` fills it before the chunk's records and after each cold path,
 * `save` writes it back before each cold path and after the records (the
 * cold paths call the run-time ops with arg, which must then see it).
 * `call` and `ret` take it in place of arg on the common records. */
struct rd_hot_ops {
	void (*load)(void *arg, uint32_t th, void *hot);
	void (*save)(void *arg, const void *hot);
	void (*call)(void *hot, const struct tr_slice *s);
	void (*ret)(void *hot, const struct tr_slice *s);
};

/* rd_each_event() with the chunks decoded by `chunk`, which must be made by
 * RD_DECODER with the same ops. */
int rd_each_event_with(const struct recording *r, const struct tr_filter *flt, const struct rd_event_ops *ops,
                       void *arg, struct tr_stats *st, char *err, size_t errlen, rd_chunk_fn chunk);

/* events.c's cold paths. */
/* Before a chunk's records: the thread's start, sequence gaps, losses, the
 * chunk's base time (in *t).  0, or -1 when the base time is damaged (the
 * damage handled: the chunk is skipped). */
int rd_dec_chunk_start(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, const struct rec_chunk *c, uint64_t *t);
/* A malformed record at time t: counted, open slices closed, the loss said. */
void rd_dec_chunk_bad(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, uint64_t t);
/* One EXT record of type `type` (fields p, len).  -1 if malformed. */
int rd_dec_ext(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, uint64_t t, uint8_t type, const uint8_t *p,
               int len);
/* A new frame on a stack that is full: grown, or -1 (out of memory). */
int rd_dec_grow(struct rd_dthread *ts);

#define RD_INLINE static inline __attribute__((always_inline))

RD_INLINE void rd_dec_emit_begin(struct rd_dec *d, const struct rd_event_ops *ops, uint32_t th,
                                 struct rd_dthread *ts, uint32_t i)
{
	struct rd_frame *fr = &ts->stk[i];
	fr->emitted = 1;
	if (ops->call) {
		struct tr_slice s = { th, fr->func, i + 1, fr->resumed ? TRS_RESUMED : 0, fr->start, 0 };
		ops->call(d->arg, &s);
	}
}

/* Emit the begins of every held-back frame (emitted frames are a prefix). */
RD_INLINE void rd_dec_flush(struct rd_dec *d, const struct rd_event_ops *ops, uint32_t th, struct rd_dthread *ts)
{
	uint32_t i = ts->n;
	while (i > 0 && !ts->stk[i - 1].emitted)
		i--;
	for (; i < ts->n; i++)
		rd_dec_emit_begin(d, ops, th, ts, i);
}

RD_INLINE void rd_dec_enter(struct rd_dec *d, const struct rd_event_ops *ops, uint32_t th, struct rd_dthread *ts,
                            uint32_t func, uint64_t t, int resumed)
{
	if (ts->deep || ts->n >= RD_MAX_DEPTH || (ts->n == ts->cap && rd_dec_grow(ts))) {
		/* Deeper than any recording goes (the runtime's shadow stack is
		 * shallower), or out of memory: damaged.  Counted, and kept only as a
		 * level to pop, so that the exits still pair with the right calls. */
		ts->deep++;
		d->st->bad++;
		return;
	}
	ts->stk[ts->n++] = (struct rd_frame){ func, 0, (uint16_t)(resumed != 0), t };
	const struct tr_filter *f = d->f;
	if (d->plain || (!f->min_ticks && (!f->has_range || (t >= f->from && t <= f->to)))) {
		if (ts->n == 1 || ts->stk[ts->n - 2].emitted) /* the frames below are out (no filter: always) */
			rd_dec_emit_begin(d, ops, th, ts, ts->n - 1);
		else
			rd_dec_flush(d, ops, th, ts);
	}
}

RD_INLINE void rd_dec_leave(struct rd_dec *d, const struct rd_event_ops *ops, uint32_t th, struct rd_dthread *ts,
                            uint64_t t, uint32_t flags)
{
	struct rd_frame *fr = &ts->stk[ts->n - 1];
	const struct tr_filter *f = d->f;
	if (t < fr->start)
		t = fr->start;
	if (!fr->emitted) {
		int keep = !f->has_range || (t >= f->from && fr->start <= f->to);
		if (keep && f->min_ticks && t - fr->start < f->min_ticks && !flags) {
			d->st->dropped_short++;
			keep = 0;
		}
		if (!keep) {
			ts->n--;
			return;
		}
		rd_dec_flush(d, ops, th, ts);
	}
	if (fr->resumed)
		flags |= TRS_RESUMED;
	else
		d->st->calls++;
	if (flags & TRS_ABNORMAL)
		d->st->abnormal++;
	if (flags & TRS_AT_END)
		d->st->closed_at_end++;
	if (ops->ret) {
		struct tr_slice s = { th, fr->func, ts->n, flags, fr->start, t };
		ops->ret(d->arg, &s);
	}
	ts->n--;
}

/* Decode one chunk of thread th.  Returns 0, or -1 if a record is malformed
 * (the rest of the chunk is skipped).
 *
 * The common records (a call's entry, its exit, no filter) are decoded on
 * local copies of the thread's stack state (n, deep, stk, and lim from cap) and of the
 * call count, so that they stay in registers across the callbacks' byte
 * stores; the copies are written back (RD_SYNC) before every path that
 * reads or changes ts (rd_dec_enter/leave for the rest, EXT records,
 * damage, a full stack) and read again after it (RD_LOAD). */
RD_INLINE int rd_dec_chunk(struct rd_dec *dp, const struct rd_event_ops *ops, const struct rd_hot_ops *hops,
                           void *hot, uint32_t th, struct rd_dthread *ts, const struct rec_chunk *c, const uint8_t *p)
{
	const uint8_t *end = p + c->used;
	uint64_t t;
	if (rd_dec_chunk_start(dp, th, ts, c, &t))
		return -1;
	/* A copy that nothing else can reach (the cold paths get dp): its
	 * fields stay in registers across the callbacks' stores. */
	struct rd_dec dl = *dp, *d = &dl;
	/* The last time the thread can have: t0 + maxt (t - t0 <= maxt holds from here on). */
	const uint64_t tmax = rd_sat_add(ts->t0, d->maxt);
	const struct recording *r = d->r;
	uint64_t records = 0, calls = 0; /* added to the stats at the chunk's end */
	struct rd_frame *stk;
	uint32_t n, deep, lim; /* lim: n below it, a call is pushed and emitted here (rd_dec_enter without a filter) */
#define RD_LIM() (lim = d->plain && !deep ? (ts->cap < RD_MAX_DEPTH ? ts->cap : RD_MAX_DEPTH) : 0)
#define RD_LOAD()                                                                                                \
	do {                                                                                                     \
		stk = ts->stk, n = ts->n, deep = ts->deep, RD_LIM();                                              \
		if (hops)                                                                                        \
			hops->load(d->arg, th, hot);                                                             \
	} while (0)
#define RD_SYNC()                                                                                                \
	do {                                                                                                     \
		ts->n = n, ts->deep = deep, d->st->calls += calls, calls = 0;                                    \
		if (hops)                                                                                        \
			hops->save(d->arg, hot);                                                                 \
	} while (0)
	RD_LOAD();
	while (p < end) {
		uint64_t v;
		int k = tr_get_varint(p, end, &v);
		if (!k)
			goto bad;
		p += k;
		uint64_t nt = t + (v >> 2);
		if (nt < t || nt > tmax) /* wrapping, or beyond any recording's length */
			goto bad;
		t = nt;
		records++;
		switch (v & 3) {
		case TR_ENTER: {
			uint64_t func;
			if (!(k = tr_get_varint(p, end, &func)) || func > 0xffffffffu)
				goto bad;
			p += k;
			if ((uint32_t)SONDE_FUNC_NUM(func) >= d->nfuncs[SONDE_FUNC_MOD((uint32_t)func)] && /* rd_func_valid: */
			    !rd_func_valid(r, (uint32_t)func))                                       /* the rest */
				d->st->bad++; /* kept: the nesting stays right, the name says unknown */
			if (n < lim) {
				/* rd_dec_enter without a filter: pushed and emitted (the
				 * frames below are, always without a filter) */
				stk[n++] = (struct rd_frame){ (uint32_t)func, 1, 0, t };
				struct tr_slice s = { th, (uint32_t)func, n, 0, t, 0 };
				if (hops)
					hops->call(hot, &s);
				else if (ops->call)
					ops->call(d->arg, &s);
			} else {
				RD_SYNC();
				rd_dec_enter(d, ops, th, ts, (uint32_t)func, t, 0);
				RD_LOAD();
			}
			break;
		}
		case TR_EXIT:
		case TR_EXIT_ABNORMAL:
			if (deep) {
				deep--;
				RD_LIM();
			} else if (!n) {
				d->st->unmatched++;
			} else if (((uint32_t)stk[n - 1].emitted | (uint32_t)stk[n - 1].resumed << 16) == 1 && /* emitted, not resumed */
			           (v & 3) == TR_EXIT) {
				/* rd_dec_leave of an emitted call, a normal return */
				const struct rd_frame *fr = &stk[n - 1];
				uint64_t te = t < fr->start ? fr->start : t;
				calls++;
				struct tr_slice s = { th, fr->func, n, 0, fr->start, te };
				if (hops)
					hops->ret(hot, &s);
				else if (ops->ret)
					ops->ret(d->arg, &s);
				n--;
			} else {
				RD_SYNC();
				rd_dec_leave(d, ops, th, ts, t, (v & 3) == TR_EXIT_ABNORMAL ? TRS_ABNORMAL : 0);
				RD_LOAD();
			}
			break;
		case TR_EXT: {
			if (p >= end)
				goto bad;
			uint8_t type = *p++;
			int len = tr_skip_ext(type, p, end);
			if (len < 0)
				goto bad;
			d->st->ext++;
			RD_SYNC();
			if (rd_dec_ext(dp, th, ts, t, type, p, len))
				goto bad_synced;
			RD_LOAD();
			p += len;
			break;
		}
		}
	}
	RD_SYNC();
	d->st->records += records;
	ts->last = t;
	return 0;
bad:
	RD_SYNC();
bad_synced:
	d->st->records += records;
	rd_dec_chunk_bad(dp, th, ts, t);
	return -1;
#undef RD_LIM
#undef RD_LOAD
#undef RD_SYNC
}

/* A chunk decoder `name` with the callbacks of OPS (a static const struct
 * rd_event_ops) compiled in. */
#define RD_DECODER(name, OPS)                                                                                    \
	static int name(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, const struct rec_chunk *c,          \
	                const uint8_t *p)                                                                         \
	{                                                                                                         \
		return rd_dec_chunk(d, &(OPS), NULL, NULL, th, ts, c, p);                                          \
	}

/* The same with the common records' begins and ends passed to HOPS (a
 * static const struct rd_hot_ops) on a local HOT_TYPE, the rest to OPS. */
#define RD_DECODER_HOT(name, OPS, HOPS, HOT_TYPE)                                                                \
	static int name(struct rd_dec *d, uint32_t th, struct rd_dthread *ts, const struct rec_chunk *c,          \
	                const uint8_t *p)                                                                         \
	{                                                                                                         \
		HOT_TYPE hot;                                                                                     \
		return rd_dec_chunk(d, &(OPS), &(HOPS), &hot, th, ts, c, p);                                       \
	}

#endif

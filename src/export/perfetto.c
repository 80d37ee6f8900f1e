/* perfetto.c — native Perfetto protobuf (the Trace / TracePacket format of
 * ui.perfetto.dev and trace_processor), written by hand, no protobuf library.
 *
 * Layout (docs/TRACING.md, "Perfetto export"): sequence 1 holds a
 * TrackDescriptor per process (ProcessDescriptor: pid, name) and per thread
 * (ThreadDescriptor: pid, tid, thread name), and the lock tracks below.
 * Each thread's calls are on a trusted packet sequence of their own (id 2 +
 * thread index), so that everything an event would repeat is said once per
 * sequence, as Perfetto's own SDK does: its first packet clears the
 * incremental state (SEQ_INCREMENTAL_STATE_CLEARED), declares a
 * sequence-scoped clock 64 that is incremental (ClockSnapshot: clock 64 at 0
 * is BOOTTIME at 0, is_incremental) and sets TracePacketDefaults (timestamp
 * clock 64, TrackEventDefaults.track_uuid = the thread's track).  Then per
 * call a TrackEvent TYPE_SLICE_BEGIN (name by interned iid; the name is sent
 * once per sequence, in the InternedData of the packet that first uses it)
 * and a TYPE_SLICE_END, each packet's timestamp the nanoseconds since the
 * previous packet of the sequence: about 11 bytes per event.  The events do
 * not set SEQ_NEEDS_INCREMENTAL_STATE (2 bytes each): a file has no lost
 * packets, so no reader has to skip any.  Slices closed abnormally carry a
 * debug annotation.  Times are nanoseconds from the start of the recording.
 * Streaming: memory is the per-thread state (last time, a bitmap of the
 * names sent, bounded: past PF_INTERN_BUDGET names are sent as strings) and
 * one output batch.
 *
 * Lock waits and holds (--locks --trace, see lock_slices.h): per thread,
 * child tracks "TID locks" (TrackDescriptor with parent_uuid = the thread's
 * track and a name, no ThreadDescriptor): trace_processor attaches them to
 * the thread, and the UI draws them inside the thread's group, under its
 * function track.  A lock slice is written when it ends, as a BEGIN/END pair
 * with the slice's own (absolute) timestamps on sequence 1: the packets of a
 * sequence need not be in time order, trace_processor sorts them (stably, so
 * a wait ending at T still closes before the hold that begins at T).  Its
 * name is interned on sequence 1 (iids after the functions').
 *
 * Thread states (a trace whose threads' waits were recorded, TRX_SWITCH;
 * thread_states.h): per thread a child track "TID state", declared as the
 * lock tracks are, with "running", "runnable" and "blocked" slices (a debug
 * annotation "cpu": the CPU it ran on, or after the wait), BEGIN/END pairs
 * with absolute timestamps on sequence 1, names as strings.
 *
 * System calls (record --syscalls --trace, TRX_SYSCALL): a BEGIN/END pair
 * "sys_NAME" on the thread's own sequence, inside the call that made it,
 * with a debug annotation "result" (-1: an error). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/syscalls.h"
#include "common/trace_enc.h"
#include "data/events.h"
#include "data/events_dec.h"
#include "export/bulk_out.h"
#include "export/export.h"
#include "export/lock_slices.h"
#include "export/protobuf.h"
#include "export/thread_states.h"
#include "export/tick_ns.h"

/* Field numbers (perfetto/protos/perfetto/trace/...). */
enum {
	TRACE_PACKET = 1,
	PKT_CLOCKS = 6, PKT_TIMESTAMP = 8, PKT_SEQ_ID = 10, PKT_TRACK_EVENT = 11, PKT_INTERNED = 12,
	PKT_SEQ_FLAGS = 13, PKT_CLOCK_ID = 58, PKT_DEFAULTS = 59, PKT_TRACK_DESC = 60,
	CS_CLOCK = 1, CLK_ID = 1, CLK_TS = 2, CLK_INCREMENTAL = 3,
	DEF_CLOCK_ID = 58, DEF_TRACK_EVENT = 11, TED_TRACK_UUID = 11,
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8,
	PD_PID = 1, PD_NAME = 6,
	THD_PID = 1, THD_TID = 2, THD_NAME = 5,
	TE_DEBUG = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK_UUID = 11, TE_NAME = 23, TE_COUNTER_VALUE = 30,
	DA_NAME = 10, DA_STRING = 6, DA_INT = 4, DA_DOUBLE = 5,
	ID_EVENT_NAMES = 2, EN_IID = 1, EN_NAME = 2,
	SEQ_CLEARED = 1, SEQ_NEEDS = 2,
	TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4,
	CLOCK_BOOTTIME = 6, CLOCK_THREAD = 64, /* sequence-scoped, incremental */
	SEQ_GLOBAL = 1,                       /* descriptors, locks; a thread's is 2 + its index */
};

/* Bytes of name bitmaps at most (one bit per function per thread with
 * events); the threads past it send names as strings. */
#define PF_INTERN_BUDGET (64u << 20)

struct pf_thread {
	uint64_t last_ns;   /* the sequence's last timestamp */
	uint8_t *sent;      /* names interned on the sequence, a bit per function */
	int started;        /* the sequence's first packet is written */
	/* What the common packets write after their timestamp, the same for
	 * every packet of the sequence (slice_packet_fast): the sequence id and
	 * the TrackEvent's tag (nbegin bytes), and for an END the whole rest
	 * (nend bytes): TrackEvent { type: END }. */
	uint8_t begin[8], nbegin;
	uint8_t end[16], nend;
};

/* A module slot's function map (fn_table.map) and its module's number of
 * functions: one load each instead of fn_of's pointer chain per call. */
struct pf_mod {
	const uint32_t *map; /* { FN_ROOT } with n 0: no functions */
	uint32_t n;
};

struct pf {
	struct export_ctx *x;
	struct pb_buf b;
	struct pf_thread *th;  /* by thread index */
	uint64_t *thread_uuid; /* by thread index */
	size_t intern_bytes;   /* of the bitmaps, against PF_INTERN_BUDGET */
	struct lks *lks;
	struct tstates *tst;   /* the thread-state slices */
	uint8_t *lk_interned;  /* by lks_slice.name_id */
	uint32_t lk_cap;
	struct bulk_out *bo;   /* the output, written in large blocks (O_DIRECT to a file) */
	struct tick_ns tn;     /* ticks to ns: a multiplication per event, the same ns as the chrome export */
	uint64_t start_ticks;  /* the recording's start: ns 0 */
	struct pf_mod *mods;   /* fn_of's lookups flattened, by module slot: all 2^12 of them (no bound to check) */
	uint8_t *unsent;       /* a bitmap of no names, for the threads without one (pf_hot.sent) */
};

#define LOCK_TRACK_UUID(thread, lane) (0x300000000ull + (uint64_t)(thread) * LKS_MAX_LANES + (lane))
#define STATE_TRACK_UUID(thread) (0x400000000ull + (uint64_t)(thread) * LKS_MAX_LANES)
#define COUNTED_MAX (1u << 24) /* counted functions of a thread with a track (their uuids) */
#define COUNTED_TRACK_UUID(thread, k) (0x10000000000000ull + ((uint64_t)(thread) << 24) + (k))

static inline uint64_t ns_of(const struct pf *f, uint64_t ticks)
{
	if (ticks <= f->start_ticks)
		return 0;
	return tick_ns_of(&f->tn, ticks - f->start_ticks); /* a time no clock reaches (damaged): UINT64_MAX */
}

static void flush_packet(struct pf *f)
{
	/* Trace.packet (field 1), length-delimited, around the packet's bytes. */
	uint8_t hdr[12];
	int n = 0;
	hdr[n++] = TRACE_PACKET << 3 | 2;
	uint64_t v = f->b.n;
	while (v >= 0x80) {
		hdr[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	hdr[n++] = (uint8_t)v;
	char *o = bo_room(f->bo);
	memcpy(o, hdr, (size_t)n);
	bo_put(f->bo, o + n);
	for (size_t at = 0; at < f->b.n;) { /* BO_ROOM_MAX at a time (a packet may be larger) */
		size_t k = f->b.n - at < BO_ROOM_MAX ? f->b.n - at : BO_ROOM_MAX;
		o = bo_room(f->bo);
		memcpy(o, f->b.p + at, k);
		bo_put(f->bo, o + k);
		at += k;
	}
	f->b.n = 0;
}

/* The thread's sequence: cleared, its incremental clock, its defaults
 * (written before its first event). */
static void thread_sequence(struct pf *f, uint32_t thread)
{
	struct pf_thread *t = &f->th[thread];
	struct pb_buf *b = &f->b;
	t->started = 1;
	size_t bits = ((size_t)f->x->ft->n + 1 + 7) / 8;
	if (f->intern_bytes + bits <= PF_INTERN_BUDGET && (t->sent = calloc(bits, 1)))
		f->intern_bytes += bits;
	pb_uint(b, PKT_TIMESTAMP, 0);
	pb_uint(b, PKT_CLOCK_ID, CLOCK_BOOTTIME);
	pb_uint(b, PKT_SEQ_ID, 2 + (uint64_t)thread);
	pb_uint(b, PKT_SEQ_FLAGS, SEQ_CLEARED);
	size_t cs = pb_open(b, PKT_CLOCKS);
	size_t c = pb_open(b, CS_CLOCK);
	pb_uint(b, CLK_ID, CLOCK_BOOTTIME);
	pb_uint(b, CLK_TS, 0);
	pb_close(b, c);
	c = pb_open(b, CS_CLOCK);
	pb_uint(b, CLK_ID, CLOCK_THREAD);
	pb_uint(b, CLK_TS, 0);
	pb_uint(b, CLK_INCREMENTAL, 1);
	pb_close(b, c);
	pb_close(b, cs);
	size_t d = pb_open(b, PKT_DEFAULTS);
	pb_uint(b, DEF_CLOCK_ID, CLOCK_THREAD);
	size_t ted = pb_open(b, DEF_TRACK_EVENT);
	pb_uint(b, TED_TRACK_UUID, f->thread_uuid[thread]);
	pb_close(b, ted);
	pb_close(b, d);
	flush_packet(f);
	uint8_t *p = t->begin;
	*p++ = PKT_SEQ_ID << 3;
	p += tr_put_varint(p, 2 + (uint64_t)thread); /* at most 5 bytes: thread < 2^32 */
	*p++ = PKT_TRACK_EVENT << 3 | 2;
	t->nbegin = (uint8_t)(p - t->begin);
	memcpy(t->end, t->begin, t->nbegin);
	p = t->end + t->nbegin;
	*p++ = 2; /* the TrackEvent's length */
	*p++ = TE_TYPE << 3;
	*p++ = TYPE_END;
	t->nend = (uint8_t)(p - t->end);
}

/* The delta to the thread sequence's previous timestamp (times of one
 * thread do not go back; a damaged one that would is taken as the last). */
static inline uint64_t thread_delta(struct pf *f, uint32_t thread, uint64_t ticks)
{
	struct pf_thread *t = &f->th[thread];
	uint64_t ns = ns_of(f, ticks), d = ns > t->last_ns ? ns - t->last_ns : 0;
	if (ns > t->last_ns)
		t->last_ns = ns;
	return d;
}

/* The common event's bytes at o: a BEGIN whose name is already interned on
 * the thread's sequence (type TYPE_BEGIN, its function fn), or an END
 * without annotation, `delta` ns after the sequence's previous packet; what
 * follows the timestamp copied from the thread's precomputed bytes (begin:
 * 8 bytes of which nbegin count, end: 16 of which nend).  Returns the end of
 * the packet.  At most 2 + 11 + 16 + 3 + 6 bytes: well under BO_ROOM_MAX,
 * and under 128, so both lengths fit in one byte, written once the sizes
 * are known.  Byte for byte what the general path below writes. */
static inline __attribute__((always_inline)) uint8_t *pf_encode(uint8_t *o, uint64_t delta, int type, uint32_t fn,
                                                                const uint8_t *begin, unsigned nbegin,
                                                                const uint8_t *end, unsigned nend)
{
	uint8_t *p = o + 2;
	*p++ = PKT_TIMESTAMP << 3;
	p += tr_put_varint(p, delta);
	if (type == TYPE_BEGIN) {
		memcpy(p, begin, 8);
		p += nbegin;
		uint8_t *te = p++;
		*p++ = TE_TYPE << 3;
		*p++ = TYPE_BEGIN;
		*p++ = TE_NAME_IID << 3;
		p += tr_put_varint(p, fn + 1);
		*te = (uint8_t)(p - te - 1);
	} else {
		memcpy(p, end, 16);
		p += nend;
	}
	o[0] = TRACE_PACKET << 3 | 2;
	o[1] = (uint8_t)(p - o - 2);
	return p;
}

/* The common event (see pf_encode) encoded straight into the output. */
static void slice_packet_fast(struct pf *f, const struct tr_slice *s, int type, uint32_t fn)
{
	struct pf_thread *t = &f->th[s->thread];
	uint64_t ns = ns_of(f, type == TYPE_BEGIN ? s->start : s->end);
	uint64_t delta = ns > t->last_ns ? ns - t->last_ns : 0; /* thread_delta */
	if (ns > t->last_ns)
		t->last_ns = ns;
	uint8_t *o = (uint8_t *)bo_room(f->bo);
	bo_put(f->bo, (char *)pf_encode(o, delta, type, fn, t->begin, t->nbegin, t->end, t->nend));
}

static void slice_packet(struct pf *f, const struct tr_slice *s, int type)
{
	struct pb_buf *b = &f->b;
	const struct export_ctx *x = f->x;
	struct pf_thread *t = &f->th[s->thread];
	if (!t->started)
		thread_sequence(f, s->thread);
	uint32_t fn = fn_of(x->ft, x->r, s->func);
	int sent = t->sent && (t->sent[fn >> 3] >> (fn & 7) & 1);
	if ((type == TYPE_BEGIN && sent) || (type == TYPE_END && !s->flags)) {
		slice_packet_fast(f, s, type, fn);
		return;
	}
	pb_uint(b, PKT_TIMESTAMP, thread_delta(f, s->thread, type == TYPE_BEGIN ? s->start : s->end));
	pb_uint(b, PKT_SEQ_ID, 2 + (uint64_t)s->thread);
	if (type == TYPE_BEGIN && t->sent) {
		t->sent[fn >> 3] |= (uint8_t)(1u << (fn & 7));
		size_t id = pb_open(b, PKT_INTERNED);
		size_t en = pb_open(b, ID_EVENT_NAMES);
		pb_uint(b, EN_IID, fn + 1);
		pb_str(b, EN_NAME, x->ft->fns[fn].name);
		pb_close(b, en);
		pb_close(b, id);
	}
	size_t te = pb_open(b, PKT_TRACK_EVENT);
	pb_uint(b, TE_TYPE, (uint64_t)type);
	if (type == TYPE_BEGIN) {
		if (t->sent)
			pb_uint(b, TE_NAME_IID, fn + 1);
		else
			pb_str(b, TE_NAME, x->ft->fns[fn].name); /* past the interning budget */
	}
	if (type == TYPE_END && s->flags) {
		size_t da = pb_open(b, TE_DEBUG);
		pb_str(b, DA_NAME, "end");
		pb_str(b, DA_STRING, s->flags & TRS_ABNORMAL ? "non-local exit"
		                      : s->flags & TRS_AT_END ? "closed at thread end" : "closed at lost events");
		pb_close(b, da);
	}
	pb_close(b, te);
	flush_packet(f);
}

/* slice_packet with a copy of the slice: the decoder's (inlined) slice is
 * then never in memory on the fast paths. */
static __attribute__((noinline)) void slice_packet_copy(struct pf *f, uint32_t thread, uint32_t func, uint32_t flags,
                                                        uint64_t start, uint64_t end, int type)
{
	struct tr_slice s = { .thread = thread, .func = func, .flags = flags, .start = start, .end = end };
	slice_packet(f, &s, type);
}

/* The run-time callbacks (the decoder's cold paths: a thread's end,
 * damage, filters): the general path. */
static void on_begin(void *arg, const struct tr_slice *s)
{
	slice_packet(arg, s, TYPE_BEGIN);
}

static void on_end(void *arg, const struct tr_slice *s)
{
	slice_packet(arg, s, TYPE_END);
}

/* What the common events of one thread's chunk read and write, in locals
 * of the decoder's loop (RD_DECODER_HOT), so that the packets' byte stores
 * make the compiler reload none of it: the output's pointers, the
 * sequence's last time and precomputed bytes, the conversion to ns, the
 * function map. */
struct pf_hot {
	struct pf *f;
	uint8_t *at, *full;      /* the output (bulk_out_at) */
	uint64_t last_ns;        /* the thread's */
	const uint8_t *sent;     /* its interned names (pf.unsent if it has none: every BEGIN takes the general path) */
	int started;             /* its sequence is written (else every event takes the general path) */
	uint8_t begin[8], end[16];
	unsigned nbegin, nend;
	uint64_t start_ticks;
	struct tick_ns tn;
	const struct pf_mod *mods;
	uint32_t thread;
};

static inline __attribute__((always_inline)) void hot_load(void *arg, uint32_t thread, void *hot)
{
	struct pf *f = arg;
	struct pf_hot *h = hot;
	const struct pf_thread *t = &f->th[thread];
	const struct bulk_out_at *a = (const struct bulk_out_at *)f->bo;
	h->f = f;
	h->at = (uint8_t *)a->at;
	h->full = (uint8_t *)a->full;
	h->last_ns = t->last_ns;
	h->sent = t->sent ? t->sent : f->unsent;
	h->started = t->started;
	memcpy(h->begin, t->begin, sizeof h->begin);
	memcpy(h->end, t->end, sizeof h->end);
	h->nbegin = t->nbegin;
	h->nend = t->nend;
	h->start_ticks = f->start_ticks;
	h->tn = f->tn;
	h->mods = f->mods;
	h->thread = thread;
}

static inline __attribute__((always_inline)) void hot_save(void *arg, const void *hot)
{
	struct pf *f = arg;
	const struct pf_hot *h = hot;
	((struct bulk_out_at *)f->bo)->at = (char *)h->at; /* bo_put without the flush: at < full holds */
	f->th[h->thread].last_ns = h->last_ns;
}

/* slice_packet_fast on the hot state. */
static inline __attribute__((always_inline)) void hot_fast(struct pf_hot *h, uint64_t ticks, int type, uint32_t fn)
{
	uint64_t ns = ticks <= h->start_ticks ? 0 : tick_ns_of(&h->tn, ticks - h->start_ticks); /* ns_of */
	uint64_t delta = ns > h->last_ns ? ns - h->last_ns : 0;                                 /* thread_delta */
	if (ns > h->last_ns)
		h->last_ns = ns;
	h->at = pf_encode(h->at, delta, type, fn, h->begin, h->nbegin, h->end, h->nend);
	if (__builtin_expect(h->at >= h->full, 0)) { /* bo_put's flush */
		struct bulk_out_at *a = (struct bulk_out_at *)h->f->bo;
		a->at = (char *)h->at;
		bo_flush(h->f->bo);
		h->at = (uint8_t *)a->at;
		h->full = (uint8_t *)a->full;
	}
}

/* The rest through the general path, the hot state written back first and
 * read again after. */
static inline __attribute__((always_inline)) void hot_slow(struct pf_hot *h, const struct tr_slice *s, int type)
{
	hot_save(h->f, h);
	slice_packet_copy(h->f, s->thread, s->func, s->flags, s->start, s->end, type);
	hot_load(h->f, s->thread, h);
}

/* fn_of(ft, r, func) from the flattened table. */
static inline uint32_t pf_fn(const struct pf_mod *mods, uint32_t func)
{
	const struct pf_mod *m = &mods[SONDE_FUNC_MOD(func)];
	uint32_t num = SONDE_FUNC_NUM(func);
	return m->map[num < m->n ? num : m->n];
}

/* The common cases first, the function's name already interned on a
 * started sequence, and an END without annotation (no name to look up). */
static inline __attribute__((always_inline)) void hot_begin(void *hot, const struct tr_slice *s)
{
	struct pf_hot *h = hot;
	uint32_t fn = pf_fn(h->mods, s->func);
	if (h->sent[fn >> 3] >> (fn & 7) & 1) {
		hot_fast(h, s->start, TYPE_BEGIN, fn);
		return;
	}
	hot_slow(h, s, TYPE_BEGIN);
}

static inline __attribute__((always_inline)) void hot_end(void *hot, const struct tr_slice *s)
{
	struct pf_hot *h = hot;
	if (!s->flags && h->started) {
		hot_fast(h, s->end, TYPE_END, 0);
		return;
	}
	hot_slow(h, s, TYPE_END);
}

/* Probe hits (sonde probe --record): TYPE_INSTANT on the hit thread's track
 * (its sequence's default), named by the probe's spec (TrackEvent.name),
 * debug annotations "probe" (its id) and "value"; a func probe's calls are
 * BEGIN/END slices there (the decoder pairs and nests them). */
static void on_probe(void *arg, const struct tr_probe *h)
{
	struct pf *f = arg;
	struct pb_buf *b = &f->b;
	const struct export_ctx *x = f->x;
	if (!f->th[h->thread].started)
		thread_sequence(f, h->thread);
	int type = h->event == TRP_BEGIN ? TYPE_BEGIN : h->event == TRP_END ? TYPE_END : TYPE_INSTANT;
	pb_uint(b, PKT_TIMESTAMP, thread_delta(f, h->thread, h->time));
	pb_uint(b, PKT_SEQ_ID, 2 + (uint64_t)h->thread);
	size_t te = pb_open(b, PKT_TRACK_EVENT);
	pb_uint(b, TE_TYPE, (uint64_t)type);
	if (type != TYPE_END) {
		char nb[32];
		pb_str(b, TE_NAME, tr_probe_name(x->r, h->probe, nb, sizeof nb));
		size_t da = pb_open(b, TE_DEBUG);
		pb_str(b, DA_NAME, "probe");
		pb_uint(b, DA_INT, h->probe);
		pb_close(b, da);
	}
	if (h->vkind != TRV_NONE) {
		size_t da = pb_open(b, TE_DEBUG);
		pb_str(b, DA_NAME, "value");
		if (h->vkind == TRV_INT) {
			pb_uint(b, DA_INT, (uint64_t)h->i);
		} else if (h->vkind == TRV_FLOAT) {
			pb_fixed64(b, DA_DOUBLE, &h->f);
		} else {
			pb_bytes(b, DA_STRING, h->s, h->slen);
		}
		pb_close(b, da);
	}
	if (type == TYPE_END && h->flags) {
		size_t da = pb_open(b, TE_DEBUG);
		pb_str(b, DA_NAME, "end");
		pb_str(b, DA_STRING, h->flags & TRS_ABNORMAL ? "non-local exit"
		                      : h->flags & TRS_AT_END ? "closed at thread end" : "closed at lost events");
		pb_close(b, da);
	}
	pb_close(b, te);
	flush_packet(f);
}

static void on_lock(void *arg, const struct rd_lock_event *e)
{
	struct pf *f = arg;
	lks_lock(f->lks, e);
}

static void on_loss(void *arg, const struct rd_loss *e)
{
	struct pf *f = arg;
	lks_loss(f->lks, e);
}

static void on_lane(void *arg, uint32_t thread, uint32_t lane)
{
	struct pf *f = arg;
	struct pb_buf *b = &f->b;
	char name[64];
	lks_lane_name(f->x->r, thread, lane, name, sizeof name);
	pb_uint(b, PKT_SEQ_ID, SEQ_GLOBAL);
	size_t td = pb_open(b, PKT_TRACK_DESC);
	pb_uint(b, TD_UUID, LOCK_TRACK_UUID(thread, lane));
	pb_uint(b, TD_PARENT, f->thread_uuid[thread]);
	pb_str(b, TD_NAME, name);
	pb_close(b, td);
	flush_packet(f);
}

static void on_lock_slice(void *arg, const struct lks_slice *s)
{
	struct pf *f = arg;
	struct pb_buf *b = &f->b;
	const struct export_ctx *x = f->x;
	uint64_t iid = (uint64_t)x->ft->n + 2 + s->name_id;
	uint64_t track = LOCK_TRACK_UUID(s->thread, s->lane);
	for (int type = TYPE_BEGIN; type <= TYPE_END; type++) {
		pb_uint(b, PKT_TIMESTAMP, ns_of(f, type == TYPE_BEGIN ? s->start : s->end));
		pb_uint(b, PKT_SEQ_ID, SEQ_GLOBAL);
		pb_uint(b, PKT_SEQ_FLAGS, SEQ_NEEDS);
		if (type == TYPE_BEGIN) {
			if (s->name_id >= f->lk_cap) {
				uint32_t n = f->lk_cap ? f->lk_cap : 64;
				while (n <= s->name_id)
					n *= 2;
				f->lk_interned = realloc(f->lk_interned, n);
				memset(f->lk_interned + f->lk_cap, 0, n - f->lk_cap);
				f->lk_cap = n;
			}
			if (!f->lk_interned[s->name_id]) {
				f->lk_interned[s->name_id] = 1;
				size_t id = pb_open(b, PKT_INTERNED);
				size_t en = pb_open(b, ID_EVENT_NAMES);
				pb_uint(b, EN_IID, iid);
				pb_str(b, EN_NAME, s->name);
				pb_close(b, en);
				pb_close(b, id);
			}
		}
		size_t te = pb_open(b, PKT_TRACK_EVENT);
		pb_uint(b, TE_TYPE, (uint64_t)type);
		pb_uint(b, TE_TRACK_UUID, track);
		if (type == TYPE_BEGIN) {
			pb_uint(b, TE_NAME_IID, iid);
			size_t da = pb_open(b, TE_DEBUG);
			pb_str(b, DA_NAME, "kind");
			pb_str(b, DA_STRING, s->kind);
			pb_close(b, da);
			const char *note = s->flags & LKS_AT_END ? "closed at thread end"
			                   : s->flags & LKS_LOST ? "closed at lost events"
			                   : s->flags & LKS_TIMEOUT ? "timeout"
			                   : s->flags & LKS_CROSS ? "released by another thread"
			                   : s->flags & LKS_READ ? "read"
			                   : s->flags & LKS_FORKED ? "held across fork" : NULL;
			if (note) {
				da = pb_open(b, TE_DEBUG);
				pb_str(b, DA_NAME, "note");
				pb_str(b, DA_STRING, note);
				pb_close(b, da);
			}
		}
		pb_close(b, te);
		flush_packet(f);
	}
}

static void on_switch(void *arg, uint32_t thread, uint64_t time, uint64_t out, uint64_t len, int runnable, int32_t cpu)
{
	(void)time;
	struct pf *f = arg;
	ts_switch(f->tst, thread, out, len, runnable, cpu);
}

/* A system call (record --syscalls --trace): a slice "sys_NAME" on the
 * thread's track, inside the call that made it, with its result. */
static void on_syscall(void *arg, uint32_t thread, uint64_t time, uint32_t call, uint64_t ticks, int64_t result)
{
	struct pf *f = arg;
	struct pb_buf *b = &f->b;
	if (!f->th[thread].started)
		thread_sequence(f, thread);
	char name[48];
	snprintf(name, sizeof name, "sys_%s", sca_call_name(call));
	for (int type = TYPE_BEGIN; type <= TYPE_END; type++) {
		pb_uint(b, PKT_TIMESTAMP, thread_delta(f, thread, type == TYPE_BEGIN ? time - ticks : time));
		pb_uint(b, PKT_SEQ_ID, 2 + (uint64_t)thread);
		size_t te = pb_open(b, PKT_TRACK_EVENT);
		pb_uint(b, TE_TYPE, (uint64_t)type);
		if (type == TYPE_BEGIN) {
			pb_str(b, TE_NAME, name);
			size_t da = pb_open(b, TE_DEBUG);
			pb_str(b, DA_NAME, "result");
			pb_uint(b, DA_INT, (uint64_t)result);
			pb_close(b, da);
		}
		pb_close(b, te);
		flush_packet(f);
	}
}

static void on_state_track(void *arg, uint32_t thread)
{
	struct pf *f = arg;
	struct pb_buf *b = &f->b;
	char name[48];
	snprintf(name, sizeof name, "%d state", (int)f->x->r->threads[thread].r.tid);
	pb_uint(b, PKT_SEQ_ID, SEQ_GLOBAL);
	size_t td = pb_open(b, PKT_TRACK_DESC);
	pb_uint(b, TD_UUID, STATE_TRACK_UUID(thread));
	pb_uint(b, TD_PARENT, f->thread_uuid[thread]);
	pb_str(b, TD_NAME, name);
	pb_close(b, td);
	flush_packet(f);
}

static void on_state(void *arg, const struct ts_slice *s)
{
	struct pf *f = arg;
	struct pb_buf *b = &f->b;
	for (int type = TYPE_BEGIN; type <= TYPE_END; type++) {
		pb_uint(b, PKT_TIMESTAMP, ns_of(f, type == TYPE_BEGIN ? s->start : s->end));
		pb_uint(b, PKT_SEQ_ID, SEQ_GLOBAL);
		size_t te = pb_open(b, PKT_TRACK_EVENT);
		pb_uint(b, TE_TYPE, (uint64_t)type);
		pb_uint(b, TE_TRACK_UUID, STATE_TRACK_UUID(s->thread));
		if (type == TYPE_BEGIN) {
			pb_str(b, TE_NAME, ts_kind_name(s->kind));
			if (s->cpu >= 0) {
				size_t da = pb_open(b, TE_DEBUG);
				pb_str(b, DA_NAME, "cpu");
				pb_uint(b, DA_INT, (uint64_t)s->cpu);
				pb_close(b, da);
			}
		}
		pb_close(b, te);
		flush_packet(f);
	}
}

/* The decoder with hot_begin and hot_end compiled into its record loop (no
 * call per event, the state they use in registers); on_lock and on_loss do
 * nothing without lock slices. */
static const struct rd_event_ops pf_ops = { .call = on_begin, .ret = on_end, .lock = on_lock, .probe = on_probe,
                                            .loss = on_loss, .sw = on_switch, .syscall = on_syscall };
static const struct rd_hot_ops pf_hot_ops = { hot_load, hot_save, hot_begin, hot_end };
RD_DECODER_HOT(pf_chunk, pf_ops, pf_hot_ops, struct pf_hot)

/* The functions counted, not timed (record --timing), which have no
 * slices (REC_COUNTED): each a counter track of its thread, "calls: NAME",
 * 0 at the thread's start and its calls at its end; not in a time range
 * (their calls have no times). */
static void counted_tracks(struct pf *f)
{
	const struct export_ctx *x = f->x;
	const struct recording *r = x->r;
	struct pb_buf *b = &f->b;
	for (int i = 0; !x->has_range && i < r->nthreads; i++) {
		const struct rd_thread *t = &r->threads[i];
		if (!rd_thread_selected(r, &x->sel, t))
			continue;
		for (uint32_t k = 0; k < t->ncounted && k < COUNTED_MAX; k++) {
			char name[600];
			snprintf(name, sizeof name, "calls: %s", x->ft->fns[fn_of(x->ft, r, t->counted[k].func)].name);
			pb_uint(b, PKT_SEQ_ID, SEQ_GLOBAL);
			size_t td = pb_open(b, PKT_TRACK_DESC);
			pb_uint(b, TD_UUID, COUNTED_TRACK_UUID(i, k));
			pb_uint(b, TD_PARENT, f->thread_uuid[i]);
			pb_str(b, TD_NAME, name);
			pb_close(b, pb_open(b, TD_COUNTER)); /* an empty CounterDescriptor: a counter track */
			pb_close(b, td);
			flush_packet(f);
			for (int end = 0; end < 2; end++) {
				pb_uint(b, PKT_TIMESTAMP, ns_of(f, end ? t->r.end_tsc : t->r.start_tsc));
				pb_uint(b, PKT_SEQ_ID, SEQ_GLOBAL);
				size_t te = pb_open(b, PKT_TRACK_EVENT);
				pb_uint(b, TE_TYPE, TYPE_COUNTER);
				pb_uint(b, TE_TRACK_UUID, COUNTED_TRACK_UUID(i, k));
				pb_uint(b, TE_COUNTER_VALUE, end ? t->counted[k].calls : 0);
				pb_close(b, te);
				flush_packet(f);
			}
		}
	}
}

static int write_perfetto(struct export_ctx *x)
{
	const struct recording *r = x->r;
	struct pf f = { .x = x, .th = calloc(r->nthreads + 1, sizeof(struct pf_thread)),
	                .thread_uuid = calloc(r->nthreads + 1, sizeof(uint64_t)), .bo = bo_open(x->out),
	                };
	tick_ns_init(&f.tn, r->ticks_per_ns);
	f.start_ticks = r->start_ticks;
	static const uint32_t root[1] = { FN_ROOT }; /* fn_of of a slot without functions: map[min(num, 0)] */
	f.mods = malloc((SONDE_FUNC_MOD(UINT32_MAX) + 1) * sizeof *f.mods);
	for (uint32_t m = 0; f.mods && m <= SONDE_FUNC_MOD(UINT32_MAX); m++)
		if (m < x->ft->nslots && x->ft->map[m]) /* fn_of: a mapped slot has its module */
			f.mods[m] = (struct pf_mod){ x->ft->map[m], r->modules[m]->r.nfuncs };
		else
			f.mods[m] = (struct pf_mod){ root, 0 };
	f.unsent = calloc(((size_t)x->ft->n + 1 + 7) / 8, 1); /* as thread_sequence's bitmaps */
	if (!f.th || !f.thread_uuid || !f.bo || !f.mods || !f.unsent) {
		free(f.th);
		free(f.mods);
		free(f.unsent);
		free(f.thread_uuid);
		if (f.bo)
			bo_close(f.bo);
		snprintf(x->err, sizeof x->err, "out of memory");
		return -1;
	}
	struct pb_buf *b = &f.b;
	int first = 1;
	for (int i = 0; i < r->nprocs; i++) {
		const struct rec_process *p = &r->procs[i];
		const char *base = strrchr(p->exe, '/');
		pb_uint(b, PKT_SEQ_ID, SEQ_GLOBAL);
		if (first)
			pb_uint(b, PKT_SEQ_FLAGS, SEQ_CLEARED), first = 0;
		size_t td = pb_open(b, PKT_TRACK_DESC);
		pb_uint(b, TD_UUID, 0x100000000ull + p->index);
		size_t pd = pb_open(b, TD_PROCESS);
		pb_uint(b, PD_PID, (uint64_t)(int64_t)p->pid);
		pb_str(b, PD_NAME, base ? base + 1 : p->exe);
		pb_close(b, pd);
		pb_close(b, td);
		flush_packet(&f);
	}
	for (int i = 0; i < r->nthreads; i++) {
		const struct rd_thread *t = &r->threads[i];
		f.thread_uuid[i] = 1 + (uint64_t)t->r.index;
		if (!rd_thread_selected(r, &x->sel, t))
			continue;
		const struct rec_process *p = rd_proc(r, t->r.proc);
		pb_uint(b, PKT_SEQ_ID, SEQ_GLOBAL);
		if (first)
			pb_uint(b, PKT_SEQ_FLAGS, SEQ_CLEARED), first = 0;
		size_t td = pb_open(b, PKT_TRACK_DESC);
		pb_uint(b, TD_UUID, f.thread_uuid[i]);
		if (p)
			pb_uint(b, TD_PARENT, 0x100000000ull + p->index);
		size_t th = pb_open(b, TD_THREAD);
		pb_uint(b, THD_PID, (uint64_t)(int64_t)(p ? p->pid : 0));
		pb_uint(b, THD_TID, (uint64_t)(int64_t)t->r.tid);
		pb_str(b, THD_NAME, t->r.comm[0] ? t->r.comm : "thread");
		pb_close(b, th);
		pb_close(b, td);
		flush_packet(&f);
	}
	if (first) { /* no track at all: still clear the sequence state */
		pb_uint(b, PKT_SEQ_ID, SEQ_GLOBAL);
		pb_uint(b, PKT_SEQ_FLAGS, SEQ_CLEARED);
		flush_packet(&f);
	}
	struct tr_filter flt;
	tr_filter_init(&flt, r, &x->sel, x->has_range, x->from_s, x->to_s);
	static const struct lks_ops lops = { on_lane, on_lock_slice };
	f.lks = lks_open(r, &flt, &lops, &f);
	static const struct ts_ops tops = { on_state_track, on_state };
	f.tst = ts_open(r, &tops, &f);
	struct tr_stats st;
	int rc = rd_each_event_with(r, &flt, &pf_ops, &f, &st, x->err, sizeof x->err, pf_chunk);
	counted_tracks(&f);
	lks_close(f.lks, NULL);
	ts_close(f.tst);
	int werr = bo_close(f.bo) ? errno : 0;
	free(f.lk_interned);
	int oom = b->oom;
	pb_free(b);
	for (int i = 0; i < r->nthreads; i++)
		free(f.th[i].sent);
	free(f.th);
	free(f.thread_uuid);
	free(f.mods);
	free(f.unsent);
	if (oom && !rc) {
		snprintf(x->err, sizeof x->err, "out of memory");
		return -1;
	}
	if (werr || ferror(x->out)) {
		snprintf(x->err, sizeof x->err, "write error (%s)", strerror(werr ? werr : EIO));
		return -1;
	}
	return rc;
}

const struct export_ops export_perfetto = {
	"perfetto", "native Perfetto protobuf trace (ui.perfetto.dev), one slice per call, streamed", 1,
	write_perfetto,
};

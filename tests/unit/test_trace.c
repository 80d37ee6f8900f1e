/* test_trace.c — the production event iterator, rd_each_event() of
 * src/data/events.c, on events files written here from known calls.
 *
 * Every test writes an events.sonde (file header, REC_CHUNK records, REC_END,
 * laid out as docs/FORMAT.md and common/format.h say) whose chunk payloads
 * encode a call sequence chosen by the test: explicit bytes in
 * decode_explicit_bytes, otherwise encoded with the production encoder
 * tr_put_varint.  The expected slices (function, depth, start, end, flags),
 * EXT records and counters are the calls the test put in, never anything the
 * decoder said: the generator knows, for each call it made, its start and end
 * times, its depth and the indices of its ENTER and EXIT records.  Damaged
 * inputs (files cut at every byte, payloads cut at every byte, checksum and
 * length errors, malformed records, unknown threads, sequence gaps) must give
 * an error or a counted damage, never a crash, and leave every slice closed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/format.h"
#include "common/trace_enc.h"
#include "data/events.h"
#include "unit.h"

static char dir[64];

/* ---- the events file ---- */

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void b_put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 256;
		b->p = realloc(b->p, b->cap);
	}
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void file_hdr(struct buf *b)
{
	struct sonde_file_hdr h;
	memcpy(h.magic, SONDE_DATA_MAGIC, 8);
	h.version = SONDE_DATA_VERSION;
	h.kind = 2;
	b_put(b, &h, sizeof h);
}

static void file_rec(struct buf *b, uint32_t type, const void *p, uint64_t len)
{
	struct sonde_rec_hdr h = { type, len ? crc32_ieee(0, p, len) : 0, len };
	b_put(b, &h, sizeof h);
	b_put(b, p, len);
}

static void file_chunk(struct buf *b, uint32_t slot, uint64_t seq, uint64_t base, uint32_t lost, const uint8_t *pay,
                       uint32_t used)
{
	uint8_t *tmp = malloc(sizeof(struct rec_chunk) + used + 1);
	struct rec_chunk c;
	memset(&c, 0, sizeof c);
	c.used = used;
	c.seq = seq;
	c.base_tsc = base;
	c.thread = slot;
	c.lost = lost;
	memcpy(tmp, &c, sizeof c);
	if (used)
		memcpy(tmp + sizeof c, pay, used);
	file_rec(b, REC_CHUNK, tmp, sizeof c + used);
	free(tmp);
}

static void file_end(struct buf *b) { file_rec(b, REC_END, NULL, 0); }

static void write_events(const struct buf *b, size_t n)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, SONDE_FILE_EVENTS);
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	CHECK(fwrite(b->p, 1, n, f) == n);
	CHECK(fclose(f) == 0);
}

/* ---- the recording: two threads (slots 7 and 3), modules in slots 0 and 2 ---- */

#define NTH 2
static const uint32_t SLOT[NTH] = { 7, 3 };
static const int32_t TID[NTH] = { 101, 102 };
#define THREAD_END (1ull << 60)
#define PROC_END ((1ull << 60) + 500)

struct fx {
	struct recording r;
	struct rec_process proc;
	struct rd_thread th[NTH];
	struct rd_module m0, m2;
	struct rd_module *mods[3];
};

static void fx_init(struct fx *x)
{
	memset(x, 0, sizeof *x);
	x->r.dir = dir;
	x->r.ticks_per_ns = 1;
	x->proc.index = 0;
	x->proc.end_tsc = PROC_END;
	x->r.procs = &x->proc;
	x->r.nprocs = 1;
	for (int i = 0; i < NTH; i++) {
		x->th[i].r.index = SLOT[i];
		x->th[i].r.tid = TID[i];
		x->th[i].r.proc = 0;
		x->th[i].r.end_tsc = THREAD_END;
	}
	x->r.threads = x->th;
	x->r.nthreads = NTH;
	x->m0.r.index = 0;
	x->m0.r.nfuncs = 50;
	x->m2.r.index = 2;
	x->m2.r.nfuncs = 2000;
	x->mods[0] = &x->m0;
	x->mods[2] = &x->m2;
	x->r.modules = x->mods;
	x->r.nmodule_slots = 3;
	x->r.nmodules = 2;
	x->r.has_events = 1;
}

/* ---- what the decoder passes on ---- */

#define MAXG 16384
struct gext {           /* a lock or name event as delivered */
	uint32_t thread;
	uint64_t time;
	uint8_t type;          /* TRX_LOCK or TRX_NAME */
	uint32_t lock, op;     /* TRX_LOCK */
	uint64_t aux;
	int len;               /* TRX_NAME */
	uint8_t p[32];
};
static struct got {
	struct tr_slice b[MAXG], e[MAXG];
	int nb, ne;
	struct gext x[MAXG];
	int nx;
	struct glife {     /* starts, ends, losses and slice ends, in the order passed on */
		char what;     /* 'P' 'T' process / thread start, 'p' 't' their end, 'L' loss, 'e' slice end */
		uint32_t id;   /* process slot, thread index, loss cause */
		uint64_t time, count;
	} l[MAXG];
	int nl;
} G;

static void life(struct got *g, char what, uint32_t id, uint64_t time, uint64_t count)
{
	CHECK(g->nl < MAXG);
	if (g->nl < MAXG)
		g->l[g->nl++] = (struct glife){ what, id, time, count };
}
static void on_pstart(void *a, uint32_t p, uint64_t t) { life(a, 'P', p, t, 0); }
static void on_pend(void *a, uint32_t p, uint64_t t) { life(a, 'p', p, t, 0); }
static void on_tstart(void *a, uint32_t th, uint64_t t) { life(a, 'T', th, t, 0); }
static void on_tend(void *a, uint32_t th, uint64_t t) { life(a, 't', th, t, 0); }
static void on_loss(void *a, const struct rd_loss *l)
{
	CHECK_EQ_U(l->thread, 0);
	life(a, 'L', (uint32_t)l->cause, l->time, l->count);
}

static void on_begin(void *a, const struct tr_slice *s)
{
	struct got *g = a;
	CHECK(g->nb < MAXG);
	CHECK(s->end == 0 && (s->flags & ~(uint32_t)TRS_RESUMED) == 0);
	g->b[g->nb++] = *s;
}

static void on_end(void *a, const struct tr_slice *s)
{
	struct got *g = a;
	CHECK(g->ne < MAXG);
	g->e[g->ne++] = *s;
	if (g->nl < MAXG)
		g->l[g->nl++] = (struct glife){ 'e', s->thread, s->end, 0 };
}

static void on_lock(void *a, const struct rd_lock_event *e)
{
	struct got *g = a;
	CHECK(g->nx < MAXG);
	g->x[g->nx++] = (struct gext){ .thread = e->thread, .time = e->time, .type = TRX_LOCK, .lock = e->lock,
	                               .op = e->op, .aux = e->aux };
}

static void on_name(void *a, uint32_t thread, uint64_t time, const char *name, uint32_t len)
{
	struct got *g = a;
	CHECK(g->nx < MAXG && len <= 32);
	struct gext *x = &g->x[g->nx++];
	*x = (struct gext){ .thread = thread, .time = time, .type = TRX_NAME, .len = (int)len };
	memcpy(x->p, name, len);
}

static const struct rd_event_ops OPS = { .call = on_begin, .ret = on_end, .lock = on_lock, .name = on_name };
/* The same with the lifecycle and loss callbacks (gaps_and_lost). */
static const struct rd_event_ops OPS_LIFE = { .call = on_begin, .ret = on_end, .loss = on_loss,
                                              .thread_start = on_tstart, .thread_end = on_tend,
                                              .process_start = on_pstart, .process_end = on_pend };

static int decode(struct fx *x, const struct tr_filter *f, struct tr_stats *st, char *err, size_t errlen)
{
	memset(&G, 0, sizeof G);
	struct tr_filter none;
	memset(&none, 0, sizeof none);
	err[0] = 0;
	return rd_each_event(&x->r, f ? f : &none, &OPS, &G, st, err, errlen);
}

#define CHECK_SLICE(s, th, fn, dep, t0, t1, fl) do { \
	CHECK_EQ_U((s).thread, th); CHECK_EQ_U((s).func, fn); CHECK_EQ_U((s).depth, dep); \
	CHECK_EQ_U((s).start, t0); CHECK_EQ_U((s).end, t1); CHECK_EQ_U((s).flags, fl); } while (0)

/* ---- 1. the varint encoding against LEB128 bytes written out by hand ---- */

static void varint_known_bytes(void)
{
	static const struct { uint64_t v; int n; uint8_t b[10]; } k[] = {
		{ 0, 1, { 0x00 } },
		{ 1, 1, { 0x01 } },
		{ 127, 1, { 0x7f } },
		{ 128, 2, { 0x80, 0x01 } },
		{ 300, 2, { 0xac, 0x02 } },
		{ 16383, 2, { 0xff, 0x7f } },
		{ 16384, 3, { 0x80, 0x80, 0x01 } },
		{ 0xffffffffull, 5, { 0xff, 0xff, 0xff, 0xff, 0x0f } },
		{ ~0ull, 10, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 } },
	};
	for (unsigned i = 0; i < sizeof k / sizeof k[0]; i++) {
		uint8_t b[TR_MAX_VARINT + 1];
		memset(b, 0xee, sizeof b);
		CHECK_EQ_U(tr_put_varint(b, k[i].v), k[i].n);
		CHECK(memcmp(b, k[i].b, (size_t)k[i].n) == 0);
		CHECK_EQ_U(b[k[i].n], 0xee); /* nothing written past it */
		uint64_t v = 12345;
		CHECK_EQ_U(tr_get_varint(k[i].b, k[i].b + k[i].n, &v), k[i].n);
		CHECK_EQ_U(v, k[i].v);
		v = 12345;
		CHECK_EQ_U(tr_get_varint(k[i].b, k[i].b + k[i].n - 1, &v), 0); /* one byte short */
		CHECK_EQ_U(v, 12345);
	}
	uint8_t eleven[11];
	memset(eleven, 0x80, 10);
	eleven[10] = 0;
	uint64_t v;
	CHECK_EQ_U(tr_get_varint(eleven, eleven + 11, &v), 0); /* longer than any 64-bit value */
	/* A call of function 1000 of the executable, 4000-tick gaps: 2 + 2 + 2 bytes
	 * (4000 << 2 = 16000 < 2^14; 1000 < 2^14). */
	uint8_t c[32];
	int n = tr_put_varint(c, 4000u << 2 | TR_ENTER);
	n += tr_put_varint(c + n, SONDE_FUNC(0, 1000));
	n += tr_put_varint(c + n, 4000u << 2 | TR_EXIT);
	CHECK_EQ_U(n, 6);
}

/* ---- 2. a chunk written byte by byte ---- */

static void decode_explicit_bytes(void)
{
	struct fx x;
	fx_init(&x);
	/* base 1000.  ENTER dt 0 f(0,5); ENTER dt 3 f(2,77); EXIT dt 200;
	 * EXT dt 1 TRX_LOCK idx 5 op 0 aux 300; EXT dt 0 TRX_NAME "w1";
	 * EXT dt 2 type 200 len 3 {1,2,3}; EXIT dt 40.
	 * SONDE_FUNC(2,77) = 2<<20 | 77 = 0x20004d -> cd 80 80 01;
	 * 3<<2|0 = 0x0c; 200<<2|1 = 801 -> a1 06; 1<<2|3 = 07; 0<<2|3 = 03;
	 * 2<<2|3 = 0b; 40<<2|1 = 161 -> a1 01; 300 -> ac 02. */
	static const uint8_t pay[] = {
		0x00, 0x05,
		0x0c, 0xcd, 0x80, 0x80, 0x01,
		0xa1, 0x06,
		0x07, 0x01, 0x05, 0x00, 0xac, 0x02,
		0x03, 0x02, 0x02, 'w', '1',
		0x0b, 0xc8, 0x03, 0x01, 0x02, 0x03,
		0xa1, 0x01,
	};
	struct buf b = { 0 };
	file_hdr(&b);
	file_chunk(&b, SLOT[1], 0, 1000, 0, pay, sizeof pay);
	file_end(&b);
	write_events(&b, b.n);
	struct tr_stats st;
	char err[512];
	CHECK_EQ_U(decode(&x, NULL, &st, err, sizeof err), 0);
	CHECK_EQ_U(G.nb, 2);
	CHECK_EQ_U(G.ne, 2);
	CHECK_SLICE(G.b[0], 1, SONDE_FUNC(0, 5), 1, 1000, 0, 0);
	CHECK_SLICE(G.b[1], 1, SONDE_FUNC(2, 77), 2, 1003, 0, 0);
	CHECK_SLICE(G.e[0], 1, SONDE_FUNC(2, 77), 2, 1003, 1203, 0);
	CHECK_SLICE(G.e[1], 1, SONDE_FUNC(0, 5), 1, 1000, 1246, 0);
	/* lock 5, op 0, aux 0xac 0x02 = 44 + 2 * 128; the name "w1"; type 200 is
	 * a later version's: skipped, not delivered */
	CHECK_EQ_U(G.nx, 2);
	CHECK_EQ_U(G.x[0].thread, 1); CHECK_EQ_U(G.x[0].time, 1204); CHECK_EQ_U(G.x[0].type, TRX_LOCK);
	CHECK_EQ_U(G.x[0].lock, 5); CHECK_EQ_U(G.x[0].op, 0); CHECK_EQ_U(G.x[0].aux, 300);
	CHECK_EQ_U(G.x[1].time, 1204); CHECK_EQ_U(G.x[1].type, TRX_NAME);
	CHECK_EQ_U(G.x[1].len, 2); CHECK(memcmp(G.x[1].p, "w1", 2) == 0);
	CHECK_EQ_U(st.chunks, 1); CHECK_EQ_U(st.bytes, sizeof pay);
	CHECK_EQ_U(st.records, 7); CHECK_EQ_U(st.calls, 2); CHECK_EQ_U(st.ext, 3);
	CHECK_EQ_U(st.lock_events, 1);
	CHECK_EQ_U(st.bad, 0); CHECK_EQ_U(st.gaps, 0); CHECK_EQ_U(st.unmatched, 0);
	CHECK_EQ_U(st.closed_at_end, 0); CHECK_EQ_U(st.abnormal, 0);
	free(b.p);
}

/* ---- a generator of known call sequences ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct rin {
	uint8_t kind;        /* TR_* */
	uint64_t t;
	uint32_t func;       /* ENTER */
	uint8_t xtype, xn;   /* EXT: type and field bytes */
	uint8_t x[24];
	uint32_t lock, op;   /* TRX_LOCK: the values encoded in x */
	uint64_t aux;
};
struct call {
	uint32_t func, depth;
	uint64_t start, end;
	int enter_rec, exit_rec;
};
#define MAXR 8192
#define MAXC 2048
struct stream {
	struct rin r[MAXR];
	int nr;
	struct call c[MAXC];   /* in ENTER order */
	int nc;
	int by_end[MAXC];      /* call indices in EXIT order */
	int ne;
	int ext[MAXR];         /* record indices of the EXT records delivered (lock, name) */
	int nx;
	int nxall;             /* EXT records, the skipped types too */
	uint64_t t;
};

static uint64_t gap(void)
{
	switch (rnd() % 16) {
	case 0: return 0;                                 /* same tick */
	case 1: return (1ull << 40) + rnd() % 1000;      /* 7-byte varint */
	case 2: case 3: return 4096 + rnd() % 100000;    /* 3-byte varint */
	default: return rnd() % 32;                       /* 1 byte with the kind */
	}
}

static uint32_t rfunc(void)
{
	switch (rnd() % 5) {
	case 0: return SONDE_FUNC(0, rnd() % 50);
	case 1: return SONDE_FUNC(2, 1999);               /* largest of slot 2 */
	case 2: return SONDE_FUNC(2, SONDE_UNNUMBERED);   /* unnumbered: valid */
	case 3: return SONDE_FUNC(0, 0);
	default: return SONDE_FUNC(2, rnd() % 2000);
	}
}

static int push(struct stream *s, struct rin r)
{
	CHECK(s->nr < MAXR);
	s->r[s->nr] = r;
	return s->nr++;
}

static void maybe_ext(struct stream *s)
{
	if (rnd() % 4)
		return;
	struct rin r = { .kind = TR_EXT };
	s->t += gap();
	r.t = s->t;
	switch (rnd() % 3) {
	case 0: /* TRX_LOCK: varint(index), byte(op), varint(aux) */
		r.xtype = TRX_LOCK;
		r.lock = (uint32_t)(rnd() % 100000);
		r.op = (uint32_t)(rnd() % 256);
		r.aux = rnd() >> (rnd() % 64);
		r.xn = (uint8_t)tr_put_varint(r.x, r.lock);
		r.x[r.xn++] = (uint8_t)r.op;
		r.xn += (uint8_t)tr_put_varint(r.x + r.xn, r.aux);
		break;
	case 1: /* TRX_NAME: byte(len), bytes */
		r.xtype = TRX_NAME;
		r.x[0] = (uint8_t)(rnd() % 16);
		for (int i = 0; i < r.x[0]; i++)
			r.x[1 + i] = (uint8_t)('a' + i);
		r.xn = (uint8_t)(1 + r.x[0]);
		break;
	default: /* a sized type this decoder does not know: varint(len), bytes */
		r.xtype = (uint8_t)(TRX_LAST_KNOWN + 1 + rnd() % (255 - TRX_LAST_KNOWN)); /* after the last known one */
		r.x[0] = (uint8_t)(rnd() % 20);
		for (int i = 0; i < r.x[0]; i++)
			r.x[1 + i] = (uint8_t)rnd();
		r.xn = (uint8_t)(1 + r.x[0]);
		s->nxall++;
		push(s, r);
		return;
	}
	s->nxall++;
	s->ext[s->nx++] = push(s, r);
}

static void gen_call(struct stream *s, uint32_t depth, uint32_t maxdepth, int budget)
{
	CHECK(s->nc < MAXC);
	int ci = s->nc++;
	struct call *c = &s->c[ci];
	c->func = rfunc();
	c->depth = depth;
	s->t += gap();
	c->start = s->t;
	c->enter_rec = push(s, (struct rin){ .kind = TR_ENTER, .t = s->t, .func = c->func });
	maybe_ext(s);
	int kids = depth < maxdepth ? (int)(rnd() % 4) : 0;
	for (int k = 0; k < kids && s->nc < budget; k++)
		gen_call(s, depth + 1, maxdepth, budget);
	maybe_ext(s);
	s->t += gap();
	c = &s->c[ci];
	c->end = s->t;
	c->exit_rec = push(s, (struct rin){ .kind = TR_EXIT, .t = s->t });
	s->by_end[s->ne++] = ci;
}

static void gen(struct stream *s, uint64_t t0, int ncalls)
{
	memset(s, 0, sizeof *s);
	s->t = t0;
	while (s->nc < ncalls)
		gen_call(s, 1, 12, ncalls);
}

/* Encode record r (time prev before it); returns its size, *head the size
 * of its first varint. */
static int enc(uint8_t *p, const struct rin *r, uint64_t prev, int *head)
{
	int n = tr_put_varint(p, (r->t - prev) << 2 | r->kind);
	if (head)
		*head = n;
	if (r->kind == TR_ENTER)
		n += tr_put_varint(p + n, r->func);
	else if (r->kind == TR_EXT) {
		p[n++] = r->xtype;
		memcpy(p + n, r->x, r->xn);
		n += r->xn;
	}
	return n;
}

/* A stream cut into chunks of at most `cap` payload bytes; each chunk's base
 * is a time between the previous record and its first. */
struct chunk {
	uint32_t slot;
	uint64_t seq, base;
	uint32_t used;
	uint8_t p[256];
};
static int to_chunks(const struct stream *s, uint32_t slot, int cap, uint64_t t0, struct chunk *out, int max)
{
	int n = 0;
	uint64_t prev = t0;
	for (int i = 0; i < s->nr; i++) {
		uint8_t tmp[64];
		int k = enc(tmp, &s->r[i], prev, NULL);
		if (!n || out[n - 1].used + (uint32_t)k > (uint32_t)cap) {
			CHECK(n < max);
			struct chunk *c = &out[n++];
			c->slot = slot;
			c->seq = (uint64_t)(n - 1);
			c->base = prev + (s->r[i].t - prev) / 2;
			c->used = 0;
			k = enc(tmp, &s->r[i], c->base, NULL);
		}
		memcpy(out[n - 1].p + out[n - 1].used, tmp, (size_t)k);
		out[n - 1].used += (uint32_t)k;
		prev = s->r[i].t;
	}
	return n;
}

/* Expected begins / ends of one thread, in order, against what came. */
static void check_thread(uint32_t th, const struct stream *s)
{
	int b = 0, e = 0;
	for (int i = 0; i < G.nb; i++) {
		if (G.b[i].thread != th)
			continue;
		CHECK(b < s->nc);
		const struct call *c = &s->c[b++];
		CHECK_SLICE(G.b[i], th, c->func, c->depth, c->start, 0, 0);
	}
	for (int i = 0; i < G.ne; i++) {
		if (G.e[i].thread != th)
			continue;
		CHECK(e < s->ne);
		const struct call *c = &s->c[s->by_end[e++]];
		CHECK_SLICE(G.e[i], th, c->func, c->depth, c->start, c->end, 0);
	}
	CHECK_EQ_U(b, s->nc);
	CHECK_EQ_U(e, s->ne);
	int x = 0;
	for (int i = 0; i < G.nx; i++) {
		if (G.x[i].thread != th)
			continue;
		CHECK(x < s->nx);
		const struct rin *r = &s->r[s->ext[x++]];
		CHECK_EQ_U(G.x[i].time, r->t);
		CHECK_EQ_U(G.x[i].type, r->xtype);
		if (r->xtype == TRX_LOCK) {
			CHECK_EQ_U(G.x[i].lock, r->lock);
			CHECK_EQ_U(G.x[i].op, r->op);
			CHECK_EQ_U(G.x[i].aux, r->aux);
		} else {
			CHECK_EQ_U(G.x[i].len, r->x[0]);
			CHECK(memcmp(G.x[i].p, r->x + 1, r->x[0]) == 0);
		}
	}
	CHECK_EQ_U(x, s->nx);
}

static struct stream S[NTH];
static struct chunk CH[NTH][4096];
static int NCH[NTH];

/* Two threads' streams, chunked, interleaved in the file in a random order
 * that keeps each thread's chunks in sequence. */
static void build_two(struct buf *b, int ncalls, int cap)
{
	for (int t = 0; t < NTH; t++) {
		gen(&S[t], 1000 + 77 * (uint64_t)t, ncalls);
		NCH[t] = to_chunks(&S[t], SLOT[t], cap, 1000 + 77 * (uint64_t)t, CH[t], 4096);
	}
	memset(b, 0, sizeof *b);
	file_hdr(b);
	int i[NTH] = { 0 };
	while (i[0] < NCH[0] || i[1] < NCH[1]) {
		int t = i[0] == NCH[0] ? 1 : i[1] == NCH[1] ? 0 : (int)(rnd() % 2);
		const struct chunk *c = &CH[t][i[t]++];
		file_chunk(b, c->slot, c->seq, c->base, 0, c->p, c->used);
	}
	file_end(b);
}

/* ---- 3. nested calls over many chunks and two threads ---- */

static void decode_generated(void)
{
	struct fx x;
	fx_init(&x);
	for (int round = 0; round < 4; round++) {
		struct buf b;
		build_two(&b, 1500, round == 0 ? 24 : round == 1 ? 60 : 200);
		write_events(&b, b.n);
		struct tr_stats st;
		char err[512];
		CHECK_EQ_U(decode(&x, NULL, &st, err, sizeof err), 0);
		check_thread(0, &S[0]);
		check_thread(1, &S[1]);
		CHECK_EQ_U(st.chunks, NCH[0] + NCH[1]);
		CHECK_EQ_U(st.records, S[0].nr + S[1].nr);
		CHECK_EQ_U(st.calls, S[0].nc + S[1].nc);
		CHECK_EQ_U(st.ext, S[0].nxall + S[1].nxall);
		CHECK_EQ_U(st.bad, 0); CHECK_EQ_U(st.gaps, 0); CHECK_EQ_U(st.lost, 0);
		CHECK_EQ_U(st.unmatched, 0); CHECK_EQ_U(st.closed_at_end, 0); CHECK_EQ_U(st.abnormal, 0);
		free(b.p);
	}
}

/* ---- 4. abnormal exits, slices open at the end, unmatched exits, bad ids ---- */

static int enc_seq(uint8_t *p, uint64_t base, const struct rin *r, int n)
{
	int k = 0;
	for (int i = 0; i < n; i++) {
		k += enc(p + k, &r[i], base, NULL);
		base = r[i].t;
	}
	return k;
}

static void abnormal_and_end(void)
{
	struct fx x;
	fx_init(&x);
	x.th[0].r.end_tsc = 5000;
	x.th[1].r.end_tsc = 0; /* not known: the process's end */
	uint32_t fa = SONDE_FUNC(0, 1), fb = SONDE_FUNC(0, 2), fc = SONDE_FUNC(2, 3);
	uint32_t bad = SONDE_FUNC(1, 4); /* module slot 1 has no module */
	struct rin r0[] = {
		{ .kind = TR_EXIT, .t = 5 },              /* nothing open: unmatched */
		{ .kind = TR_ENTER, .t = 10, .func = fa },
		{ .kind = TR_ENTER, .t = 20, .func = fb },
		{ .kind = TR_EXIT_ABNORMAL, .t = 30 },    /* fb skipped by longjmp */
		{ .kind = TR_EXIT, .t = 40 },             /* fa returns */
		{ .kind = TR_ENTER, .t = 50, .func = bad },
		{ .kind = TR_EXIT, .t = 60 },
		{ .kind = TR_ENTER, .t = 70, .func = fc },
		{ .kind = TR_ENTER, .t = 80, .func = fa }, /* both open at the thread's end */
	};
	struct rin r1[] = { { .kind = TR_ENTER, .t = 100, .func = fb } };
	uint8_t p[256];
	struct buf b = { 0 };
	file_hdr(&b);
	file_chunk(&b, SLOT[0], 0, 0, 0, p, (uint32_t)enc_seq(p, 0, r0, 9));
	file_chunk(&b, SLOT[1], 0, 90, 0, p, (uint32_t)enc_seq(p, 90, r1, 1));
	file_end(&b);
	write_events(&b, b.n);
	struct tr_stats st;
	char err[512];
	CHECK_EQ_U(decode(&x, NULL, &st, err, sizeof err), 0);
	CHECK_EQ_U(G.nb, 6);
	CHECK_EQ_U(G.ne, 6);
	CHECK_SLICE(G.e[0], 0, fb, 2, 20, 30, TRS_ABNORMAL);
	CHECK_SLICE(G.e[1], 0, fa, 1, 10, 40, 0);
	CHECK_SLICE(G.e[2], 0, bad, 1, 50, 60, 0);        /* kept, counted as bad */
	/* open at the end: innermost first, at the thread's end time */
	CHECK_SLICE(G.e[3], 0, fa, 2, 80, 5000, TRS_AT_END);
	CHECK_SLICE(G.e[4], 0, fc, 1, 70, 5000, TRS_AT_END);
	CHECK_SLICE(G.e[5], 1, fb, 1, 100, PROC_END, TRS_AT_END);
	CHECK_EQ_U(st.unmatched, 1);
	CHECK_EQ_U(st.abnormal, 1);
	CHECK_EQ_U(st.closed_at_end, 3);
	CHECK_EQ_U(st.bad, 1);
	CHECK_EQ_U(st.calls, 6);
	CHECK_EQ_U(st.records, 10);
	free(b.p);
}

/* ---- 5. sequence gaps and lost events close what is open ---- */

/* A forked child's inherited frame (TRX_RESUME) nests its calls like a
 * call, and is flagged as not a call (bytes written out by hand). */
static void resumed_frame(void)
{
	struct fx x;
	fx_init(&x);
	/* t=1000 RESUME f(0,5): EXT, type 65, len 1, func 5; t=1004 ENTER f(0,6);
	 * t=1010 EXIT; t=1020 EXIT (of the resumed frame) */
	static const uint8_t pay[] = {
		0x03, 65, 0x01, 0x05,
		0x10, 0x06,
		0x19,
		0x29,
	};
	struct buf b = { 0 };
	file_hdr(&b);
	file_chunk(&b, SLOT[0], 0, 1000, 0, pay, sizeof pay);
	file_end(&b);
	write_events(&b, b.n);
	struct tr_stats st;
	char err[512];
	CHECK_EQ_U(decode(&x, NULL, &st, err, sizeof err), 0);
	CHECK_EQ_U(G.nb, 2);
	CHECK_EQ_U(G.ne, 2);
	CHECK_SLICE(G.e[0], 0, SONDE_FUNC(0, 6), 2, 1004, 1010, 0);
	CHECK_SLICE(G.e[1], 0, SONDE_FUNC(0, 5), 1, 1000, 1020, TRS_RESUMED);
	CHECK_EQ_U(st.calls, 1); /* the resumed frame is not a call */
	CHECK_EQ_U(st.bad, 0);
	free(b.p);
}

static void gaps_and_lost(void)
{
	struct fx x;
	fx_init(&x);
	uint32_t f1 = SONDE_FUNC(0, 1), f2 = SONDE_FUNC(0, 2), f3 = SONDE_FUNC(0, 3);
	struct rin c0[] = { { .kind = TR_ENTER, .t = 100, .func = f1 }, { .kind = TR_ENTER, .t = 105, .func = f2 } };
	struct rin c2[] = { { .kind = TR_EXIT, .t = 210 }, { .kind = TR_EXIT, .t = 220 },
	                    { .kind = TR_ENTER, .t = 300, .func = f3 } };
	struct rin c3[] = { { .kind = TR_EXIT, .t = 400 }, { .kind = TR_ENTER, .t = 410, .func = f1 },
	                    { .kind = TR_EXIT, .t = 420 } };
	uint8_t p[256];
	struct buf b = { 0 };
	file_hdr(&b);
	file_chunk(&b, SLOT[0], 0, 100, 0, p, (uint32_t)enc_seq(p, 100, c0, 2));
	/* seq 1 is missing */
	file_chunk(&b, SLOT[0], 2, 200, 0, p, (uint32_t)enc_seq(p, 200, c2, 3));
	/* 4 events dropped before seq 3 */
	file_chunk(&b, SLOT[0], 3, 390, 4, p, (uint32_t)enc_seq(p, 390, c3, 3));
	file_end(&b);
	write_events(&b, b.n);
	struct tr_stats st;
	char err[512];
	memset(&G, 0, sizeof G);
	CHECK_EQ_U(rd_each_event(&x.r, NULL, &OPS_LIFE, &G, &st, err, sizeof err), 0);
	CHECK_EQ_U(G.ne, 4);
	/* The order: the process and thread start at the first event (their
	 * records give no start time); the gap closes what was open, then is
	 * said, at the last time known (105), one chunk; the 4 dropped events
	 * likewise at 300; the thread ends at its recorded end, the process at
	 * its own. */
	static const struct glife want[] = {
		{ 'P', 0, 100, 0 }, { 'T', 0, 100, 0 },
		{ 'e', 0, 105, 0 }, { 'e', 0, 105, 0 }, { 'L', RDL_GAP, 105, 1 },
		{ 'e', 0, 300, 0 }, { 'L', RDL_DROPPED, 300, 4 },
		{ 'e', 0, 420, 0 },
		{ 't', 0, THREAD_END, 0 }, { 'p', 0, PROC_END, 0 },
	};
	CHECK_EQ_U(G.nl, sizeof want / sizeof want[0]);
	for (int i = 0; i < G.nl && i < (int)(sizeof want / sizeof want[0]); i++) {
		CHECK_EQ_U(G.l[i].what, want[i].what);
		CHECK_EQ_U(G.l[i].id, want[i].id);
		CHECK_EQ_U(G.l[i].time, want[i].time);
		CHECK_EQ_U(G.l[i].count, want[i].count);
	}
	/* the gap: both open slices end at the last time known, 105 */
	CHECK_SLICE(G.e[0], 0, f2, 2, 105, 105, TRS_LOST);
	CHECK_SLICE(G.e[1], 0, f1, 1, 100, 105, TRS_LOST);
	/* the loss: f3 ends at 300, the last time before it */
	CHECK_SLICE(G.e[2], 0, f3, 1, 300, 300, TRS_LOST);
	CHECK_SLICE(G.e[3], 0, f1, 1, 410, 420, 0);
	CHECK_EQ_U(st.gaps, 1);
	CHECK_EQ_U(st.lost, 4);
	CHECK_EQ_U(st.unmatched, 3); /* 210, 220, 400 */
	CHECK_EQ_U(st.bad, 0);
	free(b.p);
}

/* ---- 6. a chunk's payload cut at every byte (checksums valid) ---- */

static void payload_cut_every_byte(void)
{
	struct fx x;
	fx_init(&x);
	static struct stream s;
	gen(&s, 500, 60);
	uint8_t *pay = malloc(MAXR * 64);
	int *off = malloc(sizeof *off * (MAXR + 1)), *head = malloc(sizeof *head * MAXR);
	uint64_t base = 490, prev = base;
	off[0] = 0;
	for (int i = 0; i < s.nr; i++) {
		off[i + 1] = off[i] + enc(pay + off[i], &s.r[i], prev, &head[i]);
		prev = s.r[i].t;
	}
	uint32_t used = (uint32_t)off[s.nr];
	CHECK(used < 4096);
	for (uint32_t u = 0; u <= used; u++) {
		struct buf b = { 0 };
		file_hdr(&b);
		file_chunk(&b, SLOT[0], 0, base, 0, pay, u);
		file_end(&b);
		write_events(&b, b.n);
		int k = 0; /* records complete within u bytes */
		while (k < s.nr && (uint32_t)off[k + 1] <= u)
			k++;
		int inside = (uint32_t)off[k] != u;
		struct tr_stats st;
		char err[512];
		CHECK_EQ_U(decode(&x, NULL, &st, err, sizeof err), 0);
		CHECK_EQ_U(st.bad, inside);
		CHECK_EQ_U(st.records, k + (inside && u >= (uint32_t)(off[k] + head[k])));
		/* begins: every call whose ENTER is complete, in order */
		int nb = 0;
		while (nb < s.nc && s.c[nb].enter_rec < k)
			nb++;
		CHECK_EQ_U(G.nb, nb);
		for (int i = 0; i < nb; i++)
			CHECK_SLICE(G.b[i], 0, s.c[i].func, s.c[i].depth, s.c[i].start, 0, 0);
		/* ends: the calls whose EXIT is complete, in order, then the open
		 * ones innermost first, closed at the end of the thread or (cut
		 * inside a record) at the last time decoded */
		int e = 0;
		for (int j = 0; j < s.ne && s.c[s.by_end[j]].exit_rec < k; j++, e++) {
			const struct call *c = &s.c[s.by_end[j]];
			CHECK(e < G.ne);
			CHECK_SLICE(G.e[e], 0, c->func, c->depth, c->start, c->end, 0);
		}
		uint64_t lo = k ? s.r[k - 1].t : base, hi = k < s.nr ? s.r[k].t : lo;
		for (int i = nb - 1; i >= 0; i--) {
			if (s.c[i].exit_rec < k)
				continue;
			CHECK(e < G.ne);
			const struct tr_slice *g = &G.e[e++];
			CHECK_EQ_U(g->func, s.c[i].func);
			CHECK_EQ_U(g->depth, s.c[i].depth);
			CHECK_EQ_U(g->start, s.c[i].start);
			if (inside) {
				CHECK_EQ_U(g->flags, TRS_LOST);
				CHECK(g->end >= lo && g->end <= hi);
			} else {
				CHECK_EQ_U(g->flags, TRS_AT_END);
				CHECK_EQ_U(g->end, THREAD_END);
			}
		}
		CHECK_EQ_U(G.ne, e);
		int nx = 0;
		while (nx < s.nx && s.ext[nx] < k)
			nx++;
		CHECK_EQ_U(G.nx, nx);
		free(b.p);
	}
	free(pay);
	free(off);
	free(head);
}

/* Per thread, the slices that ended normally are a prefix of the expected
 * ones, and the rest were closed as lost. */
static void check_prefix(uint32_t th, const struct stream *s, uint32_t other_flags)
{
	int e = 0;
	for (int i = 0; i < G.ne; i++) {
		if (G.e[i].thread != th)
			continue;
		if (G.e[i].flags) {
			CHECK_EQ_U(G.e[i].flags, other_flags);
			continue;
		}
		CHECK(e < s->ne);
		const struct call *c = &s->c[s->by_end[e++]];
		CHECK_SLICE(G.e[i], th, c->func, c->depth, c->start, c->end, 0);
	}
	int b = 0;
	for (int i = 0; i < G.nb; i++)
		if (G.b[i].thread == th) {
			CHECK(b < s->nc);
			const struct call *c = &s->c[b++];
			CHECK_SLICE(G.b[i], th, c->func, c->depth, c->start, 0, 0);
		}
}

/* ---- 7. the file cut at every byte ---- */

static void file_cut_every_byte(void)
{
	struct fx x;
	fx_init(&x);
	struct buf b;
	build_two(&b, 120, 48);
	write_events(&b, b.n);
	struct tr_stats st;
	char err[512];
	CHECK_EQ_U(decode(&x, NULL, &st, err, sizeof err), 0);
	CHECK_EQ_U(st.calls, 240);
	for (size_t n = 0; n < b.n; n++) {
		write_events(&b, n);
		CHECK_EQ_U(decode(&x, NULL, &st, err, sizeof err), (unsigned long long)-1);
		CHECK(err[0] != 0);
		CHECK_EQ_U(G.nb, G.ne); /* everything begun was closed */
		check_prefix(0, &S[0], TRS_LOST);
		check_prefix(1, &S[1], TRS_LOST);
		if (n == b.n - sizeof(struct sonde_rec_hdr)) { /* only REC_END missing */
			CHECK(strstr(err, "not completed") != NULL);
			check_thread(0, &S[0]);
			check_thread(1, &S[1]);
		}
		if (n < sizeof(struct sonde_file_hdr))
			CHECK_EQ_U(G.nb, 0);
	}
	free(b.p);
}

/* ---- 8. damaged records: checksum, length, content, thread ---- */

static void damaged(void)
{
	struct fx x;
	fx_init(&x);
	struct tr_stats st;
	char err[512];
	uint32_t f1 = SONDE_FUNC(0, 1), f2 = SONDE_FUNC(0, 2);
	uint8_t p[256];
	struct rin ok0[] = { { .kind = TR_ENTER, .t = 10, .func = f1 }, { .kind = TR_ENTER, .t = 20, .func = f2 } };
	int n0 = enc_seq(p, 0, ok0, 2);

	/* (a) a payload byte flipped: the checksum says so */
	struct buf b = { 0 };
	file_hdr(&b);
	file_chunk(&b, SLOT[0], 0, 0, 0, p, (uint32_t)n0);
	size_t at = b.n - 1;
	file_end(&b);
	b.p[at] ^= 0x40;
	write_events(&b, b.n);
	CHECK_EQ_U(decode(&x, NULL, &st, err, sizeof err), (unsigned long long)-1);
	CHECK(strstr(err, "checksum") != NULL);
	CHECK_EQ_U(G.nb, 0);
	free(b.p);

	/* (b) the chunk's `used` disagrees with the record's length */
	memset(&b, 0, sizeof b);
	file_hdr(&b);
	uint8_t tmp[sizeof(struct rec_chunk) + 64];
	struct rec_chunk c;
	memset(&c, 0, sizeof c);
	c.used = (uint32_t)n0 + 1;
	c.thread = SLOT[0];
	memcpy(tmp, &c, sizeof c);
	memcpy(tmp + sizeof c, p, (size_t)n0);
	file_rec(&b, REC_CHUNK, tmp, sizeof c + (size_t)n0);
	file_end(&b);
	write_events(&b, b.n);
	CHECK_EQ_U(decode(&x, NULL, &st, err, sizeof err), (unsigned long long)-1);
	CHECK(strstr(err, "length mismatch") != NULL);
	CHECK_EQ_U(G.nb, 0);
	free(b.p);

	/* (c) malformed records with valid checksums: the rest of the chunk is
	 * dropped, the open slices close at the last time decoded, and the
	 * thread's next chunk decodes normally. */
	static const uint8_t junk[][12] = {
		{ 2, 0x03, 0x07 },                                 /* EXT of unknown fixed type 7 */
		{ 7, 0x00, 0x80, 0x80, 0x80, 0x80, 0x10 },         /* function id of 33 bits */
		{ 11, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 }, /* 11-byte varint */
		{ 4, 0x03, 0x02, 0x09, 'a' },                       /* TRX_NAME longer than the chunk */
		{ 3, 0x03, 0xc8, 0x05 },                            /* sized EXT longer than the chunk */
		{ 2, 0x03, TRX_LOCK },                              /* TRX_LOCK without fields */
		{ 1, 0x03 },                                        /* EXT without its type (last) */
	};
	unsigned njunk = sizeof junk / sizeof junk[0];
	for (unsigned j = 0; j < njunk; j++) {
		memcpy(p + n0, junk[j] + 1, junk[j][0]);
		/* after the junk (but the last, which must end the chunk), an exit
		 * that must not be decoded */
		int n = n0 + junk[j][0];
		if (j + 1 < njunk)
			p[n++] = 0x05; /* dt 1, EXIT */
		memset(&b, 0, sizeof b);
		file_hdr(&b);
		file_chunk(&b, SLOT[0], 0, 0, 0, p, (uint32_t)n);
		uint8_t q[16];
		struct rin nx[] = { { .kind = TR_ENTER, .t = 1000, .func = f2 }, { .kind = TR_EXIT, .t = 1010 } };
		file_chunk(&b, SLOT[0], 1, 1000, 0, q, (uint32_t)enc_seq(q, 1000, nx, 2));
		file_end(&b);
		write_events(&b, b.n);
		CHECK_EQ_U(decode(&x, NULL, &st, err, sizeof err), 0);
		CHECK_EQ_U(st.bad, 1);
		CHECK_EQ_U(G.ne, 3);
		CHECK_EQ_U(G.e[0].func, f2); CHECK_EQ_U(G.e[0].depth, 2); CHECK_EQ_U(G.e[0].start, 20);
		CHECK_EQ_U(G.e[0].flags, TRS_LOST);
		CHECK_EQ_U(G.e[1].func, f1); CHECK_EQ_U(G.e[1].depth, 1); CHECK_EQ_U(G.e[1].flags, TRS_LOST);
		CHECK(G.e[0].end == 20 && G.e[1].end == 20); /* every junk record has dt 0 */
		CHECK_SLICE(G.e[2], 0, f2, 1, 1000, 1010, 0);
		CHECK_EQ_U(st.gaps, 0);
		free(b.p);
	}

	/* (d) a chunk of a thread slot the recording does not have */
	memset(&b, 0, sizeof b);
	file_hdr(&b);
	file_chunk(&b, 99, 0, 0, 0, p, (uint32_t)n0);
	struct rin one[] = { { .kind = TR_ENTER, .t = 10, .func = f1 }, { .kind = TR_EXIT, .t = 15 } };
	file_chunk(&b, SLOT[1], 0, 0, 0, p, (uint32_t)enc_seq(p, 0, one, 2));
	file_end(&b);
	write_events(&b, b.n);
	CHECK_EQ_U(decode(&x, NULL, &st, err, sizeof err), 0);
	CHECK_EQ_U(st.bad, 1);
	CHECK_EQ_U(G.ne, 1);
	CHECK_SLICE(G.e[0], 1, f1, 1, 10, 15, 0);
	free(b.p);

	/* (e) not an events file */
	memset(&b, 0, sizeof b);
	file_hdr(&b);
	b.p[0] = 'X';
	file_end(&b);
	write_events(&b, b.n);
	CHECK_EQ_U(decode(&x, NULL, &st, err, sizeof err), (unsigned long long)-1);
	CHECK(strstr(err, "not a sonde events file") != NULL);
	free(b.p);
}

/* ---- 9. filters: thread, time range, minimum duration ---- */

/* Decode thread 0 with a time range (from < to, else none) and min_ticks;
 * the slices kept must be exactly the calls of s that overlap [from, to] and
 * last at least min_ticks (at least `least` of them).  Returns how many. */
static int range_min(struct fx *x, const struct stream *s, uint64_t from, uint64_t to, uint64_t min, int least)
{
	struct tr_filter f;
	memset(&f, 0, sizeof f);
	f.sel.tid = TID[0];
	f.has_range = from < to;
	f.from = from;
	f.to = to;
	f.min_ticks = min;
	struct tr_stats st;
	char err[512];
	CHECK_EQ_U(decode(x, &f, &st, err, sizeof err), 0);
#define KEPT(c) ((!f.has_range || ((c)->end >= f.from && (c)->start <= f.to)) && (c)->end - (c)->start >= min)
	int b = 0, e = 0, dropped = 0;
	for (int i = 0; i < s->nc; i++) {
		const struct call *c = &s->c[i];
		if (!KEPT(c)) {
			if (!f.has_range || (c->end >= f.from && c->start <= f.to))
				dropped++; /* in the range, too short */
			continue;
		}
		CHECK(b < G.nb);
		CHECK_SLICE(G.b[b], 0, c->func, c->depth, c->start, 0, 0);
		b++;
	}
	for (int i = 0; i < s->ne; i++) {
		const struct call *c = &s->c[s->by_end[i]];
		if (!KEPT(c))
			continue;
		CHECK(e < G.ne);
		CHECK_SLICE(G.e[e], 0, c->func, c->depth, c->start, c->end, 0);
		e++;
	}
#undef KEPT
	CHECK_EQ_U(G.nb, b);
	CHECK_EQ_U(G.ne, e);
	CHECK_EQ_U(st.calls, e);
	if (min)
		CHECK_EQ_U(st.dropped_short, dropped);
	CHECK(b >= least);
	return b;
}

static void filters(void)
{
	struct fx x;
	fx_init(&x);
	struct buf b;
	build_two(&b, 800, 120);
	write_events(&b, b.n);
	struct tr_stats st;
	char err[512];
	struct tr_filter f;

	memset(&f, 0, sizeof f);
	f.sel.tid = TID[1];
	CHECK_EQ_U(decode(&x, &f, &st, err, sizeof err), 0);
	check_thread(1, &S[1]);
	CHECK_EQ_U(G.nb, S[1].nc);
	CHECK_EQ_U(G.ne, S[1].nc);

	/* time range [from, to]: the slices that overlap it (and only those,
	 * whose ancestors overlap it too), still in order, at their real depth;
	 * with min_ticks too, only those at least that long.  Ranges in
	 * quarters, then one whose ends are exactly the end of one call and the
	 * start of a later one (both inside, inclusive bounds). */
	const struct stream *s = &S[0];
	uint64_t t0 = s->c[0].start, t1 = s->c[s->by_end[s->ne - 1]].end;
	for (int r = 0; r < 3; r++)
		for (int m = 0; m < 2; m++)
			range_min(&x, s, t0 + (t1 - t0) / 4 * (uint64_t)r, t0 + (t1 - t0) / 4 * (uint64_t)r + (t1 - t0) / 5,
			          m ? 40 : 0, 10);
	int i = s->nc / 4, j;
	while (i < s->nc && s->c[i].end - s->c[i].start < 40)
		i++;
	for (j = i + 1; j < s->nc; j++)
		if (s->c[j].start > s->c[i].end && s->c[j].end - s->c[j].start >= 40)
			break;
	CHECK(j < s->nc);
	for (int m = 0; m < 2; m++)
		range_min(&x, s, s->c[i].end, s->c[j].start, m ? 40 : 0, 2); /* at least calls i and j */

	/* min_ticks alone: a slice shorter than it is dropped (so are its
	 * children, all shorter still); the others come as they are */
	uint64_t mins[] = { 1, 40, 5000, 1ull << 40 };
	for (unsigned m = 0; m < sizeof mins / sizeof mins[0]; m++) {
		int kept = range_min(&x, s, 0, 0, mins[m], 10);
		CHECK(kept > 0 && kept < s->nc);
	}
	free(b.p);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/sonde-test-trace.XXXXXX", tmp && *tmp && strlen(tmp) < 32 ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(varint_known_bytes);
	RUN(decode_explicit_bytes);
	RUN(decode_generated);
	RUN(abnormal_and_end);
	RUN(resumed_frame);
	RUN(gaps_and_lost);
	RUN(payload_cut_every_byte);
	RUN(file_cut_every_byte);
	RUN(damaged);
	RUN(filters);
	char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, SONDE_FILE_EVENTS);
	unlink(path);
	rmdir(dir);
	UNIT_END();
}

/* test_kring.c — unit tests of the kernel engine's sampling rings
 * (src/probe/kernel/kernel_engine.c, included here for its static
 * functions): records written into a ring laid out as the kernel's (a
 * header page, then the data pages, records across the wrap) are paired
 * per thread in time order across rings (recursion, the idle tasks' tid 0
 * per CPU), return values and errors counted; a LOST record leaves the
 * pending calls untimed; damaged rings (a head beyond the size, a record
 * of size 0, longer than what is left, not a multiple of 8, too short for
 * its type, a return before its entry) are skipped and counted, never a
 * wrong duration; an empty ring is nothing. */
#define kernel_engine kernel_engine_under_test
#include "probe/kernel/kernel_engine.c"

#include "unit/unit.h"

#define PG 4096
#define DATA (K_RING_PAGES * PG)

static unsigned char *ring_new(struct kring *r, int cpu, int ret, uint64_t start)
{
	ks.page = PG;
	unsigned char *m = calloc(1, PG + DATA);
	CHECK(m);
	memset(r, 0, sizeof *r);
	r->base = m;
	r->fd = -1;
	r->cpu = cpu;
	r->ret = ret;
	r->tail = start;   /* the kernel's head and sonde's tail start anywhere */
	((struct perf_event_mmap_page *)m)->data_head = start;
	return m;
}

/* Appends n bytes at the ring's head, across the wrap. */
static void put(struct kring *r, const void *b, size_t n)
{
	struct perf_event_mmap_page *pg = (void *)r->base;
	uint64_t h = pg->data_head;
	for (size_t i = 0; i < n; i++)
		r->base[PG + ((h + i) & (DATA - 1))] = ((const unsigned char *)b)[i];
	pg->data_head = h + n;
}

static void sample(struct kring *r, uint32_t tid, uint64_t t, int64_t ax)
{
	uint64_t w[5];
	struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, (uint16_t)(r->ret ? 40 : 24) };
	memcpy(&w[0], &h, 8);
	w[1] = (uint64_t)tid << 32 | tid;
	w[2] = t;
	w[3] = PERF_SAMPLE_REGS_ABI_64;
	w[4] = (uint64_t)ax;
	put(r, w, h.size);
}

static void lost(struct kring *r, uint64_t n)
{
	uint64_t w[5] = { 0, 7, n, 0, 0 };
	struct perf_event_header h = { PERF_RECORD_LOST, 0, 40 };
	memcpy(&w[0], &h, 8);
	put(r, w, 40);
}

/* A func probe's engine data, its statistics kind_func's as kind_place makes them. */
static struct kfunc *kf_new(void)
{
	struct kfunc *d = calloc(1, sizeof *d);
	struct probe *p = calloc(1, sizeof *p);
	CHECK(d && p && !func_data_new(p, 0));
	d->owner = p;
	d->cs = func_stats(p);
	return d;
}

static int64_t count_of(struct kfunc *d, int64_t v)
{
	for (int i = 0; i < d->nval; i++)
		if (d->val[i].v == v)
			return (int64_t)d->val[i].n;
	return 0;
}

static void pairs_across_rings_and_wrap(void)
{
	struct kfunc *d = kf_new();
	struct kring en, re;
	/* records straddle the end of the data area */
	ring_new(&en, 0, 0, 3 * (uint64_t)DATA - 16);
	ring_new(&re, 1, 1, 5 * (uint64_t)DATA - 24);
	/* tid 10 recurses: 100 -> 150 -> ret 170 (-22 as int) -> ret 300 (7);
	 * tid 11 in between: 120 -> 400 (0) */
	sample(&en, 10, 100, 0);
	sample(&en, 11, 120, 0);
	sample(&en, 10, 150, 0);
	sample(&re, 10, 170, 0xffffffeall);
	sample(&re, 10, 300, 7);
	sample(&re, 11, 400, 0);
	drain_ring(d, &re);   /* the returns' ring first: the order comes from the times */
	drain_ring(d, &en);
	settle(d, UINT64_MAX);
	CHECK_EQ_U(d->timed, 3);
	CHECK_EQ_U(d->cs->total, 20 + 200 + 280);
	CHECK_EQ_U(d->cs->min, 20);
	CHECK_EQ_U(d->cs->max, 280);
	CHECK_EQ_U(d->unmatched, 0);
	CHECK_EQ_U(d->malformed, 0);
	CHECK_EQ_U(count_of(d, 7), 1);
	CHECK_EQ_U(count_of(d, 0xffffffea), 1);
	CHECK_EQ_U(d->errors, 1);   /* an int -EINVAL */
	CHECK_EQ_U(((struct perf_event_mmap_page *)re.base)->data_tail, 5 * (uint64_t)DATA - 24 + 3 * 40);
}

static void idle_tid0_per_cpu(void)
{
	struct kfunc *d = kf_new();
	struct kring e0, e1, r0, r1;
	ring_new(&e0, 0, 0, 0);
	ring_new(&e1, 1, 0, 0);
	ring_new(&r0, 0, 1, 0);
	ring_new(&r1, 1, 1, 0);
	sample(&e0, 0, 10, 0);
	sample(&e1, 0, 20, 0);
	sample(&r0, 0, 30, -2);   /* CPU 0's: 20 ns, not CPU 1's 10 */
	sample(&r1, 0, 60, -2);
	drain_ring(d, &e0);
	drain_ring(d, &e1);
	drain_ring(d, &r0);
	drain_ring(d, &r1);
	settle(d, UINT64_MAX);
	CHECK_EQ_U(d->timed, 2);
	CHECK_EQ_U(d->cs->min, 20);
	CHECK_EQ_U(d->cs->max, 40);
	CHECK_EQ_U(d->errors, 2);
}

static void holds_young_records(void)
{
	struct kfunc *d = kf_new();
	struct kring en, re;
	ring_new(&en, 0, 0, 0);
	ring_new(&re, 0, 1, 0);
	sample(&en, 5, 1000, 0);
	sample(&re, 5, 5000, 1);
	drain_ring(d, &en);
	drain_ring(d, &re);
	settle(d, 2000);   /* the return is too young: it waits */
	CHECK_EQ_U(d->timed, 0);
	CHECK_EQ_U(d->npend, 1);
	settle(d, UINT64_MAX);
	CHECK_EQ_U(d->timed, 1);
	CHECK_EQ_U(d->cs->total, 4000);
}

static void lost_leaves_pending_untimed(void)
{
	struct kfunc *d = kf_new();
	struct kring en, re;
	ring_new(&en, 0, 0, 0);
	ring_new(&re, 0, 1, 0);
	/* recursion 100 -> (200 lost) ; the inner return at 300 must not close 100 */
	sample(&en, 9, 100, 0);
	lost(&en, 1);
	sample(&re, 9, 300, 0);
	sample(&re, 9, 400, 0);
	sample(&re, 3, 500, 0);   /* a return without its entry */
	drain_ring(d, &en);
	drain_ring(d, &re);
	settle(d, UINT64_MAX);
	CHECK_EQ_U(d->lost_samples, 1);
	CHECK_EQ_U(d->timed, 0);
	CHECK_EQ_U(d->unmatched, 3);
	CHECK_EQ_U(d->cs->returns, 0);
}

static void damaged_rings(void)
{
	struct kfunc *d = kf_new();
	struct kring r;
	struct perf_event_mmap_page *pg;
	/* a head beyond the ring's size */
	pg = (void *)ring_new(&r, 0, 0, 0);
	pg->data_head = (uint64_t)DATA + 8;
	drain_ring(d, &r);
	CHECK_EQ_U(d->malformed, 1);
	CHECK_EQ_U(r.tail, (uint64_t)DATA + 8);
	/* size 0, then a good one that must not be read as records */
	ring_new(&r, 0, 0, 0);
	struct perf_event_header h0 = { PERF_RECORD_SAMPLE, 0, 0 };
	put(&r, &h0, 8);
	sample(&r, 1, 1, 0);
	drain_ring(d, &r);
	CHECK_EQ_U(d->malformed, 2);
	CHECK_EQ_U(d->npend, 0);
	/* longer than what is left */
	ring_new(&r, 0, 0, 0);
	struct perf_event_header hl = { PERF_RECORD_SAMPLE, 0, 64 };
	put(&r, &hl, 8);
	drain_ring(d, &r);
	CHECK_EQ_U(d->malformed, 3);
	/* not a multiple of 8 */
	ring_new(&r, 0, 0, 0);
	uint64_t w[4] = { 0, 1, 2, 3 };
	struct perf_event_header h3 = { PERF_RECORD_SAMPLE, 0, 20 };
	memcpy(w, &h3, 8);
	put(&r, w, 24);
	drain_ring(d, &r);
	CHECK_EQ_U(d->malformed, 4);
	/* too short for a sample; a return's without its AX; a huge unknown record skipped */
	ring_new(&r, 0, 1, 0);
	struct perf_event_header hs = { PERF_RECORD_SAMPLE, 0, 16 };
	memcpy(w, &hs, 8);
	put(&r, w, 16);
	uint64_t v[4] = { 0, 4, 9, PERF_SAMPLE_REGS_ABI_64 };
	struct perf_event_header hr = { PERF_RECORD_SAMPLE, 0, 32 };
	memcpy(v, &hr, 8);
	put(&r, v, 32);
	unsigned char big[1024] = { 0 };
	struct perf_event_header hb = { PERF_RECORD_MMAP, 0, sizeof big };
	memcpy(big, &hb, 8);
	put(&r, big, sizeof big);
	drain_ring(d, &r);
	CHECK_EQ_U(d->malformed, 4 + (K_RETVAL ? 2 : 1));
	CHECK_EQ_U(r.tail, 16 + 32 + sizeof big);
	/* a return before its entry */
	struct kfunc *e = kf_new();
	struct kring en, re;
	ring_new(&en, 0, 0, 0);
	ring_new(&re, 0, 1, 0);
	sample(&en, 2, 500, 0);
	drain_ring(e, &en);
	settle(e, UINT64_MAX);
	sample(&re, 2, 400, 0);
	drain_ring(e, &re);
	settle(e, UINT64_MAX);
	CHECK_EQ_U(e->timed, 0);
	CHECK_EQ_U(e->malformed, 1);
}

static void empty_ring(void)
{
	struct kfunc *d = kf_new();
	struct kring r;
	ring_new(&r, 0, 0, 12345 * 8);
	drain_ring(d, &r);
	settle(d, UINT64_MAX);   /* nothing pending: no records array at all */
	CHECK_EQ_U(d->npend, 0);
	CHECK_EQ_U(d->malformed, 0);
	CHECK(d->pend == NULL);
}

static void errno_forms(void)
{
	CHECK(is_errno(-1) && is_errno(-4095) && !is_errno(-4096) && !is_errno(0));
	CHECK(is_errno(0xffffffffll) && is_errno(0xfffff001ll) && !is_errno(0xfffff000ll));
	CHECK(!is_errno(0x1ffffffffll) && !is_errno(7));
}

int main(void)
{
	RUN(pairs_across_rings_and_wrap);
	RUN(idle_tid0_per_cpu);
	RUN(holds_young_records);
	RUN(lost_leaves_pending_untimed);
	RUN(damaged_rings);
	RUN(empty_ring);
	RUN(errno_forms);
	UNIT_END();
}

/* test_trace.c — the trace record encoding: varints, record kinds with delta
 * times, and skipping of EXT records (lock events, sized future types) by
 * their documented lengths. */
#include <string.h>

#include "common/trace_enc.h"
#include "data/trace.h"
#include "unit.h"

struct chunkbuf {
	struct sonde_chunk c;
	uint8_t p[256];
};

static int put(uint8_t *p, uint64_t dt, int kind) { return tr_put_varint(p, dt << 2 | (uint64_t)kind); }

static void varint_roundtrip(void)
{
	uint64_t vals[] = { 0, 1, 127, 128, 300, 1u << 20, 0xffffffffull, ~0ull };
	for (unsigned i = 0; i < sizeof vals / sizeof vals[0]; i++) {
		uint8_t b[TR_MAX_VARINT];
		int n = tr_put_varint(b, vals[i]);
		uint64_t v = 0;
		CHECK_EQ_U(tr_get_varint(b, b + n, &v), n);
		CHECK_EQ_U(v, vals[i]);
		CHECK_EQ_U(tr_get_varint(b, b + n - 1, &v), n == 1 ? 0 : 0); /* truncated */
	}
}

static void records_decode(void)
{
	struct chunkbuf cb;
	memset(&cb, 0, sizeof cb);
	cb.c.base_tsc = 1000;
	uint8_t *p = cb.p;
	p += put(p, 0, TR_ENTER);
	p += tr_put_varint(p, SONDE_FUNC(2, 77));
	p += put(p, 5, TR_ENTER);
	p += tr_put_varint(p, SONDE_FUNC(0, 3));
	p += put(p, 300, TR_EXIT);
	/* a lock event (TRX_LOCK: varint index, byte op, varint aux) */
	p += put(p, 1, TR_EXT);
	*p++ = TRX_LOCK;
	p += tr_put_varint(p, 12345);
	*p++ = 3;
	p += tr_put_varint(p, 999999);
	/* a future sized type: varint len, bytes */
	p += put(p, 2, TR_EXT);
	*p++ = 200;
	p += tr_put_varint(p, 3);
	*p++ = 1; *p++ = 2; *p++ = 3;
	/* thread name */
	p += put(p, 0, TR_EXT);
	*p++ = TRX_NAME;
	*p++ = 2; *p++ = 'w'; *p++ = '1';
	p += put(p, 10, TR_EXIT_ABNORMAL);
	cb.c.used = (uint32_t)(p - cb.p);
	struct tr_rec r[16];
	int n = tr_chunk_records(&cb.c, cb.p, r, 16);
	CHECK_EQ_U(n, 7);
	CHECK_EQ_U(r[0].kind, TR_ENTER); CHECK_EQ_U(r[0].time, 1000); CHECK_EQ_U(r[0].func, SONDE_FUNC(2, 77));
	CHECK_EQ_U(r[1].time, 1005); CHECK_EQ_U(r[1].func, SONDE_FUNC(0, 3));
	CHECK_EQ_U(r[2].kind, TR_EXIT); CHECK_EQ_U(r[2].time, 1305);
	CHECK_EQ_U(r[3].kind, TR_EXT); CHECK_EQ_U(r[3].ext_type, TRX_LOCK); CHECK_EQ_U(r[3].time, 1306);
	CHECK_EQ_U(r[4].ext_type, 200); CHECK_EQ_U(r[4].time, 1308);
	CHECK_EQ_U(r[5].ext_type, TRX_NAME);
	CHECK_EQ_U(r[6].kind, TR_EXIT_ABNORMAL); CHECK_EQ_U(r[6].time, 1318);
	/* any truncation is reported, never read past the end */
	for (uint32_t u = 1; u < cb.c.used; u++) {
		cb.c.used = u;
		int k = tr_chunk_records(&cb.c, cb.p, r, 16);
		CHECK(k == -1 || k <= 7);
	}
}

static void ext_unknown_fixed(void)
{
	uint8_t b[4] = { 1, 2, 3, 4 };
	CHECK(tr_skip_ext(7, b, b + 4) == -1);   /* unknown fixed layout: cannot be skipped */
	CHECK(tr_skip_ext(64, b, b + 4) == 2);   /* sized: len 1 + 1 byte */
	uint8_t big[2] = { 9, 0 };
	CHECK(tr_skip_ext(99, big, big + 2) == -1); /* length past the end */
}

static void entry_size(void)
{
	/* The encoding's budget: a call of a function in module slot 0 (the
	 * executable) with gaps under 4096 ticks (~1.4 us at 3 GHz) costs at
	 * most 2 + 3 + 2 bytes. */
	uint8_t b[32];
	int n = put(b, 4000, TR_ENTER);
	n += tr_put_varint(b + n, SONDE_FUNC(0, 1000));
	n += put(b + n, 4000, TR_EXIT);
	CHECK(n <= 7);
}

int main(void)
{
	RUN(varint_roundtrip);
	RUN(records_decode);
	RUN(ext_unknown_fixed);
	RUN(entry_size);
	UNIT_END();
}

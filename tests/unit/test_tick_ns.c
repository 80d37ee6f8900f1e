/* test_tick_ns.c — ticks to ns (src/export/tick_ns.h), shared by the chrome
 * and Perfetto exports: tick_ns_of compares d with the bound tick_ns_init
 * found (dmax) instead of comparing its 128-bit result with NS_MAX; checked
 * here against that comparison, around the bound and elsewhere, for clocks
 * of several rates (TSC-like, 1 GHz, slower: other shifts). */
#include <stdint.h>

#include "export/tick_ns.h"
#include "unit.h"

/* The conversion as written before the bound: the 128-bit result compared. */
static uint64_t reference(const struct tick_ns *t, uint64_t d)
{
	unsigned __int128 v = tick_ns_raw(t, d);
	return v < NS_MAX ? (uint64_t)v : UINT64_MAX;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void against_reference(void)
{
	static const double rates[] = { 2.9, 2.0000001, 1.0, 0.999, 0.1, 0.0137, 37.5 };
	for (unsigned i = 0; i < sizeof rates / sizeof rates[0]; i++) {
		struct tick_ns t;
		tick_ns_init(&t, rates[i]);
		CHECK(reference(&t, t.dmax) != UINT64_MAX);
		CHECK(t.dmax == UINT64_MAX || reference(&t, t.dmax + 1) == UINT64_MAX);
		for (uint64_t k = 0; k < 1000; k++) {
			uint64_t ds[] = { k, t.dmax - k, t.dmax + k, UINT64_MAX - k, next(), next() >> (k % 64) };
			for (unsigned j = 0; j < sizeof ds / sizeof ds[0]; j++)
				CHECK_EQ_U(tick_ns_of(&t, ds[j]), reference(&t, ds[j]));
		}
		/* a second at the clock's rate is 10^9 ns, to the rounding */
		uint64_t s = (uint64_t)(rates[i] * 1e9 + 0.5);
		uint64_t ns = tick_ns_of(&t, s);
		CHECK(ns >= 999999999u && ns <= 1000000001u);
	}
}

int main(void)
{
	RUN(against_reference);
	UNIT_END();
}

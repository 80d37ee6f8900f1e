/* tick_ns.h — recording ticks to nanoseconds in integers, for the exports'
 * hot paths (chrome.c, perfetto.c): both write the same nanoseconds. */
#ifndef SONDE_EXPORT_TICK_NS_H
#define SONDE_EXPORT_TICK_NS_H

#include <stdint.h>

/* Ticks to ns in integers, rounded: (d * mul + 2^(shift-1)) >> shift, mul =
 * 2^shift / ticks_per_ns in 63 bits.  The same ns as rounding rd_ns's
 * double division but at a half to within 2^-53 (never seen: the export of
 * bench/export_bench.sh's 3.9M calls is byte for byte the same), and a
 * 128-bit multiplication instead of a division on the export's hot path. */
struct tick_ns {
	uint64_t mul;
	unsigned shift;
	uint64_t dmax;  /* the largest d whose ns is below NS_MAX (beyond: UINT64_MAX) */
};

#define NS_MAX 9000000000000000000ull /* larger: damaged times */

/* The rounded product, in 128 bits (d * mul < 2^127: no overflow). */
static inline unsigned __int128 tick_ns_raw(const struct tick_ns *t, uint64_t d)
{
	unsigned __int128 m = (unsigned __int128)d * t->mul;
	if (__builtin_expect(t->shift == 63, 1)) /* every clock faster than 1 GHz (the TSC): a constant shift, a few instructions */
		return (m + ((unsigned __int128)1 << 62)) >> 63;
	return (m + ((unsigned __int128)1 << (t->shift - 1))) >> t->shift;
}

static inline void tick_ns_init(struct tick_ns *t, double ticks_per_ns) /* the reader keeps it in (0.01, 100) */
{
	long double m = 0x1p63L / ticks_per_ns; /* mul for shift 63, halved while too large */
	unsigned k = 63;
	while (k > 8 && m >= 0x1p63L) {
		m /= 2;
		k--;
	}
	t->mul = (uint64_t)(m + 0.5L);
	t->shift = k;
	/* The ns grow with d: the bound on d found once, by bisection, so that
	 * each conversion compares d instead of its 128-bit result. */
	uint64_t lo = 0, hi = UINT64_MAX; /* tick_ns_raw(lo) < NS_MAX; tick_ns_raw(hi) >= NS_MAX unless lo == hi */
	if (tick_ns_raw(t, hi) < NS_MAX)
		lo = hi;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (tick_ns_raw(t, mid) < NS_MAX)
			lo = mid;
		else
			hi = mid;
	}
	t->dmax = lo;
}

/* d ticks in ns, or UINT64_MAX past NS_MAX. */
static inline uint64_t tick_ns_of(const struct tick_ns *t, uint64_t d)
{
	if (d > t->dmax)
		return UINT64_MAX;
	if (__builtin_expect(t->shift == 63, 1)) {
		/* tick_ns_raw in 64-bit halves (it is below NS_MAX): with the
		 * product's low half lo = a 2^62 + b (b < 2^62), (lo + 2^62) >> 63
		 * is (a + 1) >> 1.  gcc 12 kept the 128-bit sum in memory. */
		unsigned __int128 m = (unsigned __int128)d * t->mul;
		uint64_t hi = (uint64_t)(m >> 64), lo = (uint64_t)m;
		return (hi << 1) + (((lo >> 62) + 1) >> 1);
	}
	return (uint64_t)tick_ns_raw(t, d);
}

#endif

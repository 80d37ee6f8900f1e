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
};

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
}

#define NS_MAX 9000000000000000000ull /* larger: damaged times */

/* d ticks in ns, or UINT64_MAX past NS_MAX. */
static inline uint64_t tick_ns_of(const struct tick_ns *t, uint64_t d)
{
	unsigned __int128 m = (unsigned __int128)d * t->mul, v;
	if (t->shift == 63) /* every clock faster than 1 GHz (the TSC): a constant shift, a few instructions */
		v = (m + ((unsigned __int128)1 << 62)) >> 63;
	else
		v = (m + ((unsigned __int128)1 << (t->shift - 1))) >> t->shift;
	return v < NS_MAX ? (uint64_t)v : UINT64_MAX;
}

#endif

/* clock.c — calibration of the tick counter against CLOCK_MONOTONIC. */
#include "common/clock.h"

void clock_point_take(struct clock_point *p)
{
	uint64_t best = ~0ull;
	for (int i = 0; i < 5; i++) {
		uint64_t t0 = clock_ticks();
		uint64_t m = clock_mono_ns();
		uint64_t t1 = clock_ticks();
		if (t1 - t0 < best) {
			best = t1 - t0;
			p->ticks = t0 + (t1 - t0) / 2;
			p->mono_ns = m;
		}
	}
}

double clock_ticks_per_ns(const struct clock_point *a, const struct clock_point *b)
{
	if (b->mono_ns <= a->mono_ns + 1000 || b->ticks <= a->ticks)
		return 0;
	return (double)(b->ticks - a->ticks) / (double)(b->mono_ns - a->mono_ns);
}

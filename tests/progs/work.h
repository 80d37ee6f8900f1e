/* work.h — busy work for test programs, inlined, so its time is the caller's
 * exclusive time.  Wall-clock based; returns the nanoseconds it really took
 * (on a loaded machine the last check can come a scheduler slice late), so
 * that programs can report the work they did. */
#ifndef TESTS_WORK_H
#define TESTS_WORK_H
#include <time.h>
static inline __attribute__((always_inline, unused)) double work_ms(double ms)
{
	struct timespec a, b;
	double ns;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		clock_gettime(CLOCK_MONOTONIC, &b);
		ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
	} while (ns < ms * 1e6);
	return ns;
}
#endif

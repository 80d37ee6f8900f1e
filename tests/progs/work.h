/* work.h — busy work for test programs, not instrumented, so its time is the
 * caller's exclusive time.  Wall-clock based: preemption does not change it. */
#ifndef TESTS_WORK_H
#define TESTS_WORK_H
#include <time.h>
static inline __attribute__((always_inline, unused)) void work_ms(double ms)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6 < ms);
}
#endif

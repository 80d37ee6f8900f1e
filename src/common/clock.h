/* clock.h — time stamps for the hot path (TSC on x86-64), converted offline
 * with a calibration stored in the recording. */
#ifndef SONDE_COMMON_CLOCK_H
#define SONDE_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t clock_ticks(void) { return __rdtsc(); }
#elif defined(__aarch64__)
static inline uint64_t clock_ticks(void)
{
	uint64_t v;
	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}
#else
static inline uint64_t clock_ticks(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#endif

/* CLOCK_MONOTONIC in nanoseconds and in whole milliseconds: the one
 * wall-time clock of sonde and of the runtime (timeouts, durations, the
 * clock points below).  Not for the hot path: clock_ticks. */
static inline uint64_t clock_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t clock_mono_ms(void)
{
	return clock_mono_ns() / 1000000u;
}

/* A pair of readings of both clocks taken back to back. */
struct clock_point {
	uint64_t ticks;
	uint64_t mono_ns;
};

/* Take a point, bracketing the monotonic read with two tick reads and keeping
 * the tightest of a few tries. */
void clock_point_take(struct clock_point *p);

/* Ticks per nanosecond between two points (0 if they are too close). */
double clock_ticks_per_ns(const struct clock_point *a, const struct clock_point *b);

#endif

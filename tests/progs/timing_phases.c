/* timing_phases.c — record --timing=auto's learned policy
 * (tests/e2e/profile_timing.sh): work() is short and frequent for the first
 * 1.5 s (so the policy counts it after its first window), then slow for 6 s
 * (each call spins 30 us: the probe that comes within 32 windows finds it
 * slow, and it is timed again).  It prints how many times
 * it called work in each phase, counted by itself:
 *   work fast N
 *   work slow M */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static volatile unsigned long sink;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) void work(int slow)
{
	if (slow) {
		uint64_t end = now_ns() + 30000;
		while (now_ns() < end)
			sink++;
	}
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void phase(int slow, uint64_t ns, unsigned long *n)
{
	uint64_t end = now_ns() + ns;
	while (now_ns() < end)
		for (int i = 0; i < 64; i++, (*n)++)
			work(slow);
}

int main(void)
{
	unsigned long fast = 0, slow = 0;
	phase(0, 1500000000ull, &fast);
	phase(1, 6000000000ull, &slow);
	printf("work fast %lu\nwork slow %lu\n", fast, slow);
	return 0;
}

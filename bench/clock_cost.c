/* clock_cost.c — what one clock read costs on this machine: rdtsc (sonde's
 * hooks read it at every entry and exit) and clock_gettime(CLOCK_MONOTONIC)
 * (uftrace's, through the vDSO), each read N times in a loop that depends
 * on the result.  docs/PERFORMANCE.md uses it to say where the per-call
 * floor comes from.    cc -O2 -o clock_cost bench/clock_cost.c && ./clock_cost */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 50000000;
	uint64_t s = 0;
	double a = now_ns();
	for (long i = 0; i < n; i++)
		s += __rdtsc();
	double b = now_ns();
	for (long i = 0; i < n / 10; i++) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		s += (uint64_t)t.tv_nsec;
	}
	double c = now_ns();
	printf("rdtsc %.2f ns, clock_gettime %.2f ns a read (%u)\n", (b - a) / (double)n, (c - b) / (double)(n / 10),
	       (unsigned)(s & 1));
	return 0;
}

/* probe_agent_time.c — target of the agent's time and assert probe tests
 * (tests/e2e/probe_agent_time.sh):  probe_agent_time NTHREADS ITERS [GOFILE]
 * With GOFILE: prints "ready PID" and waits until GOFILE exists before the
 * threads start.
 * Thread k (0-based) runs i in [0, ITERS): mark_a(i), a spin of
 * 500 + 250 * k ns measured on its own clock, mark_b(i), then check(i, k).
 * stdout (the same on every run): the calls of mark_a and mark_b, and how
 * many check(i, k) calls have i % 7 == 3 ("fail7 N") and i % 5 == 0 with
 * k != 2 ("fail5 N"); exits 3.  stderr: the bounds of the interval from
 * the entry of mark_a to the entry of mark_b, measured by the program:
 * "inner_min_ns A inner_sum_ns B outer_max_ns C outer_sum_ns D" (inner: from
 * mark_a's return to mark_b's call, outer: from before mark_a's call to after
 * mark_b's return). */
#include "noipa.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int iters;
static long fail7, fail5;
static uint64_t inner_min = UINT64_MAX, inner_sum, outer_max, outer_sum;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

NOIPA void mark_a(long i)
{
	TOUCH();
	(void)i;
}

NOIPA void mark_b(long i)
{
	TOUCH();
	(void)i;
}

NOIPA long check(long i, long k)
{
	TOUCH();
	return i * 3 + k; /* MARK_CHECK */
}

static void *worker(void *arg)
{
	long k = (long)(intptr_t)arg, f7 = 0, f5 = 0;
	uint64_t imin = UINT64_MAX, isum = 0, omax = 0, osum = 0, spin = 500 + 250 * (uint64_t)k;
	for (long i = 0; i < iters; i++) {
		uint64_t t0 = ns();
		mark_a(i);
		uint64_t t1 = ns(), t2;
		while ((t2 = ns()) - t1 < spin)
			;
		mark_b(i);
		uint64_t t3 = ns();
		check(i, k);
		f7 += i % 7 == 3;
		f5 += i % 5 == 0 && k != 2;
		if (t2 - t1 < imin)
			imin = t2 - t1;
		isum += t2 - t1;
		if (t3 - t0 > omax)
			omax = t3 - t0;
		osum += t3 - t0;
	}
	pthread_mutex_lock(&lock);
	fail7 += f7;
	fail5 += f5;
	if (imin < inner_min)
		inner_min = imin;
	inner_sum += isum;
	if (omax > outer_max)
		outer_max = omax;
	outer_sum += osum;
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8;
	iters = argc > 2 ? atoi(argv[2]) : 20000;
	if (n < 1 || n > 64 || iters < 1)
		return 1;
	if (argc > 3) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		while (access(argv[3], F_OK))
			usleep(2000);
	}
	pthread_t t[64];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	long calls = (long)n * iters;
	printf("mark_a %ld\nmark_b %ld\nfail7 %ld\nfail5 %ld\n", calls, calls, fail7, fail5);
	fprintf(stderr, "inner_min_ns %llu inner_sum_ns %llu outer_max_ns %llu outer_sum_ns %llu\n",
	        (unsigned long long)inner_min, (unsigned long long)inner_sum, (unsigned long long)outer_max,
	        (unsigned long long)outer_sum);
	return 3;
}

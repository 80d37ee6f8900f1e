/* locks_uncontended.c — N uncontended lock+unlock pairs on one mutex, one
 * thread; prints ns per pair in thread CPU time (what the wrappers cost this
 * thread; on a small loaded machine wall time also counts the collector and
 * other processes taking the CPU) and the wall-clock rate.
 * Usage: locks_uncontended [N [FIFO]]: with a FIFO, waits for a line on it
 * first (for `sonde record --locks -p`, which attaches meanwhile). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long x;

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000000;
	struct timespec a, b, ca, cb;
	if (argc > 2) {
		char line[16];
		FILE *f = fopen(argv[2], "r");
		if (!f || !fgets(line, sizeof line, f))
			return 1;
		fclose(f);
	}
	for (long i = 0; i < 1000; i++) { /* warm-up: first-sight work is not measured */
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		x++;
		pthread_mutex_unlock(&m);
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
	double cpu = (cb.tv_sec - ca.tv_sec) * 1e9 + (cb.tv_nsec - ca.tv_nsec);
	printf("pairs=%ld ns_per_pair=%.2f wall_ns_per_pair=%.2f pairs_per_s=%.0f\n", n, cpu / n, ns / n, n / ns * 1e9);
	return 0;
}

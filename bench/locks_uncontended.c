/* locks_uncontended.c — N uncontended lock+unlock pairs on one mutex, one
 * thread; prints the pairs per second and ns per pair measured inside. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long x;

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000000;
	struct timespec a, b;
	for (long i = 0; i < 1000; i++) { /* warm-up: first-sight work is not measured */
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		x++;
		pthread_mutex_unlock(&m);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
	printf("pairs=%ld ns_per_pair=%.2f pairs_per_s=%.0f\n", n, ns / n, n / ns * 1e9);
	return 0;
}

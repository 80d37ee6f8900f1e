/* locks_contended.c — T threads share one mutex for N operations each (a
 * short critical section and a little work outside it); prints the
 * throughput in operations per second. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long shared;
static long n;

static void *worker(void *a)
{
	(void)a;
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		for (volatile int k = 0; k < 20; k++)
			shared++;
		pthread_mutex_unlock(&m);
		for (volatile int k = 0; k < 50; k++)
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int t = argc > 1 ? atoi(argv[1]) : 4;
	n = argc > 2 ? atol(argv[2]) : 500000;
	pthread_t th[64];
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < t; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < t; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	printf("threads=%d ops=%ld ops_per_s=%.0f\n", t, t * n, t * n / s);
	return 0;
}

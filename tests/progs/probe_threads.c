/* probe_threads.c — multi-threaded target for the probe tests:
 *   probe_threads NTHREADS ITERS SLEEP_US [PIDFILE]
 * every thread calls work(i) for i in [0, ITERS), sleeping SLEEP_US between
 * calls; prints the total of all results and exits with status 3. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int iters, sleep_us;

__attribute__((noipa)) long work(long i)
{
	return 3 * i + 1;                     /* MARK_WORK */
}

static void *run(void *arg)
{
	long *total = arg;
	for (int i = 0; i < iters; i++) {
		*total += work(i);
		if (sleep_us)
			usleep((useconds_t)sleep_us);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int nt = argc > 1 ? atoi(argv[1]) : 4;
	iters = argc > 2 ? atoi(argv[2]) : 5000;
	sleep_us = argc > 3 ? atoi(argv[3]) : 0;
	if (argc > 4) {
		FILE *f = fopen(argv[4], "w");
		if (f) {
			fprintf(f, "%d\n", (int)getpid());
			fclose(f);
		}
	}
	if (nt < 1 || nt > 64)
		return 1;
	pthread_t th[64];
	long totals[64] = { 0 };
	for (int i = 0; i < nt; i++)
		pthread_create(&th[i], NULL, run, &totals[i]);
	long sum = 0;
	for (int i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		sum += totals[i];
	}
	printf("total %ld\n", sum);
	return 3;
}

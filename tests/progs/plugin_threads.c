/* plugin_threads.c — NTHREADS threads call work(i) until STOPFILE exists
 * (tests/e2e/attach_races.sh deletes plugin probes on work while they run);
 * after each 512 calls a thread naps 50 us, so that the probe agent's own
 * thread in the process gets the CPU between its requests on a loaded
 * machine.  Prints "ready" once the threads run, then its total of work's
 * results and the same total computed without calling it; exits 3.
 * Usage: plugin_threads NTHREADS STOPFILE */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const char *stopfile;
static long sums[64], expect[64], calls[64];

__attribute__((noinline)) long work(long i)
{
	__asm__ volatile("" ::: "memory");
	return 3 * i + 1;
}

static void *run(void *arg)
{
	long t = (long)arg, i = 0;
	struct timespec nap = { 0, 50000 };
	while (access(stopfile, F_OK) != 0) {
		for (int k = 0; k < 512; k++, i++) {
			sums[t] += work(i);
			expect[t] += 3 * i + 1;
		}
		nanosleep(&nap, NULL);
	}
	calls[t] = i;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8;
	if (n < 1 || n > 64 || argc < 3)
		return 2;
	stopfile = argv[2];
	pthread_t th[64];
	for (long t = 0; t < n; t++)
		pthread_create(&th[t], NULL, run, (void *)t);
	printf("ready\n");
	fflush(stdout);
	long s = 0, e = 0, c = 0;
	for (int t = 0; t < n; t++) {
		pthread_join(th[t], NULL);
		s += sums[t];
		e += expect[t];
		c += calls[t];
	}
	printf("calls %ld total %ld expect %ld\n", c, s, e);
	return 3;
}

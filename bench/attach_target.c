/* attach_target.c — the program of bench/attach_bench.sh.
 * Usage: attach_target NTHREADS FIFO|- PIDFILE N
 * Starts NTHREADS threads that each loop { fib(12); sleep 1 ms } (a busy
 * server's threads), writes its pid to PIDFILE, waits for a line on FIFO
 * (not with "-"), then times fib(N) on the main thread and prints
 * "fib N calls C ns T" (C = 2 fib(N+1) - 1 calls), stops the threads and
 * exits 0. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__attribute__((noipa)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static atomic_int stop;

static void *spin(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		fib(12);
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	int nt = atoi(argv[1]), n = atoi(argv[4]);
	pthread_t *th = calloc((size_t)(nt > 0 ? nt : 1), sizeof *th);
	for (int i = 0; i < nt; i++)
		pthread_create(&th[i], NULL, spin, NULL);
	FILE *pf = fopen(argv[3], "w");
	if (!pf)
		return 2;
	fprintf(pf, "%d\n", (int)getpid());
	fclose(pf);
	if (strcmp(argv[2], "-")) {
		FILE *in = fopen(argv[2], "r");
		char line[64];
		if (!in || !fgets(line, sizeof line, in))
			return 2;
	}
	double t0 = now_ns();
	long r = fib(n);
	double t1 = now_ns();
	long f1 = 1, f0 = 0; /* fib(N+1) */
	for (int i = 0; i < n; i++) {
		long f = f0 + f1;
		f0 = f1;
		f1 = f;
	}
	printf("fib %d = %ld calls %ld ns %.0f\n", n, r, 2 * f1 - 1, t1 - t0);
	fflush(stdout);
	atomic_store(&stop, 1);
	for (int i = 0; i < nt; i++)
		pthread_join(th[i], NULL);
	return 0;
}

/* system_target.c — the program of bench/system_probe_bench.sh: it maps
 * libsys_lib.so (tests/progs/sys_lib.c), waits until the file argv[2]
 * exists (the probes placed), makes argv[1] calls of sys_work and prints
 * the time of one call on its own clock, so that no tool's start-up or
 * placement is in the figure. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int sys_work(int x);

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	long n = atol(argv[1]);
	while (access(argv[2], F_OK)) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	long long sum = 0;
	double t0 = now();
	for (long i = 0; i < n; i++)
		sum += sys_work((int)i);
	double t = now() - t0;
	printf("%.3f ns per call (sum %lld)\n", t / (double)n * 1e9, sum);
	return 0;
}

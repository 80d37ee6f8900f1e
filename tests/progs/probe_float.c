/* probe_float.c — target for floating-point var probes (tests/e2e/probe_float.sh):
 *   probe_float NTHREADS ITERS
 * every thread calls scale(d, f) for i in [0, ITERS) with d = i * 0.5 and
 * f = i * 0.25f (arguments in xmm0 and xmm1 at its entry), and stores d into
 * the global g_last (memory) at MARK_MEM; prints what the probes must see:
 * the count, min, max and sum of each, then exits with status 3. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

volatile double g_last;
static int iters;

__attribute__((noipa)) double scale(double d, float f)
{
	return d * 2.0 + f;
}

static void *run(void *arg)
{
	double *acc = arg;
	for (int i = 0; i < iters; i++) {
		double d = i * 0.5;
		g_last = d;                         /* MARK_MEM */
		*acc += scale(d, (float)i * 0.25f);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int nt = argc > 1 ? atoi(argv[1]) : 1;
	iters = argc > 2 ? atoi(argv[2]) : 1000;
	if (nt < 1 || nt > 64 || iters < 1)
		return 1;
	pthread_t th[64];
	double acc[64] = { 0 };
	for (int i = 0; i < nt; i++)
		pthread_create(&th[i], NULL, run, &acc[i]);
	double total = 0;
	for (int i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		total += acc[i];
	}
	long n = (long)nt * iters;
	double m = iters - 1;
	/* d: 0 .. (iters-1)/2, f: 0 .. (iters-1)/4; sums over every thread */
	printf("d count %ld min 0 max %.17g sum %.17g\n", n, m * 0.5, nt * (m * (m + 1) / 2) * 0.5);
	printf("f count %ld min 0 max %.17g sum %.17g\n", n, m * 0.25, nt * (m * (m + 1) / 2) * 0.25);
	printf("total %.17g\n", total);
	return 3;
}

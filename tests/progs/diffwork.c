/* diffwork.c — the work of two runs differs by a known amount: `diffwork N`
 * calls fixed() 50 times and grows() N times, each spinning for 200 us of
 * its own; it prints its calls and the time it measured in each: wall time
 * (ns) and the thread's CPU time (cpu), both read in the function's body. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "noipa.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static volatile unsigned long sink;

static double spin(double ns)
{
	double t0 = now_ns(), t;
	while ((t = now_ns()) - t0 < ns)
		sink++;
	return t - t0;
}

static double t_fixed, t_grows, c_fixed, c_grows;
NOIPA void fixed(void) { TOUCH(); double c = cpu_ns(); t_fixed += spin(200e3); c_fixed += cpu_ns() - c; }
NOIPA void grows(void) { TOUCH(); double c = cpu_ns(); t_grows += spin(200e3); c_grows += cpu_ns() - c; }

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 50;
	for (int i = 0; i < 50; i++)
		fixed();
	for (int i = 0; i < n; i++)
		grows();
	printf("calls fixed 50\ncalls grows %d\nns fixed %.0f\nns grows %.0f\ncpu fixed %.0f\ncpu grows %.0f\n", n, t_fixed,
	       t_grows, c_fixed, c_grows);
	return 0;
}

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
/* The wall clock read around the CPU clock's: a system call, where a
 * loaded machine preempts the thread as often as anywhere, inside the
 * function for sonde too. */
#define WORK(t, c)                                   \
	do {                                             \
		TOUCH();                                     \
		double w0 = now_ns(), c0 = cpu_ns();         \
		spin(200e3);                                 \
		c += cpu_ns() - c0;                          \
		t += now_ns() - w0;                          \
	} while (0)
NOIPA void fixed(void) { WORK(t_fixed, c_fixed); }
NOIPA void grows(void) { WORK(t_grows, c_grows); }

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

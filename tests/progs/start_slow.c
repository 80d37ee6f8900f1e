/* start_slow.c — a program whose start-up is long (for attaching while the
 * dynamic loader runs, tests/e2e/attach_races.sh): linked with many shared
 * libraries (start_lib.c, built N times by the test), whose constructors
 * run before main.  main calls each library's function and work() CALLS
 * times, prints what it computed and exits with status 7.
 * Usage: start_slow CALLS */
#include <stdio.h>
#include <stdlib.h>

long start_libs(void); /* the test's generated start_all.c: every library's function, summed */

__attribute__((noinline)) long work(long i)
{
	return i * 3 + 1;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 1000, sum = start_libs();
	for (long i = 0; i < calls; i++)
		sum += work(i);
	printf("work %ld sum %ld\n", calls, sum);
	return 7;
}

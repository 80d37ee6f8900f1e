/* timing_loop.c — bench/timing_bench.sh's tight loop: main calls a small
 * leaf (tick) N times (argv[1]). */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) int tick(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	for (long i = 0; i < n; i++)
		sink += (unsigned long)tick((int)i);
	printf("%lu\n", sink);
	return 0;
}

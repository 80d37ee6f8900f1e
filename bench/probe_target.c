/* probe_target.c — benchmark target for bench/probe_bench.sh: a tight loop
 * calling hot() N times (argv[1], default 20000). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noipa)) long hot(long i)
{
	return i * 7 + 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000, s = 0;
	for (long i = 0; i < n; i++)
		s += hot(i);
	printf("%ld\n", s);
	return 0;
}

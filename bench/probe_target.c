/* probe_target.c — benchmark target for bench/probe_bench.sh: a tight loop
 * calling hot() N times (argv[1], default 20000); with a second argument
 * "f", warm() instead (a double in xmm0, for the floating-point var rows). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noipa)) long hot(long i)
{
	return i * 7 + 1;
}

__attribute__((noipa)) double warm(double x)
{
	return x * 7 + 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000, s = 0;
	if (argc > 2 && argv[2][0] == 'f') {
		double d = 0;
		for (long i = 0; i < n; i++)
			d += warm((double)i * 0.5);
		printf("%g\n", d);
		return 0;
	}
	for (long i = 0; i < n; i++)
		s += hot(i);
	printf("%ld\n", s);
	return 0;
}

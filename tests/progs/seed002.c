/* seed002.c — the worked example of seed 002 (Oracle Performance Analyzer):
 * main calls A and B; A calls C(10); B calls C(7.5), works 5 units, calls
 * C(7.5); C does 20% of its work itself, 40% in E and 40% in F; F calls G
 * for half of its share.  One unit = UNIT_MS milliseconds of busy work
 * (wall time, so preemption does not change the figures). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double unit_ms = 4.0;

static inline __attribute__((always_inline)) void work(double units)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	double ns = units * unit_ms * 1e6;
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec) < ns);
}

__attribute__((noipa)) void G(double x) { work(x); }
__attribute__((noipa)) void E(double x) { work(x); }
__attribute__((noipa)) void F(double x) { work(x / 2); G(x / 2); }
__attribute__((noipa)) void C(double arg) { work(0.2 * arg); E(0.4 * arg); F(0.4 * arg); }
__attribute__((noipa)) void A(void) { C(10); }
__attribute__((noipa)) void B(void) { C(7.5); work(5); C(7.5); }

int main(int argc, char **argv)
{
	if (argc > 1)
		unit_ms = atof(argv[1]);
	A();
	work(2);
	B();
	printf("seed002 done\n");
	return 0;
}

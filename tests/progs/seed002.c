/* seed002.c — the worked example of seed 002 (Oracle Performance Analyzer):
 * main calls A and B; A calls C(10); B calls C(7.5), works 5 units, calls
 * C(7.5); C does 20% of its work itself, 40% in E and 40% in F; F calls G
 * for half of its share.  One unit = UNIT_MS milliseconds of busy work.
 * The program measures the work it did itself, per function and per caller
 * of C (A or B), and prints it: on a loaded machine a busy loop overshoots
 * by a scheduler slice, and the test compares sonde with what really ran. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double unit_ms = 4.0;
enum { MAIN, FA, FB, FC, FE, FF, FG, NF };
static const char *const names[NF] = { "main", "A", "B", "C", "E", "F", "G" };
static double spent[NF][2]; /* ns of work by function, under A (0) or B (1) */
static int under;           /* 0 while A runs, 1 while B runs */

static inline __attribute__((always_inline)) void work(double units, int who)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	double ns = units * unit_ms * 1e6, d;
	do {
		clock_gettime(CLOCK_MONOTONIC, &b);
		d = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
	} while (d < ns);
	spent[who][under] += d;
}

__attribute__((noipa)) void G(double x) { work(x, FG); }
__attribute__((noipa)) void E(double x) { work(x, FE); }
__attribute__((noipa)) void F(double x) { work(x / 2, FF); G(x / 2); }
__attribute__((noipa)) void C(double arg) { work(0.2 * arg, FC); E(0.4 * arg); F(0.4 * arg); }
__attribute__((noipa)) void A(void) { under = 0; C(10); }
__attribute__((noipa)) void B(void) { under = 1; C(7.5); work(5, FB); C(7.5); }

int main(int argc, char **argv)
{
	if (argc > 1)
		unit_ms = atof(argv[1]);
	A();
	work(2, MAIN);
	B();
	printf("seed002 done\n");
	fprintf(stderr, "measured");
	for (int f = 0; f < NF; f++)
		fprintf(stderr, " %s=%.0f,%.0f", names[f], spent[f][0], spent[f][1]);
	fprintf(stderr, "\n");
	return 0;
}

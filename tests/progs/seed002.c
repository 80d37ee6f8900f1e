/* seed002.c — the worked example of seed 002 (Oracle Performance Analyzer):
 * main calls A and B; A calls C(10); B calls C(7.5), works 5 units, calls
 * C(7.5); C does 20% of its work itself, 40% in E and 40% in F; F calls G
 * for half of its share.  One unit = UNIT_MS milliseconds of busy work.
 * The program measures the work it did itself, per function and per caller
 * of C (A or B), and prints it: on a loaded machine a busy loop overshoots
 * by a scheduler slice, and the test compares sonde with what really ran.
 * main's own time is all of main less its calls of A and B (its busy work,
 * and whatever else it spent: a write to a busy disk), measured from its
 * first to its last statement; the measurements are printed after main has
 * returned (atexit), so that printing them is not main's time. */
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

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void print_measured(void)
{
	fprintf(stderr, "measured");
	for (int f = 0; f < NF; f++)
		fprintf(stderr, " %s=%.0f,%.0f", names[f], spent[f][0], spent[f][1]);
	fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
	double t0 = now_ns(), calls = 0, c;
	if (argc > 1)
		unit_ms = atof(argv[1]);
	c = now_ns();
	A();
	calls += now_ns() - c;
	work(2, MAIN);
	c = now_ns();
	B();
	calls += now_ns() - c;
	printf("seed002 done\n");
	atexit(print_measured);
	spent[MAIN][0] = now_ns() - t0 - calls; /* all of main's own time */
	spent[MAIN][1] = 0;
	return 0;
}

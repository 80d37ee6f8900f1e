/* recursion.c — self recursion with all work in the deepest call, self
 * recursion with work at every level, and mutual recursion.  Prints the calls
 * it made ("calls F N", "calls A->B N").  The self-recursive calls are not
 * tail calls (a store follows them), so no optimisation level turns them
 * into a loop; even() and odd() end in tail calls. */
#include <stdio.h>
#include "noipa.h"
#include "work.h"

#define W 20.0 /* ms */
/* The work each part really did (ns), printed at the end for the test. */
static double w_deep, w_every[4], w_even;
/* calls by caller -> callee, counted at each call site */
static long main_deep, deep_deep, main_every, every_every, main_even, odd_even, even_odd;
NOIPA void deep(int n)
{
	if (n == 0) {
		w_deep += work_ms(W);
	} else {
		deep_deep++;
		deep(n - 1);
		TOUCH();
	}
}
NOIPA void every(int n)
{
	w_every[n] += work_ms(W / 4);
	if (n > 0) {
		every_every++;
		every(n - 1);
		TOUCH();
	}
}
NOIPA void odd(int n);
NOIPA void even(int n) { if (n == 0) w_even += work_ms(W); else { even_odd++; odd(n - 1); } }
NOIPA void odd(int n) { if (n == 0) w_even += work_ms(W); else { odd_even++; even(n - 1); } }

int main(void)
{
	main_deep++;
	deep(5);
	main_every++;
	every(3);
	main_even++;
	even(4);
	printf("calls deep %ld\ncalls every %ld\ncalls even %ld\ncalls odd %ld\n", main_deep + deep_deep,
	       main_every + every_every, main_even + odd_even, even_odd);
	printf("calls main->deep %ld\ncalls deep->deep %ld\ncalls main->every %ld\ncalls every->every %ld\n", main_deep,
	       deep_deep, main_every, every_every);
	printf("calls main->even %ld\ncalls odd->even %ld\ncalls even->odd %ld\n", main_even, odd_even, even_odd);
	printf("recursion done\n");
	fprintf(stderr, "measured %.0f %.0f %.0f %.0f %.0f %.0f\n", w_deep, w_every[3], w_every[2], w_every[1], w_every[0], w_even);
	return 0;
}

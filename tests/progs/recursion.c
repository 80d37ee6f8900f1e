/* recursion.c — self recursion with all work in the deepest call, self
 * recursion with work at every level, and mutual recursion. */
#include <stdio.h>
#include "work.h"

#define W 20.0 /* ms */
/* The work each part really did (ns), printed at the end for the test. */
static double w_deep, w_every[4], w_even;
__attribute__((noipa)) void deep(int n) { if (n == 0) w_deep += work_ms(W); else deep(n - 1); }
__attribute__((noipa)) void every(int n) { w_every[n] += work_ms(W / 4); if (n > 0) every(n - 1); }
__attribute__((noipa)) void odd(int n);
__attribute__((noipa)) void even(int n) { if (n == 0) w_even += work_ms(W); else odd(n - 1); }
__attribute__((noipa)) void odd(int n) { if (n == 0) w_even += work_ms(W); else even(n - 1); }

int main(void)
{
	deep(5);
	every(3);
	even(4);
	printf("recursion done\n");
	fprintf(stderr, "measured %.0f %.0f %.0f %.0f %.0f %.0f\n", w_deep, w_every[3], w_every[2], w_every[1], w_every[0], w_even);
	return 0;
}

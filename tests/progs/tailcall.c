/* tailcall.c — tail calls (jmp, not call, at -O2): chain() jumps to tail(),
 * tail() jumps to leaf().  A tail-called function is nested in the one that
 * jumped to it and both end at its return.  Prints its own call counts, also
 * as "calls F N" and "calls A->B N" (counted at each call site). */
#include <stdio.h>
#include "noipa.h"

static long n_leaf, n_tail, n_chain, main_chain, main_tail;
NOIPA long leaf(long x) { n_leaf++; return x + 1; }
NOIPA long tail(long x) { n_tail++; return leaf(x * 2); }
NOIPA long chain(long x) { n_chain++; return tail(x + 1); }
int main(void)
{
	long s = 0;
	for (long i = 0; i < 1000; i++) {
		main_chain++;
		s += chain(i);
	}
	for (long i = 0; i < 500; i++) {
		main_tail++;
		s += tail(i);
	}
	printf("leaf %ld tail %ld chain %ld sum %ld\n", n_leaf, n_tail, n_chain, s);
	printf("calls leaf %ld\ncalls tail %ld\ncalls chain %ld\n", n_leaf, n_tail, n_chain);
	/* every tail() calls leaf() once, every chain() calls tail() once */
	printf("calls tail->leaf %ld\ncalls chain->tail %ld\n", n_tail, n_chain);
	printf("calls main->chain %ld\ncalls main->tail %ld\n", main_chain, main_tail);
	return 0;
}

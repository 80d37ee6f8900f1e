/* longjmp.c — a longjmp across three instrumented frames; after it, outer()
 * calls after() and returns normally: the stack must not drift.  Prints the
 * calls it made ("calls F N", "calls A->B N"). */
#include <setjmp.h>
#include <stdio.h>
#include "noipa.h"

static jmp_buf env;
/* calls by caller -> callee, counted at each call site (volatile: kept
 * across the longjmp) */
static volatile long outer_a, a_b, b_c, outer_after, main_after, main_outer;
NOIPA void c(int n) { TOUCH(); if (n) longjmp(env, 1); }
NOIPA void b(int n) { TOUCH(); b_c++; c(n); }
NOIPA void a(int n) { TOUCH(); a_b++; b(n); }
NOIPA void after(void) { TOUCH(); }
NOIPA void outer(void)
{
	if (setjmp(env) == 0) {
		outer_a++;
		a(1);
	}
	outer_after++;
	after();
}
int main(void)
{
	for (int i = 0; i < 3; i++) {
		main_outer++;
		outer();
	}
	main_after++;
	after();
	printf("calls a %ld\ncalls b %ld\ncalls c %ld\ncalls outer %ld\ncalls after %ld\n", outer_a, a_b, b_c,
	       main_outer, outer_after + main_after);
	printf("calls outer->a %ld\ncalls a->b %ld\ncalls b->c %ld\ncalls outer->after %ld\ncalls main->after %ld\n",
	       outer_a, a_b, b_c, outer_after, main_after);
	printf("longjmp done\n");
	return 0;
}

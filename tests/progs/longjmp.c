/* longjmp.c — a longjmp across three instrumented frames; after it, outer()
 * calls after() and returns normally: the stack must not drift. */
#include <setjmp.h>
#include <stdio.h>
#include "noipa.h"

static jmp_buf env;
NOIPA void c(int n) { TOUCH(); if (n) longjmp(env, 1); }
NOIPA void b(int n) { TOUCH(); c(n); }
NOIPA void a(int n) { TOUCH(); b(n); }
NOIPA void after(void) { TOUCH(); }
NOIPA void outer(void)
{
	if (setjmp(env) == 0)
		a(1);
	after();
}
int main(void)
{
	for (int i = 0; i < 3; i++)
		outer();
	after();
	printf("longjmp done\n");
	return 0;
}

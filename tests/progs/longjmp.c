/* longjmp.c — a longjmp across three instrumented frames; after it, outer()
 * calls after() and returns normally: the stack must not drift. */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
__attribute__((noipa)) void c(int n) { if (n) longjmp(env, 1); }
__attribute__((noipa)) void b(int n) { c(n); }
__attribute__((noipa)) void a(int n) { b(n); }
__attribute__((noipa)) void after(void) { }
__attribute__((noipa)) void outer(void)
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

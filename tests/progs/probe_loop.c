/* probe_loop.c — target for the probe tests: a loop of N (default 1000)
 * iterations with a function call, a RIP-relative global update, a branch,
 * a register-located local and a value for assertions.  Lines that the
 * tests probe carry a MARK comment; the tests find them by grep. */
#include <stdio.h>
#include <stdlib.h>

volatile int g_count;           /* updated through a RIP-relative operand */
volatile long g_sum;
static long noted;

__attribute__((noipa)) int work(int i)
{
	return 3 * i + 1;
}

__attribute__((noipa)) void note(int i)
{
	noted += i;
}

__attribute__((noipa)) void sink(int v)
{
	__asm__ volatile("" : : "r"(v));
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	for (int i = 0; i < n; i++) {
		int v = work(i);
		g_count++;                        /* MARK_RIP */
		if (i % 3 == 0)                   /* MARK_BRANCH */
			note(i);
		sink(v);                          /* MARK_VAR */
		g_sum += v;
	}
	printf("count %d sum %ld noted %ld\n", g_count, g_sum, noted);
	return 0;
}

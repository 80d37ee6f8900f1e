/* trace_recurse.c — main calls rec(10), a recursion 10 deep (rec at depths
 * 2..11), three times; then leaf() once at depth 2. */
#include <stdio.h>

static volatile int sink;

__attribute__((noipa)) void leaf(void) { sink++; }
__attribute__((noipa)) int rec(int n)
{
	if (n <= 1)
		return sink;
	return rec(n - 1) + 1;
}

int main(void)
{
	int s = 0;
	for (int i = 0; i < 3; i++)
		s += rec(10);
	leaf();
	printf("trace_recurse %d\n", s);
	return 0;
}

/* twins_b.c — the second static helper (see twins_a.c). */
#include "noipa.h"

static int calls_b;

static NOIPA int helper(int x)
{
	TOUCH();
	calls_b++;
	return x + 1;
}

NOIPA int run_b(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += helper(i);
	return s;
}

int calls_of_b(void)
{
	return calls_b;
}

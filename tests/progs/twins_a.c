/* twins_a.c — with twins_b.c: two static functions named helper, one per
 * file, called a different number of times (twins_a.c has main).  Prints
 * how many times each ran. */
#include <stdio.h>
#include <stdlib.h>

#include "noipa.h"

static int calls_a;

static NOIPA int helper(int x)
{
	TOUCH();
	calls_a++;
	return x * 3;
}

int run_b(int n);       /* twins_b.c */
int calls_of_b(void);

static NOIPA int run_a(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += helper(i);
	return s;
}

int main(int argc, char **argv)
{
	int na = argc > 1 ? atoi(argv[1]) : 7;
	int nb = argc > 2 ? atoi(argv[2]) : 12;
	int s = run_a(na) + run_b(nb);
	printf("helper@twins_a.c %d\nhelper@twins_b.c %d\nsum %d\n", calls_a, calls_of_b(), s);
	return 0;
}

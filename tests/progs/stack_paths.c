/* stack_paths.c — one function (leaf) called from three call paths a known
 * number of times each, for stack probes (tests/e2e/probe_stack.sh):
 *   main -> path_a -> leaf                 A times
 *   main -> path_b -> middle -> leaf       B times
 *   main -> path_c -> middle2 -> deeper -> leaf  C times
 * A, B, C from argv (default 3 5 7); prints them and a checksum.  A fourth
 * argument D adds one call main -> recurse x (D+1) -> leaf (a deep stack). */
#include <stdio.h>
#include <stdlib.h>

#include "noipa.h"

NOIPA int leaf(int x)
{
	TOUCH();
	return x * 3 + 1;
}

NOIPA int path_a(int x)
{
	TOUCH();
	return leaf(x) + 1; /* work after the call: no tail call */
}

NOIPA int middle(int x)
{
	TOUCH();
	return leaf(x) + 2;
}

NOIPA int path_b(int x)
{
	TOUCH();
	return middle(x) + 3;
}

NOIPA int deeper(int x)
{
	TOUCH();
	return leaf(x) + 4;
}

NOIPA int middle2(int x)
{
	TOUCH();
	return deeper(x) + 5;
}

NOIPA int path_c(int x)
{
	TOUCH();
	return middle2(x) + 6;
}

NOIPA int recurse(int d)
{
	TOUCH();
	if (d == 0)
		return leaf(d) + 7;
	int r = recurse(d - 1);
	TOUCH(); /* a store after the call: neither a tail call nor a loop */
	return r + 7;
}

int main(int argc, char **argv)
{
	int a = argc > 1 ? atoi(argv[1]) : 3;
	int b = argc > 2 ? atoi(argv[2]) : 5;
	int c = argc > 3 ? atoi(argv[3]) : 7;
	long sum = 0;
	for (int i = 0; i < a; i++)
		sum += path_a(i);
	for (int i = 0; i < b; i++)
		sum += path_b(i);
	for (int i = 0; i < c; i++)
		sum += path_c(i);
	if (argc > 4) {
		int d = atoi(argv[4]);
		sum += recurse(d);
		printf("recurse %d\n", d);
	}
	printf("path_a %d\npath_b %d\npath_c %d\nsum %ld\n", a, b, c, sum);
	return 0;
}

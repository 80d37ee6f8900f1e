/* fib.c — a recursive, call-bound micro benchmark: fib(n) makes about
 * 2*fib(n+1) calls of a tiny function. */
#include <stdio.h>
#include <stdlib.h>
__attribute__((noipa)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 32;
	printf("%ld\n", fib(n));
	return 0;
}

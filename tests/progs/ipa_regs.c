/* ipa_regs.c — callers that keep values in call-clobbered registers across
 * calls of small functions of the same file: gcc -O2 (-fipa-ra) knows which
 * registers leaf() and tiny() really write, and keeps the loop's sum and
 * counter in others (rsi, rdx, rcx, r8...) over the call instead of saving
 * them.  A probe's return path must therefore keep every register.  The
 * program prints its sums and the number of calls; argv[1] = calls (default
 * 1000000).  tiny() is 4 bytes (a probe there is an int3 site: a 5-byte jump
 * would run past its end), leaf() is longer (a jump site). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int tiny(int x)
{
	__asm__ volatile("");
	return x + 1;
}

__attribute__((noinline)) long leaf(long a, long b)
{
	__asm__ volatile("");
	return a * 3 + (b ^ 5) - (a >> 2);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000000;
	long s = 0, t = 0, u = 7;
	for (int i = 0; i < n; i++) {
		s += tiny(i);
		t += leaf(i, s);
		u ^= t + i;
	}
	printf("calls %d sum_tiny %ld sum_leaf %ld mix %ld\n", n, s, t, u);
	return 0;
}

/* heap_churn.c — a single-threaded program that spends half its time
 * inside malloc's system calls: 24 blocks of ~60 kB taken and given back
 * each round, so that the heap's top grows and is trimmed by brk every
 * round (strace -c: brk is 100% of its system calls), and about as long
 * in its own code.  It prints "started",
 * then "done SUM" (SUM: 24 x rounds x 1, its own count of blocks read).
 * tests/e2e/attach_races.sh attaches to it: a stop in brk is inside malloc,
 * which takes no lock in a single-threaded program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) void *get(size_t n){ void *p = malloc(n); memset(p, 1, 64); return p; }
/* its own work between rounds, as long as a round's brk calls: a stop out
 * of libc comes often enough for an attach to find one */
static volatile unsigned long sink;
__attribute__((noinline)) unsigned long own(unsigned long x)
{
	for (int i = 0; i < 130000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x >> 63;
}
int main(int argc, char **argv){
	long rounds = argc > 1 ? atol(argv[1]) : 200000; void *b[24]; unsigned long sum = 0;
	printf("started\n"); fflush(stdout);
	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < 24; i++) b[i] = get(60000 + (size_t)(r % 7) * 1000);
		for (int i = 23; i >= 0; i--) { sum += ((unsigned char *)b[i])[3]; free(b[i]); }
		sink = own((unsigned long)r);
	}
	printf("done %lu\n", sum); return 0;
}

/* timing_counts.c — record --timing's test program (tests/e2e/profile_timing.sh):
 * a small leaf (tick), a function that calls it (step), one above
 * (round) and a longjmp out of a counted leaf's caller; it prints how many
 * times it called each, counted by itself. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;
static unsigned long n_tick, n_step, n_round, n_jump;
static jmp_buf env;

__attribute__((noinline)) int tick(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

__attribute__((noinline)) void jump_out(int k)
{
	n_jump++;
	n_tick++;
	sink += (unsigned long)tick(k);
	longjmp(env, 1);
}

__attribute__((noinline)) void step(int k)
{
	n_step++;
	for (int i = 0; i < k; i++) {
		n_tick++;
		sink += (unsigned long)tick(i);
	}
}

__attribute__((noinline)) void round_(int k)
{
	n_round++;
	step(k);
	n_tick++;
	sink += (unsigned long)tick(k);
	if (setjmp(env) == 0)
		jump_out(k);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1000;
	for (int r = 0; r < rounds; r++)
		round_(r % 17);
	printf("tick %lu\nstep %lu\nround_ %lu\njump_out %lu\n", n_tick, n_step, n_round, n_jump);
	return 0;
}

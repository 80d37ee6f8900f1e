/* switch_cost.c — what a recorded call that spans a context switch costs
 * (bench/switch_cost_bench.sh): two threads pass a byte back and forth over
 * two pipes, ROUNDS times; each side's turn is a call (ask, serve) that
 * blocks in read() until the other thread writes, so every call spans a
 * switch of its thread (two, on one CPU).  Prints the nanoseconds of the fastest and the median of
 * BATCHES batches of ROUNDS / BATCHES round trips. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static long rounds;

/* the echo thread's call: waits for the byte, sends it back */
__attribute__((noinline)) void serve(void)
{
	char c;
	if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
		exit(3);
}

/* the main thread's call: sends the byte, waits for it to come back */
__attribute__((noinline)) void ask(void)
{
	char c = 'x';
	if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
		exit(3);
}

static void *echo(void *arg)
{
	(void)arg;
	for (long i = 0; i < rounds; i++)
		serve();
	return NULL;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int batches = argc > 2 ? atoi(argv[2]) : 20;
	long per = (argc > 1 ? atol(argv[1]) : 20000) / batches;
	rounds = per * batches;
	if (pipe(ab) || pipe(ba))
		return 2;
	pthread_t t;
	pthread_create(&t, NULL, echo, NULL);
	double *b = malloc(sizeof *b * batches);
	for (int k = 0; k < batches; k++) {
		double t0 = now();
		for (long i = 0; i < per; i++)
			ask();
		b[k] = (now() - t0) / per;
	}
	pthread_join(t, NULL);
	qsort(b, batches, sizeof *b, cmp);
	printf("fastest %.1f median %.1f ns per round trip\n", b[0], b[batches / 2]);
	return 0;
}

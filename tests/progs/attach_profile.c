/* attach_profile.c — a program for `sonde record -p` (tests/e2e/attach_profile.sh).
 * Usage: attach_profile FIFO PIDFILE [N]
 * Writes its pid to PIDFILE, then waits for a line on FIFO; phase 1: two
 * threads run the work (N leaf calls each, default 100000) and it prints
 * the calls it made of each function, counted by itself; then it waits for
 * a second line; phase 2 runs the same work again (calls after sonde has
 * ended) and prints its counts; exits with status 3. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "noipa.h"

static atomic_long n_leaf, n_middle, n_rec, n_worker, n_phase;
static long per_thread = 100000;

NOIPA static long leaf(long x)
{
	TOUCH();
	atomic_fetch_add_explicit(&n_leaf, 1, memory_order_relaxed);
	return x * 3 + 1;
}

NOIPA static long middle(long k)
{
	TOUCH();
	atomic_fetch_add_explicit(&n_middle, 1, memory_order_relaxed);
	long s = 0;
	for (long i = 0; i < k; i++)
		s += leaf(i);
	return s;
}

NOIPA static long rec(int d)
{
	TOUCH();
	atomic_fetch_add_explicit(&n_rec, 1, memory_order_relaxed);
	return d ? rec(d - 1) + leaf(d) : 0;
}

NOIPA static void *worker(void *arg)
{
	TOUCH();
	atomic_fetch_add_explicit(&n_worker, 1, memory_order_relaxed);
	long s = (long)(intptr_t)arg;
	for (long i = 0; i < per_thread / 1000; i++)
		s += middle(1000 - 10) + rec(9); /* 990 + 9 leaf calls */
	return (void *)(intptr_t)(s & 1);
}

NOIPA static void phase(int k)
{
	TOUCH();
	atomic_fetch_add_explicit(&n_phase, 1, memory_order_relaxed);
	atomic_store(&n_leaf, 0), atomic_store(&n_middle, 0), atomic_store(&n_rec, 0), atomic_store(&n_worker, 0);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("phase %d: leaf %ld middle %ld rec %ld worker %ld phase 1\n", k, atomic_load(&n_leaf),
	       atomic_load(&n_middle), atomic_load(&n_rec), atomic_load(&n_worker));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	if (argc > 3)
		per_thread = atol(argv[3]);
	FILE *pf = fopen(argv[2], "w");
	if (!pf)
		return 2;
	fprintf(pf, "%d\n", (int)getpid());
	fclose(pf);
	FILE *in = fopen(argv[1], "r");
	char line[64];
	if (!in || !fgets(line, sizeof line, in))
		return 2;
	phase(1);
	if (!fgets(line, sizeof line, in))
		return 2;
	phase(2);
	printf("done\n");
	return 3;
}

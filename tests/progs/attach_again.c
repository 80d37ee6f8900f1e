/* attach_again.c — a program attached again and again (tests/e2e/attach_again.sh).
 * Usage: attach_again FIFO PIDFILE [N]
 * Writes its pid to PIDFILE, starts a worker thread that lives as long as
 * the program, then serves the lines of FIFO: "go" runs one round (the main
 * thread and the worker each make N leaf calls through middle, and the
 * worker takes a mutex N times) and prints the round's own counts, counted
 * by itself; end of file ends it with status 3.  serve() and worker_loop()
 * run from before the first attach to the end: their frames stay on the
 * stacks across every recording. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "noipa.h"

static atomic_long n_leaf, n_middle, n_round, n_lock;
static long per_round = 20000;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, hot_lock = PTHREAD_MUTEX_INITIALIZER; /* named in sonde locks */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int asked, done, quit;

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

/* N leaf calls in N / 100 middle calls. */
NOIPA static long work(void)
{
	TOUCH();
	long s = 0;
	for (long i = 0; i < per_round / 100; i++)
		s += middle(100);
	return s;
}

NOIPA static void *worker_loop(void *arg)
{
	TOUCH();
	(void)arg;
	long s = 0;
	pthread_mutex_lock(&m);
	for (;;) {
		while (!asked && !quit)
			pthread_cond_wait(&cv, &m);
		if (quit)
			break;
		asked = 0;
		pthread_mutex_unlock(&m);
		s += work();
		for (long i = 0; i < per_round; i++) {
			pthread_mutex_lock(&hot_lock);
			atomic_fetch_add_explicit(&n_lock, 1, memory_order_relaxed);
			pthread_mutex_unlock(&hot_lock);
		}
		pthread_mutex_lock(&m);
		done = 1;
		pthread_cond_broadcast(&cv);
	}
	pthread_mutex_unlock(&m);
	return (void *)(intptr_t)(s & 1);
}

NOIPA static void round_once(void)
{
	TOUCH();
	atomic_fetch_add_explicit(&n_round, 1, memory_order_relaxed);
	atomic_store(&n_leaf, 0), atomic_store(&n_middle, 0), atomic_store(&n_lock, 0);
	pthread_mutex_lock(&m);
	asked = 1;
	done = 0;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&m);
	long s = work();
	pthread_mutex_lock(&m);
	while (!done)
		pthread_cond_wait(&cv, &m);
	pthread_mutex_unlock(&m);
	printf("round %ld: leaf %ld middle %ld round_once 1 hot_lock %ld (%ld)\n", atomic_load(&n_round),
	       atomic_load(&n_leaf), atomic_load(&n_middle), atomic_load(&n_lock), s & 1);
	fflush(stdout);
}

NOIPA static int serve(FILE *in)
{
	TOUCH();
	char line[64];
	while (fgets(line, sizeof line, in))
		if (!strncmp(line, "go", 2))
			round_once();
	return 3;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	if (argc > 3)
		per_round = atol(argv[3]);
	pthread_t t;
	pthread_create(&t, NULL, worker_loop, NULL);
	FILE *pf = fopen(argv[2], "w");
	if (!pf)
		return 2;
	fprintf(pf, "%d\n", (int)getpid());
	fclose(pf);
	FILE *in = fopen(argv[1], "r");
	if (!in)
		return 2;
	int rc = serve(in);
	pthread_mutex_lock(&m);
	quit = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&m);
	pthread_join(t, NULL);
	printf("end\n");
	return rc;
}

/* trace_threads.c — five threads (main + 4 named workers) with known call
 * counts, for the trace tests:
 *   worker k (k = 1..4), named "worker-k": worker 1, mid 10*k, leaf 20*k + k
 *   main thread: main 1, spawn 1, mid 5, leaf 10
 * (mid calls leaf twice).  Prints the calls each thread made, counted as they
 * happen ("thread NAME F N"), and their totals ("calls F N"). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include "noipa.h"

static volatile int sink;
static _Thread_local long n_leaf, n_mid;
/* per thread: [0] main, [k] worker-k; the names as the system has them */
static long t_leaf[5], t_mid[5], t_worker[5];
static char t_name[5][16];

NOIPA void leaf(void) { n_leaf++; sink++; }
NOIPA void mid(void) { n_mid++; leaf(); leaf(); }

NOIPA void *worker(void *arg)
{
	int k = (int)(long)arg;
	char name[16];
	t_worker[k]++;
	snprintf(name, sizeof name, "worker-%d", k);
	pthread_setname_np(pthread_self(), name);
	usleep(2000);
	for (int i = 0; i < 10 * k; i++)
		mid();
	for (int i = 0; i < k; i++)
		leaf();
	t_leaf[k] = n_leaf;
	t_mid[k] = n_mid;
	pthread_getname_np(pthread_self(), t_name[k], sizeof t_name[k]);
	return NULL;
}

static long n_spawn;
NOIPA void spawn(pthread_t *t)
{
	n_spawn++;
	for (long k = 1; k <= 4; k++)
		pthread_create(&t[k - 1], NULL, worker, (void *)k);
}

int main(void)
{
	pthread_t t[4];
	spawn(t);
	for (int i = 0; i < 5; i++)
		mid();
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	t_leaf[0] = n_leaf;
	t_mid[0] = n_mid;
	pthread_getname_np(pthread_self(), t_name[0], sizeof t_name[0]);
	long leaf_all = 0, mid_all = 0, worker_all = 0;
	for (int k = 0; k <= 4; k++) {
		const char *name = t_name[k];
		printf("thread %s mid %ld\nthread %s leaf %ld\n", name, t_mid[k], name, t_leaf[k]);
		if (k)
			printf("thread %s worker %ld\n", name, t_worker[k]);
		else
			printf("thread %s main 1\nthread %s spawn %ld\n", name, name, n_spawn);
		leaf_all += t_leaf[k];
		mid_all += t_mid[k];
		worker_all += t_worker[k];
	}
	printf("calls main 1\ncalls spawn %ld\ncalls worker %ld\ncalls mid %ld\ncalls leaf %ld\n", n_spawn, worker_all,
	       mid_all, leaf_all);
	printf("trace_threads done\n");
	return 0;
}

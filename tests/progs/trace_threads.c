/* trace_threads.c — five threads (main + 4 named workers) with known call
 * counts, for the trace tests:
 *   worker k (k = 1..4), named "worker-k": worker 1, mid 10*k, leaf 20*k + k
 *   main thread: main 1, spawn 1, mid 5, leaf 10
 * (mid calls leaf twice). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noipa)) void leaf(void) { sink++; }
__attribute__((noipa)) void mid(void) { leaf(); leaf(); }

__attribute__((noipa)) void *worker(void *arg)
{
	int k = (int)(long)arg;
	char name[16];
	snprintf(name, sizeof name, "worker-%d", k);
	pthread_setname_np(pthread_self(), name);
	usleep(2000);
	for (int i = 0; i < 10 * k; i++)
		mid();
	for (int i = 0; i < k; i++)
		leaf();
	return NULL;
}

__attribute__((noipa)) void spawn(pthread_t *t)
{
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
	printf("trace_threads done\n");
	return 0;
}

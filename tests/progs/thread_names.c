/* thread_names.c — thread names set in the three ways a program can:
 * a worker names itself with pthread_setname_np ("self-named"), another
 * with prctl(PR_SET_NAME) ("prctl-named"), and main names a third one with
 * pthread_setname_np on it ("named-by-main").  Each worker calls work()
 * once; the program prints "thread NAME" for each. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>

#include "noipa.h"

static volatile int sink;
NOIPA void work(void) { TOUCH(); sink++; }
static pthread_barrier_t named;

static void *self_named(void *a)
{
	(void)a;
	pthread_setname_np(pthread_self(), "self-named");
	work();
	return NULL;
}

static void *prctl_named(void *a)
{
	(void)a;
	prctl(PR_SET_NAME, "prctl-named", 0, 0, 0);
	work();
	return NULL;
}

static void *by_main(void *a)
{
	(void)a;
	pthread_barrier_wait(&named); /* main has named it */
	work();
	return NULL;
}

int main(void)
{
	pthread_t t[3];
	pthread_barrier_init(&named, NULL, 2);
	pthread_create(&t[0], NULL, self_named, NULL);
	pthread_create(&t[1], NULL, prctl_named, NULL);
	pthread_create(&t[2], NULL, by_main, NULL);
	pthread_setname_np(t[2], "named-by-main");
	pthread_barrier_wait(&named);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("thread self-named\nthread prctl-named\nthread named-by-main\n");
	return 0;
}

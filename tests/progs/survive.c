/* survive.c — a program whose recorder is killed while it runs (issue 15,
 * "When sonde dies, the program does not").  Two threads make argv[3] calls
 * of outer() each (more events than a trace ring holds: the recorder drains
 * them while it lives), then the program writes its pid to argv[1], waits
 * until the file argv[2] exists (the test kills sonde meanwhile), and the
 * threads make argv[4] more each (default 1500000; record_killed.sh asks for
 * far more events than a trace ring holds, after the kill).  outer() takes a
 * mutex (lock events for --locks=events).  It prints its own count of the
 * calls of each function and of the lock's acquisitions, before the kill and
 * in all, for the test to compare with the recovered recording, or with its
 * plain run.  Exit status 7. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "noipa.h"

#define NTHREADS 2

static _Atomic unsigned long n_outer, n_inner_a, n_inner_b, n_lock;
static volatile unsigned long sink;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t before_kill, after_kill;
static unsigned long before, after = 1500000;

NOIPA void inner_a(unsigned long i) { atomic_fetch_add_explicit(&n_inner_a, 1, memory_order_relaxed); sink += i; }
NOIPA void inner_b(unsigned long i) { atomic_fetch_add_explicit(&n_inner_b, 1, memory_order_relaxed); sink ^= i; }

NOIPA void outer(unsigned long i)
{
	atomic_fetch_add_explicit(&n_outer, 1, memory_order_relaxed);
	inner_a(i);
	if (i % 3 == 0)
		inner_b(i);
	if (i % 4 == 0) {
		pthread_mutex_lock(&mu);
		atomic_fetch_add_explicit(&n_lock, 1, memory_order_relaxed);
		pthread_mutex_unlock(&mu);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < before; i++)
		outer(i);
	pthread_barrier_wait(&before_kill);
	pthread_barrier_wait(&after_kill);
	for (unsigned long i = 0; i < after; i++)
		outer(i);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	before = strtoul(argv[3], NULL, 10);
	if (argc > 4)
		after = strtoul(argv[4], NULL, 10);
	pthread_barrier_init(&before_kill, NULL, NTHREADS + 1);
	pthread_barrier_init(&after_kill, NULL, NTHREADS + 1);
	pthread_t t[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 2;
	pthread_barrier_wait(&before_kill);
	unsigned long b_outer = n_outer, b_a = n_inner_a, b_b = n_inner_b, b_lock = n_lock;
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 2;
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	while (access(argv[2], F_OK) != 0)
		usleep(10000);
	pthread_barrier_wait(&after_kill);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	printf("before outer %lu\nbefore inner_a %lu\nbefore inner_b %lu\nbefore lock %lu\n", b_outer, b_a, b_b, b_lock);
	printf("outer %lu\ninner_a %lu\ninner_b %lu\nlock %lu\n", (unsigned long)n_outer, (unsigned long)n_inner_a,
	       (unsigned long)n_inner_b, (unsigned long)n_lock);
	return 7;
}

/* lock_condwait.c — condition waits of a known minimum length: a waiter
 * waits N times (default 5) on `ready_cond`; each time the signaller sleeps
 * DELAY_MS (default 20) ms after the waiter is known to be waiting, then
 * signals.  Every wait therefore lasts at least DELAY_MS.  Prints N, the
 * delay, and how many times the waiter called pthread_cond_wait. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cond = PTHREAD_COND_INITIALIZER;
static int round_no;       /* signaller's round, published under ready_lock */
static int waiting;        /* the waiter is in (or about to enter) its wait */
static int wait_calls;
static int delay_ms = 20;

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts))
		;
}

static void *signaller(void *arg)
{
	int n = *(int *)arg;
	for (int r = 1; r <= n; r++) {
		/* Until the waiter has set `waiting`: it set it under the lock and
		 * waits in the same critical section, so once we get the lock and
		 * see it, the waiter is blocked in pthread_cond_wait. */
		for (;;) {
			pthread_mutex_lock(&ready_lock);
			int w = waiting;
			pthread_mutex_unlock(&ready_lock);
			if (w)
				break;
			sleep_ms(1);
		}
		sleep_ms(delay_ms);
		pthread_mutex_lock(&ready_lock);
		round_no = r;
		waiting = 0;
		pthread_cond_signal(&ready_cond);
		pthread_mutex_unlock(&ready_lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5;
	if (argc > 2)
		delay_ms = atoi(argv[2]);
	pthread_t t;
	pthread_create(&t, NULL, signaller, &n);
	for (int r = 1; r <= n; r++) {
		pthread_mutex_lock(&ready_lock);
		waiting = 1;
		while (round_no < r) {
			wait_calls++;
			pthread_cond_wait(&ready_cond, &ready_lock);
		}
		pthread_mutex_unlock(&ready_lock);
	}
	pthread_join(t, NULL);
	printf("rounds %d delay_ms %d cond_waits %d\n", n, delay_ms, wait_calls);
	return 0;
}

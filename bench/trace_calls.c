/* trace_calls.c — a call-heavy program for the trace benchmark: recursive
 * fib (tiny calls, deep and shallow) and a loop of small leaf calls, in two
 * threads.  argv[1] scales the work. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static volatile long sink;

__attribute__((noipa)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__attribute__((noipa)) void leaf(long i) { sink += i; }
__attribute__((noipa)) void loop(long n)
{
	for (long i = 0; i < n; i++)
		leaf(i);
}

__attribute__((noipa)) void *work(void *arg)
{
	int scale = (int)(long)arg;
	for (int r = 0; r < scale; r++) {
		sink += fib(22);
		loop(20000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int scale = argc > 1 ? atoi(argv[1]) : 20;
	pthread_t t;
	pthread_create(&t, NULL, work, (void *)(long)scale);
	work((void *)(long)scale);
	pthread_join(t, NULL);
	printf("trace_calls %ld\n", sink);
	return 0;
}

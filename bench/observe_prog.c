/* observe_prog.c — what observe.c's and context.c's wrappers cost
 * (bench/observe_bench.sh): ns per backtrace() call made DEPTH instrumented
 * frames deep, us per thread whose start routine is 10 instrumented frames
 * deep when it ends, by returning or by pthread_exit, and ns per
 * swapcontext between two contexts that are each DEPTH instrumented frames
 * deep.  Prints its own timings (CPU time).
 * Usage: observe_prog [BACKTRACE_CALLS [THREADS [DEPTH [SWITCHES]]]] */
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <ucontext.h>

static volatile long sink;
/* CPU time of the process (threads included): the machine is shared, and
 * wall time would count the other programs' turns. */
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static long bt_calls;
__attribute__((noipa)) void bt_deep(int n)
{
	if (n) {
		bt_deep(n - 1);
	} else {
		void *buf[64];
		for (long i = 0; i < bt_calls; i++)
			sink += backtrace(buf, 64);
	}
	sink++;
}

__attribute__((noipa)) void th_deep(int n, int by_exit)
{
	if (n)
		th_deep(n - 1, by_exit);
	else if (by_exit)
		pthread_exit(NULL);
	sink++;
}

static void *th_main(void *arg)
{
	th_deep(10, arg != NULL);
	return NULL;
}

/* Ping-pong: main and a coroutine, each `depth` frames deep, switch
 * `switches` times in all. */
static ucontext_t main_ctx, co_ctx;
static long co_left;
__attribute__((noipa)) void co_deep(int n)
{
	if (n) {
		co_deep(n - 1);
	} else {
		while (co_left > 0) {
			co_left -= 2;
			swapcontext(&co_ctx, &main_ctx);
		}
	}
	sink++;
}

static void co_start(int depth)
{
	co_deep(depth);
}

static long sw_switches;
static double sw_ns;
__attribute__((noipa)) void main_deep(int n)
{
	if (n) {
		main_deep(n - 1);
	} else {
		double t0 = now();
		long done = 0;
		while (co_left > 0) {
			swapcontext(&main_ctx, &co_ctx);
			done += 2;
		}
		sw_ns = (now() - t0) / done * 1e9;
	}
	sink++;
}

static double threads(int n, int by_exit)
{
	double t0 = now();
	for (int i = 0; i < n; i++) {
		pthread_t t;
		pthread_create(&t, NULL, th_main, by_exit ? (void *)1 : NULL);
		pthread_join(t, NULL);
	}
	return (now() - t0) / n * 1e6;
}

int main(int argc, char **argv)
{
	bt_calls = argc > 1 ? atol(argv[1]) : 200000;
	int nthreads = argc > 2 ? atoi(argv[2]) : 2000;
	int depth = argc > 3 ? atoi(argv[3]) : 20;
	sw_switches = argc > 4 ? atol(argv[4]) : 200000;
	void *warm[4];
	backtrace(warm, 4); /* libgcc_s loaded */
	double t0 = now();
	bt_deep(depth);
	double bt_ns = (now() - t0) / bt_calls * 1e9;
	threads(100, 1);
	double ret_us = threads(nthreads, 0), exit_us = threads(nthreads, 1);
	static char co_stack[1 << 18];
	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = co_stack;
	co_ctx.uc_stack.ss_size = sizeof co_stack;
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, (void (*)(void))co_start, 1, depth);
	co_left = sw_switches;
	main_deep(depth);
	printf("backtrace_ns %.1f\nthread_return_us %.2f\nthread_pthread_exit_us %.2f\nswapcontext_ns %.1f\n", bt_ns,
	       ret_us, exit_us, sw_ns);
	return 0;
}

/* timing_threads.c — record --timing's counts where a counted function's
 * stub counts it itself (tests/e2e/profile_timing.sh): tick() is called by
 * four threads (a different number of times each), by a SIGPROF handler
 * that interrupts them every 200 us of CPU time (so signals land inside
 * the stubs' counting instructions), and by a forked child.  Each process
 * prints how many times it called tick, counted by itself:
 *   parent tick N      (its threads' calls and its handler's)
 *   child tick M */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile sig_atomic_t in_handler;
static unsigned long n_handler;

__attribute__((noinline)) int tick(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

static void on_prof(int sig)
{
	(void)sig;
	/* atomic: SIGPROF is the process's, so two threads can be in this
	 * handler at once (sa_mask blocks it only in the thread it runs on) */
	__atomic_fetch_add(&n_handler, 1, __ATOMIC_RELAXED);
	sink += (unsigned long)tick(7);
}

static void *worker(void *arg)
{
	unsigned long n = (unsigned long)(uintptr_t)arg;
	for (unsigned long i = 0; i < n; i++)
		sink += (unsigned long)tick((int)i);
	return NULL;
}

int main(void)
{
	static const unsigned long per[4] = { 30000000, 20000001, 15000003, 9999999 };
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sigfillset(&sa.sa_mask); /* no other signal interrupts the handler on its thread */
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	setitimer(ITIMER_PROF, &it, NULL);
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)per[i]);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		worker((void *)(uintptr_t)777777);
		printf("child tick %lu\n", 777777ul);
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	unsigned long total = __atomic_load_n(&n_handler, __ATOMIC_RELAXED);
	for (int i = 0; i < 4; i++)
		total += per[i];
	printf("parent tick %lu\nhandler tick %lu\n", total, total - (per[0] + per[1] + per[2] + per[3]));
	return 0;
}

/* attach_locks.c — a plain (not sonde-built) program for `sonde record
 * --locks -p` (tests/e2e/attach_locks.sh).
 * Usage: attach_locks FIFO PIDFILE [N]
 * Before the attach: takes held_lock, and a thread waits for it (blocked in
 * the kernel); then it writes its pid to PIDFILE and waits for a line on
 * FIFO.  Phase 1: releases held_lock (the waiter takes it and releases it,
 * then takes and releases it 10 more times), 4 threads make N lock/unlock
 * pairs each on hot_lock (default 50000), and libattach_locks.so is
 * dlopen'ed by bare name (found only through this program's DT_RUNPATH
 * $ORIGIN) and makes its own lock calls.  It prints the counts it made
 * itself.  Then it waits for a second line; phase 2 runs the same work again
 * (after sonde ended) and exits with status 3.  On stderr (not compared
 * with an unattached run): whether its GOT entry of pthread_mutex_lock
 * held libc's function at the end of each phase, and in a child forked
 * then. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

pthread_mutex_t hot_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static long per_thread = 50000, counter;
static int waiter_rounds;

static void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < per_thread; i++) {
		pthread_mutex_lock(&hot_lock);
		counter++;
		pthread_mutex_unlock(&hot_lock);
	}
	return NULL;
}

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&held_lock); /* blocks until after the attach */
	pthread_mutex_unlock(&held_lock);
	for (int i = 0; i < 10; i++) {
		pthread_mutex_lock(&held_lock);
		waiter_rounds++;
		pthread_mutex_unlock(&held_lock);
	}
	return NULL;
}

/* What this program's GOT holds for pthread_mutex_lock now (a load per call). */
__attribute__((noinline)) static void *got_value(void)
{
	void *volatile p = (void *)pthread_mutex_lock;
	return p;
}

static void got_state(int phase)
{
	void *libc = dlsym(RTLD_NEXT, "pthread_mutex_lock");
	fprintf(stderr, "phase %d got %s\n", phase, got_value() == libc ? "libc" : "redirected");
	fflush(stderr);
	pid_t c = fork(); /* a child forked now: not recorded, libc's functions at once */
	if (c == 0) {
		pthread_mutex_lock(&hot_lock);
		pthread_mutex_unlock(&hot_lock);
		fprintf(stderr, "phase %d child got %s\n", phase, got_value() == libc ? "libc" : "redirected");
		_exit(0);
	}
	if (c > 0)
		waitpid(c, NULL, 0);
}

static void phase(int k, FILE *fifo)
{
	char line[64];
	if (k > 1 && !fgets(line, sizeof line, fifo))
		exit(1);
	counter = 0;
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	void *lib = dlopen("libattach_locks.so", RTLD_NOW);
	if (!lib) {
		printf("dlopen failed: %s\n", dlerror());
		exit(1);
	}
	long (*lib_work)(long) = (long (*)(long))dlsym(lib, "lib_work");
	long lib_n = lib_work(30000);
	got_state(k); /* before the line the test waits for */
	printf("phase %d: hot_lock %ld lib_lock %ld\n", k, counter, lib_n);
	fflush(stdout);
	dlclose(lib);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 1;
	if (argc > 3)
		per_thread = atol(argv[3]);
	pthread_mutex_lock(&held_lock); /* taken before the attach, released after it */
	pthread_t w;
	pthread_create(&w, NULL, waiter, NULL);
	while (held_lock.__data.__lock != 2) /* glibc: 2 = locked with a waiter */
		usleep(1000);
	FILE *pf = fopen(argv[2], "w");
	if (!pf)
		return 1;
	fprintf(pf, "%d\n", (int)getpid());
	fclose(pf);
	FILE *fifo = fopen(argv[1], "r");
	if (!fifo)
		return 1;
	char line[64];
	if (!fgets(line, sizeof line, fifo))
		return 1;
	pthread_mutex_unlock(&held_lock);
	pthread_join(w, NULL);
	printf("held_lock: the waiter took it %d more times\n", waiter_rounds);
	phase(1, fifo);
	phase(2, fifo); /* after a second line */
	fclose(fifo);
	return 3;
}

/* cpu_wait.c — functions whose time is on the CPU, off it, or both, each
 * measuring itself at every call, from its body's first statement to its
 * last (CLOCK_MONOTONIC for the wall time, CLOCK_THREAD_CPUTIME_ID for the
 * time on a CPU; measured in the caller, a preemption between the
 * caller's reading and the call would count too), for issue 38's on-CPU /
 * off-CPU split:
 *   burn      spins for 4 ms of its own CPU time
 *   nap       sleeps 3 ms (nanosleep)
 *   await     waits on a condition variable that a thread signals 3 ms later
 *   drain     reads 4 bytes from a pipe a child process fills one byte per 1 ms
 *   contend   spins 4 ms of CPU time beside a hog process on the same CPU
 *             (the program and the hog pinned to one CPU; preempted)
 *   mixed     burn, then nap, then burn (its CPU time is its callees')
 * Each call is also measured by its caller (CALL below).
 * main calls each ROUNDS times (argument 1, default 6; burn and nap are
 * called by mixed too).  At the end it prints on stderr a line per
 * function: "own NAME calls N wall W cpu C" (nanoseconds, summed over all
 * its calls; then "outer_wall W outer_cpu C", the caller's readings).  With "wait" as argument 2 it first
 * prints "waiting PID" and waits for a byte on stdin (a test attaches
 * meanwhile); with "end" as
 * argument 3 it also waits for one after its work ("waiting again"),
 * blocked in read inside main. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t clock_of(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

#define CPU_NS() clock_of(CLOCK_THREAD_CPUTIME_ID)

enum { F_BURN, F_NAP, F_AWAIT, F_DRAIN, F_CONTEND, F_MIXED, F_N };
static const char *names[F_N] = { "burn", "nap", "await", "drain", "contend", "mixed" };
static uint64_t calls[F_N], wall[F_N], cpu[F_N];

/* A function's body between OWN_BEGIN and OWN_END(k) is measured; and
 * each call from its caller, CALL(k, call): the same clocks read before the
 * call and after it, sums in outer_wall / outer_cpu.  The two bracket
 * what a tool that times calls at their entry and exit can see: its hooks
 * run between the caller's readings and the body's. */
static uint64_t outer_wall[F_N], outer_cpu[F_N];
#define CALL(k, call)                                                           \
	do {                                                                        \
		uint64_t cw0 = clock_of(CLOCK_MONOTONIC), cc0 = CPU_NS();               \
		call;                                                                   \
		uint64_t cc1 = CPU_NS(), cw1 = clock_of(CLOCK_MONOTONIC);               \
		outer_wall[k] += cw1 - cw0;                                             \
		outer_cpu[k] += cc1 - cc0;                                              \
	} while (0)

#define OWN_BEGIN uint64_t own_w0 = clock_of(CLOCK_MONOTONIC), own_c0 = CPU_NS()
#define OWN_END(k)                                                 \
	do {                                                           \
		uint64_t c1 = CPU_NS(), w1 = clock_of(CLOCK_MONOTONIC);    \
		calls[k]++;                                                \
		wall[k] += w1 - own_w0;                                    \
		cpu[k] += c1 - own_c0;                                     \
	} while (0)

static volatile uint64_t sink;

__attribute__((noinline)) void burn(void)
{
	OWN_BEGIN;
	uint64_t end = own_c0 + 4000000;
	while (CPU_NS() < end)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i * 7;
	OWN_END(F_BURN);
}

__attribute__((noinline)) void nap(void)
{
	OWN_BEGIN;
	struct timespec ts = { 0, 3000000 };
	while (nanosleep(&ts, &ts) != 0)
		;
	OWN_END(F_NAP);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int flag;

__attribute__((noinline)) void *signaller(void *arg)
{
	(void)arg;
	struct timespec ts = { 0, 3000000 };
	nanosleep(&ts, NULL);
	pthread_mutex_lock(&mu);
	flag = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	return NULL;
}

__attribute__((noinline)) void await(void)
{
	OWN_BEGIN;
	pthread_mutex_lock(&mu);
	while (!flag)
		pthread_cond_wait(&cv, &mu);
	flag = 0;
	pthread_mutex_unlock(&mu);
	OWN_END(F_AWAIT);
}

__attribute__((noinline)) void drain(int fd)
{
	OWN_BEGIN;
	char b[4];
	size_t got = 0;
	while (got < sizeof b) {
		ssize_t n = read(fd, b + got, sizeof b - got);
		if (n <= 0)
			exit(3);
		got += (size_t)n;
	}
	OWN_END(F_DRAIN);
}

__attribute__((noinline)) void contend(void)
{
	OWN_BEGIN;
	uint64_t end = own_c0 + 4000000;
	while (CPU_NS() < end)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i * 3;
	OWN_END(F_CONTEND);
}

__attribute__((noinline)) void mixed(void)
{
	OWN_BEGIN;
	CALL(F_BURN, burn());
	CALL(F_NAP, nap());
	CALL(F_BURN, burn());
	OWN_END(F_MIXED);
}


/* A child that writes one byte every millisecond, n bytes. */
static pid_t slow_writer(int *rd, int n)
{
	int p[2];
	if (pipe(p))
		exit(2);
	pid_t c = fork();
	if (c == 0) {
		close(p[0]);
		for (int i = 0; i < n; i++) {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
			if (write(p[1], "x", 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(p[1]);
	*rd = p[0];
	return c;
}

/* A process spinning on cpu until killed. */
static pid_t hog(int cpu_no)
{
	pid_t c = fork();
	if (c == 0) {
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(cpu_no, &s);
		sched_setaffinity(0, sizeof s, &s);
		for (;;)
			sink++;
	}
	return c;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 6;
	if (argc > 2 && !strcmp(argv[2], "wait")) {
		char b;
		printf("waiting %d\n", (int)getpid());
		fflush(stdout);
		if (read(0, &b, 1) != 1)
			return 2;
	}
	int here = sched_getcpu();
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(here < 0 ? 0 : here, &s);
	sched_setaffinity(0, sizeof s, &s);
	for (int r = 0; r < rounds; r++) {
		CALL(F_BURN, burn());
		CALL(F_NAP, nap());
		pthread_t th;
		pthread_create(&th, NULL, signaller, NULL);
		CALL(F_AWAIT, await());
		pthread_join(th, NULL);
		int fd;
		pid_t w = slow_writer(&fd, 4);
		CALL(F_DRAIN, drain(fd));
		close(fd);
		waitpid(w, NULL, 0);
		pid_t h = hog(here < 0 ? 0 : here);
		CALL(F_CONTEND, contend());
		kill(h, SIGKILL);
		waitpid(h, NULL, 0);
		CALL(F_MIXED, mixed());
	}
	if (argc > 3 && !strcmp(argv[3], "end")) {
		char b;
		printf("waiting again\n");
		fflush(stdout);
		if (read(0, &b, 1) != 1)
			return 2;
	}
	for (int k = 0; k < F_N; k++)
		fprintf(stderr, "own %s calls %llu wall %llu cpu %llu outer_wall %llu outer_cpu %llu\n", names[k],
		        (unsigned long long)calls[k], (unsigned long long)wall[k], (unsigned long long)cpu[k],
		        (unsigned long long)outer_wall[k], (unsigned long long)outer_cpu[k]);
	printf("cpu_wait done\n");
	return 0;
}

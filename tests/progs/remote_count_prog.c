/* remote_count_prog.c — target of tests/e2e/probe_remote_count.sh (line
 * probes counted inside the target, cross-built for aarch64): it counts,
 * itself, what the probes must find, and prints it.
 *   remote_count_prog N MODE [THREADS]
 * The loop of main runs N times: BODY_LINE once per turn, ODD_LINE for the
 * odd turns, and leaf() is called through a function pointer (FP_LINE: an
 * indirect call, `blr`, which in-target counting does not relocate).
 * MODE: "ret" returns 0 from main; "exit" calls exit(3) from a nested call;
 * "abort" dies of SIGABRT; "kill" dies of SIGKILL (nothing can see that
 * coming); "threads" runs the loop in THREADS threads (the counts summed);
 * "sleep" sleeps 1 ms every 1000 turns (QEMU's user-mode stub sees an
 * interrupt only when the program makes a system call or gets a signal). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "noipa.h"

struct counts { long body, odd, leaf, sum; };

NOIPA int leaf(int x)
{
	TOUCH();                     /* LEAF_LINE */
	return x * 7 + 1;
}

int (*volatile g_fp)(int) = leaf;

static int g_sleep;

static void loop(long n, struct counts *c)
{
	for (long i = 0; i < n; i++) {
		if (g_sleep && i % 1000 == 0)
			usleep(1000);
		c->body++;               /* BODY_LINE */
		if (i & 1)
			c->odd++;            /* ODD_LINE */
		c->sum += g_fp((int)i);  /* FP_LINE */
		c->leaf++;
	}
}

static void print(const struct counts *c)
{
	printf("body %ld odd %ld leaf %ld sum %ld\n", c->body, c->odd, c->leaf, c->sum);
	fflush(stdout);
}

NOIPA void depth2(const struct counts *c)
{
	print(c);
	exit(3);
}

NOIPA void depth1(const struct counts *c)
{
	depth2(c);
	TOUCH();
}

static long per_thread;

static void *worker(void *arg)
{
	loop(per_thread, arg);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	const char *mode = argc > 2 ? argv[2] : "ret";
	struct counts c = { 0, 0, 0, 0 };
	g_sleep = !strcmp(mode, "sleep");
	if (!strcmp(mode, "threads")) {
		int nt = argc > 3 ? atoi(argv[3]) : 4;
		pthread_t t[16];
		struct counts tc[16];
		memset(tc, 0, sizeof tc);
		if (nt < 1 || nt > 16)
			return 1;
		per_thread = n;
		for (int i = 0; i < nt; i++)
			pthread_create(&t[i], NULL, worker, &tc[i]);
		for (int i = 0; i < nt; i++) {
			pthread_join(t[i], NULL);
			c.body += tc[i].body;
			c.odd += tc[i].odd;
			c.leaf += tc[i].leaf;
			c.sum += tc[i].sum;
		}
	} else {
		loop(n, &c);
	}
	if (!strcmp(mode, "exit"))
		depth1(&c);
	print(&c);
	if (!strcmp(mode, "abort"))
		abort();
	if (!strcmp(mode, "kill"))
		raise(SIGKILL);
	return 0;
}

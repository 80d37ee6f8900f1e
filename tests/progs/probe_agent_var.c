/* probe_agent_var.c — target of the agent's var probe tests
 * (tests/e2e/probe_agent_var.sh):  probe_agent_var NTHREADS ITERS [GOFILE]
 * every thread t calls step(x, t) with x = (i * 7919) % 100003 - 50000 + t for
 * i in [0, ITERS); step keeps x * 2 in a volatile local (memory) and reads
 * the global scale; twice(x); then peek(&v) (v = x), with NULL one call in four.  With GOFILE, prints "ready PID" and waits until GOFILE
 * exists before the threads start.  Prints its own statistics of what the
 * probes see ("x count N min A max B sum S", the same for mem, scale and
 * deref (*p where p is not NULL), "nulls N"),
 * and exits 3. */
#include "noipa.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

long scale = 3;
static int iters;

NOIPA long step(long x, int t)
{
	TOUCH();
	long gone = x * x; /* no use: optimized out */
	(void)gone;
	volatile long mem = x * 2;
	long r = mem + scale; /* MARK_MEM */
	return r + t; /* MARK_OPT */
}

/* p is NULL one call in four: *p cannot be read there. */
NOIPA long peek(const long *p)
{
	TOUCH();
	return p ? *p : 0;
}

/* Two short instructions (lea, ret): a probe at the ret lies inside the
 * jump of a probe at the entry, which then becomes an int3. */
NOIPA long twice(long v)
{
	return v + v;
}

struct acc { long n, min, max; long long sum; };

static void add(struct acc *a, long v)
{
	if (!a->n || v < a->min) a->min = v;
	if (!a->n || v > a->max) a->max = v;
	a->sum += v;
	a->n++;
}

struct th { int t; long total, nulls; struct acc x, mem, scale, deref; };

static void *run(void *arg)
{
	struct th *h = arg;
	for (int i = 0; i < iters; i++) {
		long x = (long)(((long long)i * 7919) % 100003) - 50000 + h->t;
		add(&h->x, x);
		add(&h->mem, x * 2);
		add(&h->scale, scale);
		h->total += step(x, h->t);
		h->total += twice(x);
		long v = x;
		if (i % 4)
			add(&h->deref, v);
		else
			h->nulls++;
		h->total += peek(i % 4 ? &v : NULL);
	}
	return NULL;
}

static void merge(struct acc *to, const struct acc *a)
{
	if (!a->n)
		return;
	if (!to->n || a->min < to->min) to->min = a->min;
	if (!to->n || a->max > to->max) to->max = a->max;
	to->sum += a->sum;
	to->n += a->n;
}

static void say(const char *name, const struct acc *a)
{
	printf("%s count %ld min %ld max %ld sum %lld\n", name, a->n, a->min, a->max, a->sum);
}

int main(int argc, char **argv)
{
	int nt = argc > 1 ? atoi(argv[1]) : 4;
	iters = argc > 2 ? atoi(argv[2]) : 1000;
	if (nt < 1 || nt > 64 || iters < 0)
		return 2;
	if (argc > 3) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		while (access(argv[3], F_OK))
			usleep(2000);
	}
	pthread_t tid[64];
	static struct th th[64];
	for (int i = 0; i < nt; i++) {
		th[i].t = i;
		pthread_create(&tid[i], NULL, run, &th[i]);
	}
	struct acc x = { 0 }, mem = { 0 }, sc = { 0 }, deref = { 0 };
	long total = 0, nulls = 0;
	for (int i = 0; i < nt; i++) {
		pthread_join(tid[i], NULL);
		merge(&x, &th[i].x);
		merge(&mem, &th[i].mem);
		merge(&sc, &th[i].scale);
		merge(&deref, &th[i].deref);
		nulls += th[i].nulls;
		total += th[i].total;
	}
	say("x", &x);
	say("mem", &mem);
	say("scale", &sc);
	say("deref", &deref);
	printf("nulls %ld\n", nulls);
	printf("total %ld\n", total);
	return 3;
}
